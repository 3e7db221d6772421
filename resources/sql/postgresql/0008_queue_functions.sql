-- SPDX-License-Identifier: Apache-2.0
-- Schema version 8: the queues' writes as functions (docs/sql-api.md): create, send, read (which
-- dead-letters in its own transaction), ack, delete, nack, archive, set_vt, the replay of a dead
-- letter, and the outbox (transition_and_send). The tables stay pgmq's (pgmq.q_<name>,
-- pgmq.a_<name>); their names come only from a queue name checked against ^[a-z][a-z0-9_]*$
-- and the registry, and are quoted with %I. Times are milliseconds in the API, timestamptz in
-- the tables.

-- A message as the functions answer it (messagequeue.h QueueMessage).
CREATE TYPE idempo.queue_message AS (
    msg_id bigint, read_ct integer, enqueued_at_ms bigint, last_read_at_ms bigint, vt_ms bigint,
    message jsonb, headers jsonb);

-- Acknowledged reads, so that an ack repeated after a lost answer is told `done` and a stale one
-- is told apart. Kept a day (idempo.purge_expired removes older ones).
CREATE TABLE idempo.queue_acks (
    queue_name text COLLATE "C" NOT NULL,
    msg_id bigint NOT NULL,
    read_ct integer NOT NULL,
    acked_at_ms bigint NOT NULL,
    PRIMARY KEY (queue_name, msg_id)
);

CREATE FUNCTION idempo.ms_at(p_ms bigint) RETURNS timestamptz LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN timestamptz 'epoch' + p_ms * interval '1 millisecond';

-- The registry row of `p_queue`, after checking its name; raises ID004 for a bad name, ID005
-- for an unknown queue.
CREATE FUNCTION idempo.queue_info(p_queue text) RETURNS idempo.queue_registry
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[a-z][a-z0-9_]{0,46}$' THEN
        PERFORM idempo.raise('ID004', 'p_queue must be 1..47 characters of lowercase letters, digits and ''_'' starting with '
                                      'a letter, not ' || coalesce(to_json(left(p_queue, 80))::text, 'NULL'));
    END IF;
    SELECT * INTO info FROM idempo.queue_registry AS r WHERE r.queue_name = p_queue;
    IF NOT FOUND THEN
        PERFORM idempo.raise('ID005', 'no queue ''' || p_queue || '''');
    END IF;
    RETURN info;
END
$$;

-- Raises ID002 / ID003 unless `p_message` is JSON and `p_headers` NULL, '' or a JSON object.
CREATE FUNCTION idempo.check_message(p_message text, p_headers text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.check_json(p_message, 'p_message', 1048576);
    IF coalesce(p_headers, '') <> '' THEN
        PERFORM idempo.check_json(p_headers, 'p_headers', 1048576);
        IF jsonb_typeof(p_headers::jsonb) <> 'object' THEN
            PERFORM idempo.raise('ID002', 'p_headers must be a JSON object');
        END IF;
    END IF;
END
$$;

-- Inserts a message into queue `p_queue` (known to exist) at `p_now_ms`; returns its msg_id.
CREATE FUNCTION idempo.enqueue(p_queue text, p_message jsonb, p_headers jsonb, p_vt_ms bigint, p_now_ms bigint)
    RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    id bigint;
BEGIN
    EXECUTE format('INSERT INTO pgmq.%I (enqueued_at, vt, message, headers) VALUES ($1, $2, $3, $4) RETURNING msg_id',
                   'q_' || p_queue)
        INTO id USING idempo.ms_at(p_now_ms), idempo.ms_at(p_vt_ms), p_message, p_headers;
    RETURN id;
END
$$;

-- Creates queue `p_queue` and its dead-letter queue `<name>_dlq` in pgmq's layout (adopting
-- tables pgmq made), registers both and grants the roles SELECT on them; an existing queue with
-- the same max reads is returned as it is. The owner's work (it is DDL): granted to no role.
CREATE FUNCTION idempo.queue_create(p_queue text, p_max_reads integer DEFAULT 5, p_clock_pinned_ms bigint DEFAULT NULL,
                                    p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_registry LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    SET client_min_messages = warning AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
    dlq text := p_queue || '_dlq';
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    name text;
    r text;
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[a-z][a-z0-9_]{0,42}$' OR p_queue ~ '_dlq$' THEN
        PERFORM idempo.raise('ID004', 'p_queue must be 1..43 characters of lowercase letters, digits and ''_'', start with a '
                                      'letter and not end in _dlq, not ' || coalesce(to_json(left(p_queue, 80))::text, 'NULL'));
    END IF;
    IF p_max_reads IS NULL OR p_max_reads < 1 THEN
        PERFORM idempo.raise('ID004', 'max reads must be at least 1, not ' || coalesce(p_max_reads::text, 'NULL'));
    END IF;
    -- pgmq.create() takes the same per-name locks, so Idempo and pgmq never create one queue twice.
    PERFORM pg_advisory_xact_lock(29670604302066033), pg_advisory_xact_lock(hashtext('pgmq.queue_' || p_queue)),
            pg_advisory_xact_lock(hashtext('pgmq.queue_' || dlq));
    SELECT * INTO info FROM idempo.queue_registry AS q WHERE q.queue_name = p_queue;
    IF FOUND THEN
        IF info.max_reads IS DISTINCT FROM p_max_reads THEN
            PERFORM idempo.raise('ID004', 'queue ''' || p_queue || ''' already exists with max reads '
                                          || coalesce(info.max_reads, 0) || ', not ' || p_max_reads);
        END IF;
        RETURN info;
    END IF;
    CREATE SCHEMA IF NOT EXISTS pgmq;
    FOREACH name IN ARRAY ARRAY[p_queue, dlq] LOOP
        EXECUTE format('CREATE TABLE IF NOT EXISTS pgmq.%I (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, '
                       'read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), '
                       'last_read_at timestamptz, vt timestamptz NOT NULL, message jsonb, headers jsonb)', 'q_' || name);
        EXECUTE format('ALTER TABLE pgmq.%I ADD COLUMN IF NOT EXISTS last_read_at timestamptz, '
                       'ADD COLUMN IF NOT EXISTS headers jsonb', 'q_' || name);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (vt ASC)', 'q_' || name || '_vt_idx', 'q_' || name);
        EXECUTE format('CREATE TABLE IF NOT EXISTS pgmq.%I (msg_id bigint PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0, '
                       'enqueued_at timestamptz NOT NULL DEFAULT now(), last_read_at timestamptz, '
                       'archived_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, '
                       'headers jsonb)', 'a_' || name);
        EXECUTE format('ALTER TABLE pgmq.%I ADD COLUMN IF NOT EXISTS last_read_at timestamptz, '
                       'ADD COLUMN IF NOT EXISTS headers jsonb', 'a_' || name);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (archived_at)', 'archived_at_idx_' || name, 'a_' || name);
        EXECUTE format('REVOKE ALL ON pgmq.%I, pgmq.%I FROM PUBLIC', 'q_' || name, 'a_' || name);
        FOR r IN SELECT rolname FROM pg_roles
                 WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
            EXECUTE format('GRANT USAGE ON SCHEMA pgmq TO %I', r);
            EXECUTE format('REVOKE ALL ON pgmq.%I, pgmq.%I FROM %I', 'q_' || name, 'a_' || name, r);
            EXECUTE format('GRANT SELECT ON pgmq.%I, pgmq.%I TO %I', 'q_' || name, 'a_' || name, r);
            EXECUTE format('GRANT SELECT ON SEQUENCE %s TO %I', pg_get_serial_sequence(format('pgmq.%I', 'q_' || name), 'msg_id'), r);
        END LOOP;
    END LOOP;
    INSERT INTO idempo.queue_registry (queue_name, max_reads, dead_letter_queue, created_at_ms)
    VALUES (dlq, NULL, NULL, now_ms), (p_queue, p_max_reads, dlq, now_ms);
    SELECT * INTO info FROM idempo.queue_registry AS q WHERE q.queue_name = p_queue;
    RETURN info;
END
$$;

-- Enqueues `p_message` with optional `p_headers` (a JSON object), readable after `p_delay_ms`.
CREATE FUNCTION idempo.queue_send(p_queue text, p_message text, p_headers text DEFAULT NULL, p_delay_ms bigint DEFAULT 0,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    PERFORM idempo.check_message(p_message, p_headers);
    IF p_delay_ms IS NULL OR p_delay_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_delay_ms must not be negative');
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    RETURN idempo.enqueue(p_queue, p_message::jsonb, nullif(p_headers, '')::jsonb, now_ms + p_delay_ms, now_ms);
END
$$;

-- Delivers up to `p_quantity` visible messages, oldest first, each hidden for `p_vt_ms`: read_ct
-- grows by one and last_read_at becomes now. Two readers never get one message inside its
-- timeout (FOR UPDATE SKIP LOCKED). A message whose read_ct would pass the queue's max reads is
-- moved to the dead-letter queue in this same transaction, with its provenance and last error in
-- the copy's headers (queuerules.h), and the read goes on for the slots it freed. `p_ack`, a
-- JSON array of [msg_id, read_ct] pairs, acknowledges earlier reads first, in the same
-- transaction (as idempo.queue_ack): a consumer's "done with these, give me the next".
CREATE FUNCTION idempo.queue_read(p_queue text, p_vt_ms bigint, p_quantity integer DEFAULT 1, p_ack text DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS SETOF idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE := idempo.queue_info(p_queue);
    now_ms bigint;
    after bigint := 0;
    missing integer := p_quantity;
    asked integer;
    candidates integer;
    exhausted bigint[];
    m record;
    pair jsonb;
BEGIN
    IF p_vt_ms IS NULL OR p_vt_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_vt_ms (the visibility timeout) must not be negative');
    END IF;
    IF p_quantity IS NULL OR p_quantity NOT BETWEEN 1 AND 10000 THEN
        PERFORM idempo.raise('ID004', 'p_quantity must be 1..10000, not ' || coalesce(p_quantity::text, 'NULL'));
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    IF p_ack IS NOT NULL THEN
        IF NOT idempo.is_json(p_ack) OR jsonb_typeof(p_ack::jsonb) <> 'array' THEN
            PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs');
        END IF;
        FOR pair IN SELECT e.v FROM jsonb_array_elements(p_ack::jsonb) AS e (v) LOOP
            IF jsonb_typeof(pair) <> 'array' OR jsonb_array_length(pair) <> 2 OR jsonb_typeof(pair -> 0) <> 'number'
               OR jsonb_typeof(pair -> 1) <> 'number' THEN
                PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs, not ' || pair::text);
            END IF;
            PERFORM idempo.acknowledge(p_queue, (pair ->> 0)::bigint, (pair ->> 1)::integer, now_ms);
        END LOOP;
    END IF;
    LOOP
        exhausted := '{}';
        candidates := 0;
        asked := missing;
        FOR m IN EXECUTE format(
            'WITH candidates AS MATERIALIZED ('
            '  SELECT q.msg_id, q.read_ct FROM pgmq.%1$I AS q WHERE q.vt <= $1 AND q.msg_id > $2'
            '  ORDER BY q.msg_id LIMIT $3 FOR UPDATE SKIP LOCKED), '
            'delivered AS ('
            '  UPDATE pgmq.%1$I AS m SET vt = $4, read_ct = m.read_ct + 1, last_read_at = $1'
            '  WHERE m.msg_id = ANY (ARRAY(SELECT c.msg_id FROM candidates AS c WHERE $5::integer IS NULL OR c.read_ct < $5))'
            '  RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.last_read_at, m.vt, m.message, m.headers) '
            'SELECT true AS delivered, d.* FROM delivered AS d '
            'UNION ALL SELECT false, c.msg_id, c.read_ct, NULL, NULL, NULL, NULL, NULL FROM candidates AS c '
            '  WHERE c.read_ct >= $5 '
            'ORDER BY 2', 'q_' || p_queue)
            USING idempo.ms_at(now_ms), after, asked, idempo.ms_at(now_ms + p_vt_ms), info.max_reads
        LOOP
            candidates := candidates + 1;
            after := greatest(after, m.msg_id);
            IF m.delivered THEN
                missing := missing - 1;
                RETURN NEXT ROW(m.msg_id, m.read_ct, floor(extract(epoch FROM m.enqueued_at) * 1000)::bigint,
                                floor(extract(epoch FROM m.last_read_at) * 1000)::bigint,
                                floor(extract(epoch FROM m.vt) * 1000)::bigint, m.message, m.headers)::idempo.queue_message;
            ELSE
                exhausted := exhausted || m.msg_id;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(exhausted) = 0;
        PERFORM idempo.dead_letter(p_queue, info.dead_letter_queue, exhausted, now_ms);
        -- A round that found fewer candidates than it asked for has seen every visible message.
        EXIT WHEN missing = 0 OR candidates < asked;
    END LOOP;
END
$$;

-- Moves messages `p_ids` of `p_queue` (locked by the caller's read) to `p_dlq`.
CREATE FUNCTION idempo.dead_letter(p_queue text, p_dlq text, p_ids bigint[], p_now_ms bigint) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m record;
BEGIN
    FOR m IN EXECUTE format('WITH moved AS (DELETE FROM pgmq.%I AS m WHERE m.msg_id = ANY ($1) '
                            '  RETURNING m.msg_id, m.read_ct, m.message, m.headers) '
                            'SELECT * FROM moved ORDER BY msg_id', 'q_' || p_queue) USING p_ids
    LOOP
        PERFORM idempo.enqueue(p_dlq, m.message,
            CASE WHEN m.headers IS NULL THEN '{}'::jsonb WHEN jsonb_typeof(m.headers) = 'object' THEN m.headers
                 ELSE jsonb_build_object('original_headers', m.headers) END
            || jsonb_build_object('dlq', (SELECT jsonb_build_object(
                   'source_queue', p_queue, 'source_msg_id', m.msg_id, 'read_ct', m.read_ct,
                   'last_error_class', e.error_class, 'last_error_detail', e.error_detail, 'dead_lettered_at', p_now_ms)
                FROM (VALUES (1)) AS one (v)
                LEFT JOIN idempo.queue_errors AS e ON e.queue_name = p_queue AND e.msg_id = m.msg_id)),
            p_now_ms, p_now_ms);
        DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = p_queue AND e.msg_id = m.msg_id;
    END LOOP;
    RAISE WARNING 'queue %: % message(s) moved to % after their last read (msg_id % … %)', p_queue, cardinality(p_ids),
        p_dlq, p_ids[1], p_ids[cardinality(p_ids)];
END
$$;

-- Acknowledges read `p_read_ct` of message `p_msg_id`: deletes it and keeps a receipt.
-- 'done' when deleted now or by this same read before (a retried ack); raises ID006 when the
-- message was read again since (its visibility timeout lapsed: another consumer has it), ID005
-- when the queue never held it under that read.
CREATE FUNCTION idempo.acknowledge(p_queue text, p_msg_id bigint, p_read_ct integer, p_now_ms bigint) RETURNS text
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    current_read integer;
BEGIN
    IF p_msg_id IS NULL OR p_read_ct IS NULL OR p_read_ct < 1 THEN
        PERFORM idempo.raise('ID004', 'p_msg_id and p_read_ct (the read_ct the read answered, 1 or more) must be given');
    END IF;
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
    IF current_read > p_read_ct THEN
        PERFORM idempo.raise('ID006', 'message ' || p_msg_id || ' of queue ''' || p_queue || ''' was read again (read '
                                      || current_read || ') after read ' || p_read_ct
                                      || ': its visibility timeout lapsed and another consumer has it; the ack is refused');
    END IF;
    PERFORM idempo.raise('ID004', 'message ' || p_msg_id || ' of queue ''' || p_queue || ''' has not been read '
                                  || p_read_ct || ' times (read_ct ' || current_read || ')');
    RETURN NULL;
END
$$;

CREATE FUNCTION idempo.queue_ack(p_queue text, p_msg_id bigint, p_read_ct integer, p_clock_pinned_ms bigint DEFAULT NULL,
                                 p_clock_offset_ms bigint DEFAULT 0)
    RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.queue_info(p_queue);
    RETURN idempo.acknowledge(p_queue, p_msg_id, p_read_ct, idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms));
END
$$;

-- Deletes a message whatever read it is in (pgmq's delete); false when the queue holds none.
CREATE FUNCTION idempo.queue_delete(p_queue text, p_msg_id bigint) RETURNS boolean
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

-- Moves a message to the archive a_<name>, stamped with archived_at; false when there is none.
CREATE FUNCTION idempo.queue_archive(p_queue text, p_msg_id bigint, p_clock_pinned_ms bigint DEFAULT NULL,
                                     p_clock_offset_ms bigint DEFAULT 0)
    RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    moved bigint;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    EXECUTE format('WITH gone AS (DELETE FROM pgmq.%I WHERE msg_id = $1 '
                   '  RETURNING msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers) '
                   'INSERT INTO pgmq.%I (msg_id, read_ct, enqueued_at, last_read_at, archived_at, vt, message, headers) '
                   'SELECT g.msg_id, g.read_ct, g.enqueued_at, g.last_read_at, $2, g.vt, g.message, g.headers FROM gone AS g '
                   'RETURNING msg_id', 'q_' || p_queue, 'a_' || p_queue)
        INTO moved USING p_msg_id, idempo.ms_at(now_ms);
    DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = p_queue AND e.msg_id = p_msg_id;
    RETURN moved IS NOT NULL;
END
$$;

-- A failed processing attempt: keeps the error as the message's last (carried into the
-- dead-letter queue) and makes it visible again after `p_retry_delay_ms`. With `p_read_ct`, a
-- nack of a read that is no longer the message's latest is refused (ID006).
CREATE FUNCTION idempo.queue_nack(p_queue text, p_msg_id bigint, p_error_class text, p_error_detail text DEFAULT '',
                                  p_retry_delay_ms bigint DEFAULT 0, p_read_ct integer DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    m idempo.queue_message;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_error_class IS NULL OR NOT idempo.is_error_class(p_error_class) THEN
        PERFORM idempo.raise('ID004', 'p_error_class ' || coalesce(to_json(p_error_class)::text, 'NULL') || ' is not an error class');
    END IF;
    IF p_retry_delay_ms IS NULL OR p_retry_delay_ms < 0 OR octet_length(p_error_detail) > 65536 THEN
        PERFORM idempo.raise('ID004', 'p_retry_delay_ms must not be negative and p_error_detail hold at most 65536 bytes');
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    m := idempo.update_vt(p_queue, p_msg_id, now_ms + p_retry_delay_ms, p_read_ct);
    INSERT INTO idempo.queue_errors (queue_name, msg_id, error_class, error_detail, recorded_at_ms)
    VALUES (p_queue, p_msg_id, p_error_class, coalesce(p_error_detail, ''), now_ms)
    ON CONFLICT (queue_name, msg_id) DO UPDATE
        SET error_class = excluded.error_class, error_detail = excluded.error_detail, recorded_at_ms = excluded.recorded_at_ms;
    RETURN m;
END
$$;

-- Sets a message's vt; raises ID005 when the queue holds no such message, ID006 when
-- `p_read_ct` is given and the message has been read again since.
CREATE FUNCTION idempo.update_vt(p_queue text, p_msg_id bigint, p_vt_ms bigint, p_read_ct integer)
    RETURNS idempo.queue_message LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m record;
BEGIN
    EXECUTE format('UPDATE pgmq.%I AS m SET vt = $2 WHERE m.msg_id = $1 AND ($3::integer IS NULL OR m.read_ct = $3) '
                   'RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.last_read_at, m.vt, m.message, m.headers', 'q_' || p_queue)
        INTO m USING p_msg_id, idempo.ms_at(p_vt_ms), p_read_ct;
    IF m.msg_id IS NULL THEN
        EXECUTE format('SELECT read_ct FROM pgmq.%I WHERE msg_id = $1', 'q_' || p_queue) INTO m USING p_msg_id;
        IF m.read_ct IS NOT NULL THEN
            PERFORM idempo.raise('ID006', 'message ' || p_msg_id || ' of queue ''' || p_queue || ''' was read again (read '
                                          || m.read_ct || ') after read ' || p_read_ct);
        END IF;
        PERFORM idempo.raise('ID005', 'queue ''' || p_queue || ''' holds no message ' || p_msg_id);
    END IF;
    RETURN ROW(m.msg_id, m.read_ct, floor(extract(epoch FROM m.enqueued_at) * 1000)::bigint,
               floor(extract(epoch FROM m.last_read_at) * 1000)::bigint, floor(extract(epoch FROM m.vt) * 1000)::bigint,
               m.message, m.headers)::idempo.queue_message;
END
$$;

-- Makes a message visible `p_vt_offset_ms` from now, whatever its vt was.
CREATE FUNCTION idempo.queue_set_vt(p_queue text, p_msg_id bigint, p_vt_offset_ms bigint,
                                    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_vt_offset_ms IS NULL OR p_vt_offset_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_vt_offset_ms must not be negative');
    END IF;
    RETURN idempo.update_vt(p_queue, p_msg_id, idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms) + p_vt_offset_ms, NULL);
END
$$;

-- A DLQ replay's requeue (idempo.dlq_replay_begin): dead letter `p_msg_id` of `<p_queue>_dlq`
-- is archived there and its body sent to `p_queue` with `p_headers`, in one transaction; NULL
-- when the dead-letter queue no longer holds it (another replay took it). A login that is not
-- the owner requeues only the dead letters of an open replay it began itself.
CREATE FUNCTION idempo.queue_requeue_dead_letter(p_queue text, p_msg_id bigint, p_headers text, p_replay_id text,
                                                 p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE := idempo.queue_info(p_queue);
    now_ms bigint;
    body jsonb;
    taken integer;
BEGIN
    IF info.dead_letter_queue IS NULL THEN
        PERFORM idempo.raise('ID004', '''' || p_queue || ''' is a dead-letter queue: replay to its source queue');
    END IF;
    PERFORM idempo.check_message('null', p_headers);
    IF NOT idempo.is_owner() AND NOT EXISTS (
            SELECT FROM idempo.dlq_replays AS r
            WHERE r.replay_id = p_replay_id AND r.queue_name = p_queue AND r.login = session_user
              AND r.finished_seq IS NULL AND p_msg_id = ANY (r.msg_ids)) THEN
        RAISE EXCEPTION 'dead letter % of queue % is in no open replay of login % (idempo.dlq_replay_begin)',
            p_msg_id, p_queue, session_user USING ERRCODE = '42501';
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    -- The DELETE takes the row: a concurrent replay of the same dead letter waits, then finds it gone.
    EXECUTE format('WITH gone AS (DELETE FROM pgmq.%I WHERE msg_id = $1 '
                   '  RETURNING msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers), '
                   'archived AS (INSERT INTO pgmq.%I (msg_id, read_ct, enqueued_at, last_read_at, archived_at, vt, message, headers) '
                   '  SELECT g.msg_id, g.read_ct, g.enqueued_at, g.last_read_at, $2, g.vt, g.message, g.headers FROM gone AS g) '
                   'SELECT message FROM gone', 'q_' || info.dead_letter_queue, 'a_' || info.dead_letter_queue)
        INTO body USING p_msg_id, idempo.ms_at(now_ms);
    GET DIAGNOSTICS taken = ROW_COUNT;
    IF taken = 0 THEN
        RETURN NULL;
    END IF;
    DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = info.dead_letter_queue AND e.msg_id = p_msg_id;
    RETURN idempo.enqueue(p_queue, body, nullif(p_headers, '')::jsonb, now_ms, now_ms);
END
$$;

-- The transactional outbox: idempo.transition() and a send (no delay) of `p_message` to
-- `p_queue` in one transaction, the message stamped with the transition's time.
CREATE FUNCTION idempo.transition_and_send(
    p_namespace text, p_key text, p_from text, p_fencing_token bigint, p_to text, p_queue text, p_message text,
    p_headers text DEFAULT NULL, p_actor text DEFAULT '', p_detail text DEFAULT '', p_result text DEFAULT NULL,
    p_receipt text DEFAULT NULL, p_error_class text DEFAULT NULL, p_error_detail text DEFAULT NULL,
    p_retry_delay_ms bigint DEFAULT NULL, p_lease_ms bigint DEFAULT NULL, p_extra_attempts integer DEFAULT NULL,
    p_retention_ms bigint DEFAULT 86400000, p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0,
    OUT operation idempo.operation_answer, OUT msg_id bigint)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.queue_info(p_queue);
    PERFORM idempo.check_message(p_message, p_headers);
    operation := idempo.transition(p_namespace, p_key, p_from, p_fencing_token, p_to, p_actor, p_detail, p_result,
                                   p_receipt, p_error_class, p_error_detail, p_retry_delay_ms, p_lease_ms,
                                   p_extra_attempts, p_retention_ms, p_clock_pinned_ms, p_clock_offset_ms);
    msg_id := idempo.enqueue(p_queue, p_message::jsonb, nullif(p_headers, '')::jsonb, (operation).updated_at_ms,
                             (operation).updated_at_ms);
END
$$;

-- New functions are executable by PUBLIC until revoked; the roles get what their role allows.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA idempo FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'idempo_worker') THEN
        GRANT EXECUTE ON FUNCTION
            idempo.queue_send(text, text, text, bigint, bigint, bigint),
            idempo.queue_read(text, bigint, integer, text, bigint, bigint),
            idempo.queue_ack(text, bigint, integer, bigint, bigint),
            idempo.queue_delete(text, bigint),
            idempo.queue_archive(text, bigint, bigint, bigint),
            idempo.queue_nack(text, bigint, text, text, bigint, integer, bigint, bigint),
            idempo.queue_set_vt(text, bigint, bigint, bigint, bigint),
            idempo.transition_and_send(text, text, text, bigint, text, text, text, text, text, text, text, text, text,
                                       text, bigint, bigint, integer, bigint, bigint, bigint)
        TO idempo_worker;
        GRANT SELECT ON idempo.queue_acks TO idempo_worker;
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'idempo_operator') THEN
        GRANT EXECUTE ON FUNCTION idempo.queue_requeue_dead_letter(text, bigint, text, text, bigint, bigint) TO idempo_operator;
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'idempo_admin') THEN
        GRANT EXECUTE ON FUNCTION idempo.queue_requeue_dead_letter(text, bigint, text, text, bigint, bigint) TO idempo_admin;
    END IF;
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT SELECT ON idempo.queue_acks TO %I', r);
    END LOOP;
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION idempo.ms_at(bigint) TO %I', r);
    END LOOP;
END
$$;
