-- SPDX-License-Identifier: Apache-2.0
-- Schema version 11: every write that ends or retries a delivery can name it. A delivery is a
-- message's msg_id with the read_ct its read answered (each read raises read_ct by one in the
-- read's own transaction). queue_ack has always taken it; queue_archive now does too (a retried
-- archive is done again, an archive of a read the message has had since is refused), and nack,
-- ack and archive refuse a later delivery in the same words (ID006) and a read the message has
-- not had (ID004).

-- Raises the refusal of `p_action` of read `p_read_ct` of message `p_msg_id`, which is at read
-- `p_current` now: ID006 when it was read again since, ID004 when it has not been read that often.
CREATE FUNCTION idempo.refuse_read(p_queue text, p_msg_id bigint, p_read_ct integer, p_current integer, p_action text)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_current > p_read_ct THEN
        PERFORM idempo.raise('ID006', 'message ' || p_msg_id || ' of queue ''' || p_queue || ''' was read again (read '
                                      || p_current || ') after read ' || p_read_ct
                                      || ': its visibility timeout lapsed and another consumer has it; the ' || p_action
                                      || ' is refused');
    END IF;
    PERFORM idempo.raise('ID004', 'message ' || p_msg_id || ' of queue ''' || p_queue || ''' has not been read '
                                  || p_read_ct || ' times (read_ct ' || p_current || ')');
END
$$;

-- Raises ID004 unless `p_read_ct` is NULL (any read) or names a read (1 or more).
CREATE FUNCTION idempo.check_read_ct(p_read_ct integer, p_required boolean) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF (p_read_ct IS NULL AND p_required) OR p_read_ct < 1 THEN
        PERFORM idempo.raise('ID004', 'p_read_ct (the read_ct the read answered, 1 or more) must be given, not '
                                      || coalesce(p_read_ct::text, 'NULL'));
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION idempo.acknowledge(p_queue text, p_msg_id bigint, p_read_ct integer, p_now_ms bigint) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    current_read integer;
BEGIN
    IF p_msg_id IS NULL THEN
        PERFORM idempo.raise('ID004', 'p_msg_id must not be NULL');
    END IF;
    PERFORM idempo.check_read_ct(p_read_ct, true);
    EXECUTE format('DELETE FROM pgmq.%I AS m WHERE m.msg_id = $1 AND m.read_ct = $2 RETURNING m.read_ct', 'q_' || p_queue)
        INTO current_read USING p_msg_id, p_read_ct;
    IF current_read IS NOT NULL THEN
        INSERT INTO idempo.queue_acks (queue_name, msg_id, read_ct, acked_at_ms) VALUES (p_queue, p_msg_id, p_read_ct, p_now_ms)
        ON CONFLICT (queue_name, msg_id) DO UPDATE SET read_ct = excluded.read_ct, acked_at_ms = excluded.acked_at_ms;
        DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = p_queue AND e.msg_id = p_msg_id;
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

-- Moves a message to the archive a_<name>, stamped with archived_at. Without `p_read_ct` as
-- pgmq's archive: false when the queue holds none. With it, only that delivery: true when moved
-- now or by this same read before (the archive holds it under that read_ct: a retried archive);
-- ID006 when the message was read again since, ID005 when neither the queue nor its archive
-- holds it.
DROP FUNCTION idempo.queue_archive(text, bigint, bigint, bigint);
CREATE FUNCTION idempo.queue_archive(p_queue text, p_msg_id bigint, p_read_ct integer DEFAULT NULL,
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

REVOKE ALL ON FUNCTION idempo.refuse_read(text, bigint, integer, integer, text), idempo.check_read_ct(integer, boolean),
    idempo.queue_archive(text, bigint, integer, bigint, bigint) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'idempo_worker') THEN
        GRANT EXECUTE ON FUNCTION idempo.queue_archive(text, bigint, integer, bigint, bigint) TO idempo_worker;
    END IF;
END
$$;
