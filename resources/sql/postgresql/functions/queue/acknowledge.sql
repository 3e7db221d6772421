-- SPDX-License-Identifier: Apache-2.0

-- Acknowledges read `p_read_ct` of message `p_msg_id`: deletes it and keeps a receipt.
-- 'done' when deleted now or by this same read before (a retried ack); raises ID006 when the
-- message was read again since (its visibility timeout lapsed: another consumer has it), ID005
-- when the queue never held it under that read.
-- The read_ct check is inline, and the receipt and the error's removal are one statement.
CREATE OR REPLACE FUNCTION idempo.acknowledge(p_queue text, p_msg_id bigint, p_read_ct integer, p_now_ms bigint)
    RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    current_read integer;
BEGIN
    IF p_msg_id IS NULL THEN
        PERFORM idempo.raise('ID004', 'p_msg_id must not be NULL');
    END IF;
    IF p_read_ct IS NULL OR p_read_ct < 1 THEN
        PERFORM idempo.check_read_ct(p_read_ct, true);
    END IF;
    EXECUTE format('DELETE FROM pgmq.%I AS m WHERE m.msg_id = $1 AND m.read_ct = $2 RETURNING m.read_ct', 'q_' || p_queue)
        INTO current_read USING p_msg_id, p_read_ct;
    IF current_read IS NOT NULL THEN
        WITH cleared AS (DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = p_queue AND e.msg_id = p_msg_id)
        INSERT INTO idempo.queue_acks (queue_name, msg_id, read_ct, acked_at_ms) VALUES (p_queue, p_msg_id, p_read_ct, p_now_ms)
        ON CONFLICT (queue_name, msg_id) DO UPDATE SET read_ct = excluded.read_ct, acked_at_ms = excluded.acked_at_ms;
        RETURN 'done';
    END IF;
    EXECUTE format('SELECT m.read_ct FROM pgmq.%I AS m WHERE m.msg_id = $1', 'q_' || p_queue) INTO current_read USING p_msg_id;
    IF current_read IS NULL THEN
        SELECT a.read_ct INTO current_read FROM idempo.queue_acks AS a WHERE a.queue_name = p_queue AND a.msg_id = p_msg_id;
        IF current_read = p_read_ct THEN
            RETURN 'done';
        ELSIF current_read IS NULL THEN
            PERFORM idempo.raise('ID005', 'queue ''' || p_queue || ''' holds no message ' || p_msg_id);
        END IF;
    END IF;
    PERFORM idempo.refuse_read(p_queue, p_msg_id, p_read_ct, current_read, 'ack');
    RETURN NULL;
END
$$;

SELECT idempo.grant_execute('idempo.acknowledge(text,bigint,integer,bigint)');
