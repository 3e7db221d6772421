-- SPDX-License-Identifier: Apache-2.0

-- Moves a message to the archive a_<name>, stamped with archived_at. Without `p_read_ct` as
-- pgmq's archive: false when the queue holds none. With it, only that delivery: true when moved
-- now or by this same read before (the archive holds it under that read_ct: a retried archive);
-- ID006 when the message was read again since, ID005 when neither the queue nor its archive
-- holds it.
CREATE OR REPLACE FUNCTION idempo.queue_archive(p_queue text, p_msg_id bigint, p_read_ct integer DEFAULT NULL,
                                     p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    moved bigint;
    current_read integer;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    PERFORM idempo.check_read_ct(p_read_ct, false);
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    EXECUTE format('WITH gone AS (DELETE FROM pgmq.%I WHERE msg_id = $1 AND ($3::integer IS NULL OR read_ct = $3) '
                   '  RETURNING msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers) '
                   'INSERT INTO pgmq.%I (msg_id, read_ct, enqueued_at, last_read_at, archived_at, vt, message, headers) '
                   'SELECT g.msg_id, g.read_ct, g.enqueued_at, g.last_read_at, $2, g.vt, g.message, g.headers FROM gone AS g '
                   'RETURNING msg_id', 'q_' || p_queue, 'a_' || p_queue)
        INTO moved USING p_msg_id, idempo.ms_at(now_ms), p_read_ct;
    IF moved IS NOT NULL THEN
        DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = p_queue AND e.msg_id = p_msg_id;
        RETURN true;
    END IF;
    IF p_read_ct IS NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT read_ct FROM pgmq.%I WHERE msg_id = $1', 'q_' || p_queue) INTO current_read USING p_msg_id;
    IF current_read IS NULL THEN
        EXECUTE format('SELECT read_ct FROM pgmq.%I WHERE msg_id = $1', 'a_' || p_queue) INTO current_read USING p_msg_id;
        IF current_read = p_read_ct THEN
            RETURN true;
        ELSIF current_read IS NULL THEN
            PERFORM idempo.raise('ID005', 'queue ''' || p_queue || ''' holds no message ' || p_msg_id);
        END IF;
    END IF;
    PERFORM idempo.refuse_read(p_queue, p_msg_id, p_read_ct, current_read, 'archive');
    RETURN NULL;
END
$$;

SELECT idempo.grant_execute('idempo.queue_archive(text,bigint,integer,bigint,bigint)', 'idempo_worker');
