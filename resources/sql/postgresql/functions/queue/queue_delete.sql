-- SPDX-License-Identifier: Apache-2.0

-- Deletes a message whatever read it is in (pgmq's delete); false when the queue holds none.
CREATE OR REPLACE FUNCTION idempo.queue_delete(p_queue text, p_msg_id bigint) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    gone bigint;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    EXECUTE format('DELETE FROM pgmq.%I WHERE msg_id = $1 RETURNING msg_id', 'q_' || p_queue) INTO gone USING p_msg_id;
    DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = p_queue AND e.msg_id = p_msg_id;
    RETURN gone IS NOT NULL;
END
$$;

SELECT idempo.grant_execute('idempo.queue_delete(text,bigint)', 'idempo_worker');
