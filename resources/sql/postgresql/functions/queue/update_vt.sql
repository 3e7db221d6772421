-- SPDX-License-Identifier: Apache-2.0

-- Sets a message's vt; raises ID005 when the queue holds no such message, and with `p_read_ct`
-- refuses a read that is not the message's latest (idempo.refuse_read, as a nack).
CREATE OR REPLACE FUNCTION idempo.update_vt(p_queue text, p_msg_id bigint, p_vt_ms bigint, p_read_ct integer)
    RETURNS idempo.queue_message LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m record;
BEGIN
    PERFORM idempo.check_read_ct(p_read_ct, false);
    EXECUTE format('UPDATE pgmq.%I AS m SET vt = $2 WHERE m.msg_id = $1 AND ($3::integer IS NULL OR m.read_ct = $3) '
                   'RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.last_read_at, m.vt, m.message, m.headers', 'q_' || p_queue)
        INTO m USING p_msg_id, idempo.ms_at(p_vt_ms), p_read_ct;
    IF m.msg_id IS NULL THEN
        EXECUTE format('SELECT read_ct FROM pgmq.%I WHERE msg_id = $1', 'q_' || p_queue) INTO m USING p_msg_id;
        IF m.read_ct IS NOT NULL THEN
            PERFORM idempo.refuse_read(p_queue, p_msg_id, p_read_ct, m.read_ct, 'nack');
        END IF;
        PERFORM idempo.raise('ID005', 'queue ''' || p_queue || ''' holds no message ' || p_msg_id);
    END IF;
    RETURN ROW(m.msg_id, m.read_ct, floor(extract(epoch FROM m.enqueued_at) * 1000)::bigint,
               floor(extract(epoch FROM m.last_read_at) * 1000)::bigint, floor(extract(epoch FROM m.vt) * 1000)::bigint,
               m.message, m.headers)::idempo.queue_message;
END
$$;

SELECT idempo.grant_execute('idempo.update_vt(text,bigint,bigint,integer)');
