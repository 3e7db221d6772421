-- SPDX-License-Identifier: Apache-2.0
-- Schema version 25: every time a write stores counts from the ledger's clock once the write
-- holds its locks.
--
-- The functions read the clock, then write. A write that waited in between (for a table lock
-- held by a migration, VACUUM FULL or an operator's open transaction; for a row another
-- transaction holds; behind a claim of the same key that rolled back) stored times of the clock
-- before the wait: a claim that waited 3 s granted a 2 s lease that had lapsed when it committed,
-- and the next claim of the key took over while the first worker still ran.
--
-- The rule: a write's stamp (operations.updated_at_ms, runs.updated_at_ms, a message's vt) is
-- judged again once its locks are held, and when the clock has moved on by more than its 1 ms
-- resolution the stamp and every time computed from it (lease, next attempt, retention, run
-- progress, visibility timeout) move on by the wait. For the ledger's tables it lives in the
-- BEFORE triggers below, which run once the statement's table locks and the row's lock are held.
-- What can still wait after an operation is written (its history event's statement, a
-- concurrent insert of the same key that rolls back, the run's lock, the outbox's queue) settles
-- the operation and the event that carries its stamp through idempo.settle_writes. A guarded
-- action takes the audit chain's lock before it reads the clock (idempo.acting), so its audit
-- record never waits after its writes and the chain's times follow its order. The queue's
-- functions apply the rule to the messages they deliver, delay or hold. A transaction that
-- moves the clock for a test (p_clock_pinned_ms, p_clock_offset_ms) keeps the times it was given.

-- As in schema 6, and a moved clock marks its transaction.
CREATE OR REPLACE FUNCTION idempo.clock_for(p_clock_pinned_ms bigint, p_clock_offset_ms bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        IF NOT idempo.is_owner() THEN
            RAISE EXCEPTION 'login % may not move the ledger''s clock (p_clock_pinned_ms, p_clock_offset_ms are for tests by the owner)',
                session_user USING ERRCODE = '42501';
        END IF;
        PERFORM pg_catalog.set_config('idempo.test_clock', 'on', true);
    END IF;
    RETURN idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
END
$$;

-- An operation written with a stamp the clock has left behind: the stamp, the creation it
-- made, and every expiry the row holds (each write recomputes them all from its stamp) move on
-- by the wait.
CREATE FUNCTION idempo.stamp_operation() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    waited bigint := idempo.now_ms() - NEW.updated_at_ms;
BEGIN
    IF TG_OP = 'INSERT' OR NEW.created_at_ms IS DISTINCT FROM OLD.created_at_ms THEN
        NEW.created_at_ms := NEW.created_at_ms + waited;
    END IF;
    NEW.updated_at_ms := NEW.updated_at_ms + waited;
    NEW.lease_expires_at_ms := NEW.lease_expires_at_ms + waited;
    NEW.next_attempt_at_ms := NEW.next_attempt_at_ms + waited;
    NEW.retention_expires_at_ms := NEW.retention_expires_at_ms + waited;
    RETURN NEW;
END
$$;
CREATE TRIGGER operations_stamp_after_locks BEFORE INSERT OR UPDATE ON idempo.operations FOR EACH ROW
    WHEN (pg_catalog.current_setting('idempo.test_clock', true) IS DISTINCT FROM 'on'
          AND idempo.now_ms() - NEW.updated_at_ms > 1)
    EXECUTE FUNCTION idempo.stamp_operation();

-- A run written with a stale stamp: the stamp and the times this write set to it (progress,
-- the halt, the creation) move on by the wait, so a no-progress budget counts from then.
CREATE FUNCTION idempo.stamp_run() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    stamp bigint := NEW.updated_at_ms;
    waited bigint := idempo.now_ms() - NEW.updated_at_ms;
BEGIN
    NEW.updated_at_ms := stamp + waited;
    IF NEW.last_progress_at_ms = stamp AND (TG_OP = 'INSERT' OR OLD.last_progress_at_ms <> stamp) THEN
        NEW.last_progress_at_ms := stamp + waited;
    END IF;
    IF NEW.halted_at_ms = stamp AND (TG_OP = 'INSERT' OR OLD.halted_at_ms IS DISTINCT FROM stamp) THEN
        NEW.halted_at_ms := stamp + waited;
    END IF;
    IF TG_OP = 'INSERT' AND NEW.created_at_ms = stamp THEN
        NEW.created_at_ms := stamp + waited;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER runs_stamp_after_locks BEFORE INSERT OR UPDATE ON idempo.runs FOR EACH ROW
    WHEN (pg_catalog.current_setting('idempo.test_clock', true) IS DISTINCT FROM 'on'
          AND idempo.now_ms() - NEW.updated_at_ms > 1)
    EXECUTE FUNCTION idempo.stamp_run();

-- Judges again, after a lock taken once it was written, the operation `p_id` this transaction
-- wrote. Rewriting a stale stamp as it is hands the row to operations_stamp_after_locks, the one
-- place that moves it on; the record's newest event, which this transaction wrote under the
-- row's lock, keeps carrying the record's stamp.
CREATE FUNCTION idempo.settle_writes(p_id bigint) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    settled bigint;
BEGIN
    IF pg_catalog.current_setting('idempo.test_clock', true) IS NOT DISTINCT FROM 'on' THEN
        RETURN;
    END IF;
    UPDATE idempo.operations AS x SET updated_at_ms = x.updated_at_ms
    WHERE x.id = p_id AND x.changed_xid = pg_catalog.pg_current_xact_id() AND x.updated_at_ms < idempo.now_ms() - 1
    RETURNING x.updated_at_ms INTO settled;
    IF FOUND THEN
        UPDATE idempo.operation_events AS e SET at_ms = settled
        WHERE e.id = (SELECT max(v.id) FROM idempo.operation_events AS v WHERE v.operation_id = p_id);
    END IF;
END
$$;

-- A history event is inserted after its operation was written, by a statement that may have
-- waited for the events table, or behind a concurrent insert of the same key that then rolled
-- back: the event's time is the operation's stamp, so a stale one settles the operation.
CREATE FUNCTION idempo.settle_event() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.settle_writes(NEW.operation_id);
    RETURN NULL;
END
$$;
CREATE TRIGGER operation_events_settle AFTER INSERT ON idempo.operation_events FOR EACH ROW
    WHEN (pg_catalog.current_setting('idempo.test_clock', true) IS DISTINCT FROM 'on'
          AND idempo.now_ms() - NEW.at_ms > 1)
    EXECUTE FUNCTION idempo.settle_event();

-- As in schema 12; the run's lock may be waited for after the operation was written, so the
-- operation settles once it is held (the run's own stamp is judged by runs_stamp_after_locks).
CREATE OR REPLACE FUNCTION idempo.follow_run() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    failed boolean := NEW.to_state <> 'received';
    r idempo.runs%ROWTYPE;
    halts boolean;
BEGIN
    SELECT x.* INTO r FROM idempo.operations AS o
    JOIN idempo.runs AS x ON x.namespace = o.namespace AND x.run_id = o.run_id
    WHERE o.id = NEW.operation_id AND o.run_id <> '' FOR UPDATE OF x;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF idempo.now_ms() - NEW.at_ms > 1 THEN
        PERFORM idempo.settle_writes(NEW.operation_id);
    END IF;
    halts := failed AND r.state = 'active' AND r.failed_dispatch_limit IS NOT NULL
             AND r.failed_dispatches + 1 >= r.failed_dispatch_limit;
    UPDATE idempo.runs AS x SET
        failed_dispatches = x.failed_dispatches + failed::integer,
        last_progress_at_ms = CASE WHEN failed THEN x.last_progress_at_ms
                                   ELSE greatest(x.last_progress_at_ms, NEW.at_ms) END,
        state = CASE WHEN halts THEN 'halted' ELSE x.state END,
        halt_budget = CASE WHEN halts THEN 'failed_dispatches' ELSE x.halt_budget END,
        halted_at_ms = CASE WHEN halts THEN NEW.at_ms ELSE x.halted_at_ms END,
        halt_detail = CASE WHEN halts THEN (x.failed_dispatches + 1) || ' failed dispatches of ' || x.failed_dispatch_limit
                           ELSE x.halt_detail END,
        updated_at_ms = NEW.at_ms, run_version = x.run_version + 1
    WHERE x.namespace = r.namespace AND x.run_id = r.run_id;
    RETURN NULL;
END
$$;

-- As in schema 6, and the audit chain's locks taken first (the log's table, its head's row):
-- every guarded action calls it before it reads the clock, so the audit record it appends after
-- its writes never waits for the chain.
CREATE OR REPLACE FUNCTION idempo.acting(p_as_name text, p_as_role text, OUT who text, OUT role text)
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    LOCK TABLE idempo.audit_log IN ROW EXCLUSIVE MODE;
    PERFORM FROM idempo.audit_head AS h WHERE h.singleton FOR UPDATE;
    SELECT w.login, w.role INTO who, role FROM idempo.whoami() AS w;
    IF p_as_name IS NULL OR p_as_name = '' OR p_as_name = who THEN
        RETURN;
    END IF;
    IF role <> 'owner' THEN
        RAISE EXCEPTION 'login % may not act as %: identity is the database login', who, p_as_name
            USING ERRCODE = '42501';
    END IF;
    PERFORM idempo.check_identifier(p_as_name, 'p_as_name', true, 255);
    who := p_as_name;
    role := coalesce(nullif(p_as_role, ''), 'owner');
END
$$;

-- As in schema 7; the move answers the record as it stands once its event is written, which may
-- have settled it (idempo.settle_writes).
CREATE OR REPLACE FUNCTION idempo.move(o idempo.operations, p_from text, p_fencing_token bigint, p_to text, p_actor text,
                                       p_detail text, p_result text, p_receipt text, p_error_class text,
                                       p_error_detail text, p_retry_delay_ms bigint, p_lease_ms bigint,
                                       p_extra_attempts integer, p_retention_ms bigint, p_now_ms bigint)
    RETURNS idempo.operations LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dispatch boolean := p_to = 'dispatching' AND o.state <> 'dispatching';
BEGIN
    IF o.fencing_token <> p_fencing_token THEN
        PERFORM idempo.raise('ID006', 'fencing token ' || p_fencing_token || ' is not the operation''s current token ('
                                      || o.fencing_token || ')');
    END IF;
    IF o.state <> p_from THEN
        IF p_from = 'dispatching' THEN
            PERFORM idempo.raise('ID006', 'the lease is no longer held: the operation is ' || o.state);
        END IF;
        PERFORM idempo.raise('ID007', 'the operation is ' || o.state || ', not ' || p_from);
    END IF;
    IF NOT idempo.transition_allowed(p_from, p_to) THEN
        PERFORM idempo.raise('ID007', p_from || ' -> ' || p_to || ' is not an allowed transition');
    END IF;
    IF p_to = 'dispatching' AND (p_lease_ms IS NULL OR p_lease_ms <= 0) THEN
        PERFORM idempo.raise('ID004', 'a dispatch or heartbeat needs a positive lease (p_lease_ms)');
    END IF;
    UPDATE idempo.operations AS x SET
        state = p_to,
        changed_xid = pg_catalog.pg_current_xact_id(),
        updated_at_ms = p_now_ms,
        operation_version = x.operation_version + 1,
        fencing_token = CASE WHEN dispatch THEN pg_catalog.nextval('idempo.fencing_sequence') ELSE x.fencing_token END,
        attempt = CASE WHEN dispatch THEN x.attempt + 1 ELSE x.attempt END,
        lease_owner = CASE WHEN dispatch THEN p_actor ELSE x.lease_owner END,
        lease_expires_at_ms = CASE WHEN p_to = 'dispatching' THEN p_now_ms + p_lease_ms END,
        next_attempt_at_ms = p_now_ms + p_retry_delay_ms,
        retention_expires_at_ms = CASE WHEN p_to IN ('succeeded', 'failed_terminal') THEN p_now_ms + p_retention_ms END,
        result = coalesce(p_result, x.result),
        receipt = coalesce(p_receipt, x.receipt),
        error_class = CASE WHEN p_error_class IS NOT NULL THEN p_error_class
                           WHEN p_to = 'succeeded' THEN NULL ELSE x.error_class END,
        error_detail = CASE WHEN p_to = 'succeeded' AND p_error_class IS NULL THEN ''
                            WHEN p_error_detail IS NOT NULL THEN p_error_detail ELSE x.error_detail END,
        max_attempts = CASE WHEN p_extra_attempts IS NOT NULL
                            THEN CASE WHEN dispatch THEN x.attempt + 1 ELSE x.attempt END + p_extra_attempts
                            ELSE x.max_attempts END
    WHERE x.id = o.id
    RETURNING * INTO o;
    INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt, actor,
                                         error_class, detail, login)
    VALUES (o.id, o.updated_at_ms, p_from, o.state, o.fencing_token, o.attempt, p_actor, o.error_class, p_detail,
            session_user);
    IF idempo.now_ms() - o.updated_at_ms > 1 THEN
        SELECT * INTO o FROM idempo.operations AS x WHERE x.id = o.id;
    END IF;
    RETURN o;
END
$$;

-- As in schema 8; the send may wait for the queue's table after the transition was written.
CREATE OR REPLACE FUNCTION idempo.transition_and_send(
    p_namespace text, p_key text, p_from text, p_fencing_token bigint, p_to text, p_queue text, p_message text,
    p_headers text DEFAULT NULL, p_actor text DEFAULT '', p_detail text DEFAULT '', p_result text DEFAULT NULL,
    p_receipt text DEFAULT NULL, p_error_class text DEFAULT NULL, p_error_detail text DEFAULT NULL,
    p_retry_delay_ms bigint DEFAULT NULL, p_lease_ms bigint DEFAULT NULL, p_extra_attempts integer DEFAULT NULL,
    p_retention_ms bigint DEFAULT 86400000, p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0,
    OUT operation idempo.operation_answer, OUT msg_id bigint)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o idempo.operations%ROWTYPE;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    PERFORM idempo.check_message(p_message, p_headers);
    operation := idempo.transition(p_namespace, p_key, p_from, p_fencing_token, p_to, p_actor, p_detail, p_result,
                                   p_receipt, p_error_class, p_error_detail, p_retry_delay_ms, p_lease_ms,
                                   p_extra_attempts, p_retention_ms, p_clock_pinned_ms, p_clock_offset_ms);
    msg_id := idempo.enqueue(p_queue, p_message::jsonb, nullif(p_headers, '')::jsonb, (operation).updated_at_ms,
                             (operation).updated_at_ms);
    IF idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - (operation).updated_at_ms > 1 THEN
        PERFORM idempo.settle_writes((operation).id);
        SELECT * INTO o FROM idempo.operations AS x WHERE x.id = (operation).id;
        operation := idempo.answer(o);
    END IF;
END
$$;

-- As in schema 24; a send with a delay that waited for the queue's table is sent, and delayed,
-- from then.
CREATE OR REPLACE FUNCTION idempo.queue_send(p_queue text, p_message text, p_headers text DEFAULT NULL,
                                             p_delay_ms bigint DEFAULT 0, p_clock_pinned_ms bigint DEFAULT NULL,
                                             p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
    message jsonb;
    headers jsonb;
    id bigint;
BEGIN
    PERFORM FROM idempo.queue_registry AS r WHERE r.queue_name = p_queue;
    IF NOT FOUND THEN
        PERFORM idempo.queue_info(p_queue);
    END IF;
    IF p_message IS NULL OR octet_length(p_message) > 1048576 OR octet_length(p_headers) > 1048576 THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END IF;
    -- One parse of each text; one that is not JSON gets idempo.check_message's refusal.
    BEGIN
        message := p_message::jsonb;
        headers := nullif(p_headers, '')::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END;
    IF jsonb_typeof(headers) <> 'object' THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END IF;
    IF p_delay_ms IS NULL OR p_delay_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_delay_ms must be 0..315360000000 ms (ten years), not ' || coalesce(p_delay_ms::text, 'NULL'));
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
    EXECUTE format('INSERT INTO pgmq.%I (enqueued_at, vt, message, headers) VALUES ($1, $2, $3, $4) RETURNING msg_id',
                   'q_' || p_queue)
        INTO id USING idempo.ms_at(now_ms), idempo.ms_at(now_ms + p_delay_ms), message, headers;
    IF p_delay_ms > 0 THEN
        waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
        IF waited > 1 THEN
            EXECUTE format('UPDATE pgmq.%I SET vt = vt + $1, enqueued_at = enqueued_at + $1 WHERE msg_id = $2',
                           'q_' || p_queue)
                USING waited * interval '1 millisecond', id;
        END IF;
    END IF;
    RETURN id;
END
$$;

-- As in schema 24; the messages a read delivers stay invisible for p_vt_ms from the clock once
-- the read holds its locks (the acks', the queue's, the dead-letter queue's): a read that waited
-- moves their read time and visibility timeout on by the wait, so they are returned after the
-- read's last write.
CREATE OR REPLACE FUNCTION idempo.queue_read(p_queue text, p_vt_ms bigint, p_quantity integer DEFAULT 1, p_ack text DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS SETOF idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
    now_ms bigint;
    waited bigint;
    after bigint := 0;
    missing integer := p_quantity;
    asked integer;
    candidates integer;
    exhausted bigint[];
    got idempo.queue_message[] := '{}';
    m record;
    acks jsonb;
    pair jsonb;
BEGIN
    SELECT * INTO info FROM idempo.queue_registry AS x WHERE x.queue_name = p_queue;
    IF NOT FOUND THEN
        info := idempo.queue_info(p_queue);
    END IF;
    IF p_vt_ms IS NULL OR p_vt_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_vt_ms (the visibility timeout) must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_vt_ms::text, 'NULL'));
    END IF;
    IF p_quantity IS NULL OR p_quantity NOT BETWEEN 1 AND 10000 THEN
        PERFORM idempo.raise('ID004', 'p_quantity must be 1..10000, not ' || coalesce(p_quantity::text, 'NULL'));
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
    IF p_ack IS NOT NULL THEN
        IF NOT idempo.is_json(p_ack) OR jsonb_typeof(p_ack::jsonb) <> 'array' THEN
            PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs');
        END IF;
        acks := p_ack::jsonb;
        IF jsonb_array_length(acks) > 10000 THEN
            PERFORM idempo.raise('ID004', 'p_ack holds at most 10000 pairs, not ' || jsonb_array_length(acks));
        END IF;
        -- Every pair is checked before any is acknowledged, and CASE keeps each cast behind its check.
        FOR pair IN SELECT e.v FROM jsonb_array_elements(acks) AS e (v) LOOP
            IF (CASE WHEN jsonb_typeof(pair) <> 'array' THEN true
                    WHEN jsonb_array_length(pair) <> 2 THEN true
                    WHEN jsonb_typeof(pair -> 0) <> 'number' OR jsonb_typeof(pair -> 1) <> 'number' THEN true
                    ELSE (pair -> 0)::numeric NOT BETWEEN 1 AND 9223372036854775807
                         OR (pair -> 0)::numeric <> trunc((pair -> 0)::numeric)
                         OR (pair -> 1)::numeric NOT BETWEEN 1 AND 2147483647
                         OR (pair -> 1)::numeric <> trunc((pair -> 1)::numeric) END) THEN
                PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs of whole numbers 1 or '
                                              || 'more, not ' || left(pair::text, 80));
            END IF;
        END LOOP;
        FOR pair IN SELECT e.v FROM jsonb_array_elements(acks) AS e (v) LOOP
            PERFORM idempo.acknowledge(p_queue, (pair -> 0)::numeric::bigint, (pair -> 1)::numeric::integer, now_ms);
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
                got := got || ROW(m.msg_id, m.read_ct, floor(extract(epoch FROM m.enqueued_at) * 1000)::bigint,
                                  floor(extract(epoch FROM m.last_read_at) * 1000)::bigint,
                                  floor(extract(epoch FROM m.vt) * 1000)::bigint, m.message,
                                  m.headers)::idempo.queue_message;
            ELSE
                exhausted := exhausted || m.msg_id;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(exhausted) = 0;
        PERFORM idempo.dead_letter(p_queue, info.dead_letter_queue, exhausted, now_ms);
        -- A round that found fewer candidates than it asked for has seen every visible message.
        EXIT WHEN missing = 0 OR candidates < asked;
    END LOOP;
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF waited > 1 AND p_vt_ms > 0 AND cardinality(got) > 0 THEN
        EXECUTE format('UPDATE pgmq.%I SET vt = vt + $1, last_read_at = last_read_at + $1 WHERE msg_id = ANY ($2)',
                       'q_' || p_queue)
            USING waited * interval '1 millisecond', ARRAY(SELECT g.msg_id FROM unnest(got) AS g);
        RETURN QUERY SELECT g.msg_id, g.read_ct, g.enqueued_at_ms, g.last_read_at_ms + waited, g.vt_ms + waited,
                            g.message, g.headers
                     FROM unnest(got) AS g;
    ELSE
        RETURN QUERY SELECT * FROM unnest(got);
    END IF;
END
$$;

-- As in schema 24; a delay that waited for the queue's table or the message's row counts from then.
CREATE OR REPLACE FUNCTION idempo.queue_nack(p_queue text, p_msg_id bigint, p_error_class text, p_error_detail text DEFAULT '',
                                  p_retry_delay_ms bigint DEFAULT 0, p_read_ct integer DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
    m idempo.queue_message;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_error_class IS NULL OR NOT idempo.is_error_class(p_error_class) THEN
        PERFORM idempo.raise('ID004', 'p_error_class ' || coalesce(to_json(p_error_class)::text, 'NULL') || ' is not an error class');
    END IF;
    IF p_retry_delay_ms IS NULL OR p_retry_delay_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retry_delay_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_retry_delay_ms::text, 'NULL'));
    END IF;
    IF octet_length(p_error_detail) > 65536 THEN
        PERFORM idempo.raise('ID004', 'p_error_detail must hold at most 65536 bytes');
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    m := idempo.update_vt(p_queue, p_msg_id, now_ms + p_retry_delay_ms, p_read_ct);
    INSERT INTO idempo.queue_errors (queue_name, msg_id, error_class, error_detail, recorded_at_ms)
    VALUES (p_queue, p_msg_id, p_error_class, coalesce(p_error_detail, ''), now_ms)
    ON CONFLICT (queue_name, msg_id) DO UPDATE
        SET error_class = excluded.error_class, error_detail = excluded.error_detail, recorded_at_ms = excluded.recorded_at_ms;
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF waited > 1 AND p_retry_delay_ms > 0 THEN
        m := idempo.update_vt(p_queue, p_msg_id, m.vt_ms + waited, m.read_ct);
    END IF;
    RETURN m;
END
$$;

-- As in schema 24; likewise.
CREATE OR REPLACE FUNCTION idempo.queue_set_vt(p_queue text, p_msg_id bigint, p_vt_offset_ms bigint,
                                    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
    m idempo.queue_message;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_vt_offset_ms IS NULL OR p_vt_offset_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_vt_offset_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_vt_offset_ms::text, 'NULL'));
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    m := idempo.update_vt(p_queue, p_msg_id, now_ms + p_vt_offset_ms, NULL);
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF waited > 1 AND p_vt_offset_ms > 0 THEN
        m := idempo.update_vt(p_queue, p_msg_id, m.vt_ms + waited, NULL);
    END IF;
    RETURN m;
END
$$;

-- New functions are executable by PUBLIC until revoked; these are the ledger's own.
REVOKE ALL ON FUNCTION idempo.stamp_operation(), idempo.stamp_run(), idempo.settle_writes(bigint),
    idempo.settle_event() FROM PUBLIC;
