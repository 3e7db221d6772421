-- SPDX-License-Identifier: Apache-2.0
-- Schema version 26: a dead letter is in at most one open replay at a time (docs/sql-api.md,
-- "DLQ replay").
--
-- Two replays of one set by one identity share their replay id: the second begin reopened the
-- first's row, both requeued, and the one that finished second found its replay closed (ID005)
-- after doing its work; the audit log had one finish record for the work of both. Now a begin
-- whose set meets an open replay of the queue (or names an open replay id) is refused up front
-- with ID009 (in_progress), naming the replay, its login and identity, and since when.
--
-- An open replay is alive while its runner requeues: each requeue stamps beat_at_ms on the
-- ledger's clock, and a replay silent for longer than its idle_limit_ms (given at its begin,
-- 1 s to 7 days, 5 minutes by default) counts as abandoned. A begin then takes it over: its
-- `dlq_replay` record names each abandoned replay (`took_over`), the abandoned row is closed
-- (taken_over_seq), and its runner, should it come back, is fenced off: its requeues and its
-- finish name the run they belong to (p_begun_seq, the seq of its `dlq_replay` record) and are
-- refused with ID008 naming the run that took it over.
ALTER TABLE idempo.dlq_replays
    ADD COLUMN beat_at_ms bigint,
    ADD COLUMN idle_limit_ms bigint NOT NULL DEFAULT 300000,
    ADD COLUMN taken_over_seq bigint;
UPDATE idempo.dlq_replays SET beat_at_ms = created_at_ms;
ALTER TABLE idempo.dlq_replays ALTER COLUMN beat_at_ms SET NOT NULL;

DROP FUNCTION idempo.dlq_replay_begin(text, text, bigint[], text, text, text, text, bigint, bigint);
DROP FUNCTION idempo.dlq_replay_finish(text, text, text, text, text, text, bigint, bigint);
DROP FUNCTION idempo.queue_requeue_dead_letter(text, bigint, text, text, bigint, bigint);

-- An instant of the ledger's clock as ISO 8601 UTC text, for messages.
CREATE FUNCTION idempo.iso_utc(p_ms bigint) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
RETURN pg_catalog.to_char(idempo.ms_at(p_ms) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

-- Opens a DLQ replay of `p_msg_ids` (dead letters of `<p_queue>_dlq`) under `p_replay_id`, with
-- its `dlq_replay` audit record, and returns that record's seq (the run's p_begun_seq);
-- `p_detail` (a JSON object: counts, classes, rate) goes into the record. Refused with ID009
-- while a live replay of the queue holds one of the ids or has this replay id; one silent for
-- longer than its `p_idle_limit_ms` is taken over (see above). Opening a closed replay id again
-- by the same login reopens it with the new set.
CREATE FUNCTION idempo.dlq_replay_begin(p_queue text, p_replay_id text, p_msg_ids bigint[], p_reason text,
                                        p_detail text DEFAULT '{}', p_idle_limit_ms bigint DEFAULT 300000,
                                        p_as_name text DEFAULT NULL, p_as_role text DEFAULT NULL,
                                        p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    info idempo.queue_registry%ROWTYPE := idempo.queue_info(p_queue);
    now_ms bigint;
    holder idempo.dlq_replays%ROWTYPE;
    abandoned jsonb;
    detail jsonb;
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.check_identifier(p_replay_id, 'p_replay_id', true, 255);
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin', 'operator'], 'replay dead letters',
                                'idempo_operator or idempo_admin', p_reason);
    IF info.dead_letter_queue IS NULL THEN
        PERFORM idempo.raise('ID004', '''' || p_queue || ''' is a dead-letter queue: name its source queue');
    END IF;
    IF p_msg_ids IS NULL OR array_position(p_msg_ids, NULL) IS NOT NULL THEN
        PERFORM idempo.raise('ID004', 'p_msg_ids must be an array of msg_ids without NULLs');
    END IF;
    PERFORM idempo.check_json(p_detail, 'p_detail', 1048576);
    IF jsonb_typeof(p_detail::jsonb) <> 'object' THEN
        PERFORM idempo.raise('ID004', 'p_detail must be a JSON object');
    END IF;
    IF p_idle_limit_ms IS NULL OR p_idle_limit_ms < 1000 OR p_idle_limit_ms > 604800000 THEN
        PERFORM idempo.raise('ID004', 'p_idle_limit_ms must be from 1000 to 604800000 (one second to seven days), not '
                                      || coalesce(p_idle_limit_ms::text, 'NULL'));
    END IF;
    IF EXISTS (SELECT FROM idempo.dlq_replays AS r WHERE r.replay_id = p_replay_id
               AND (r.login <> session_user OR r.queue_name <> p_queue)) THEN
        PERFORM idempo.raise('ID008', 'replay id ''' || p_replay_id || ''' belongs to another login or queue');
    END IF;
    -- Begins of one queue take turns, so two at once cannot both find the set free; the open
    -- replays they meet stay locked until this one commits, so none of them beats meanwhile.
    PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended('idempo.dlq_replays/' || p_queue, 0));
    PERFORM FROM idempo.dlq_replays AS r
    WHERE r.queue_name = p_queue AND r.finished_seq IS NULL AND (r.msg_ids && p_msg_ids OR r.replay_id = p_replay_id)
    FOR UPDATE;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    SELECT * INTO holder FROM idempo.dlq_replays AS r
    WHERE r.queue_name = p_queue AND r.finished_seq IS NULL AND (r.msg_ids && p_msg_ids OR r.replay_id = p_replay_id)
      AND r.beat_at_ms + r.idle_limit_ms > now_ms
    ORDER BY r.begun_seq LIMIT 1;
    IF FOUND THEN
        PERFORM idempo.raise('ID009', 'replay ' || holder.replay_id || ' of queue ''' || p_queue || ''' is open: login '
            || holder.login || CASE WHEN holder.who <> holder.login THEN ' (as ' || holder.who || ')' ELSE '' END
            || ' has run it since ' || idempo.iso_utc(holder.created_at_ms) || ', last active '
            || idempo.iso_utc(holder.beat_at_ms) || '; it holds '
            || (SELECT count(*) FROM unnest(holder.msg_ids) AS i WHERE i = ANY (p_msg_ids))
            || ' of these dead letters. Nothing was written: run this replay again once it has finished, or after '
            || idempo.iso_utc(holder.beat_at_ms + holder.idle_limit_ms) || ' if it requeues nothing more by then '
            || '(it is then taken over as abandoned)');
    END IF;
    SELECT jsonb_agg(jsonb_build_object('replay_id', r.replay_id, 'login', r.login, 'who', r.who,
                                        'begun_seq', r.begun_seq, 'begun_at_ms', r.created_at_ms,
                                        'last_requeue_at_ms', r.beat_at_ms, 'idle_limit_ms', r.idle_limit_ms)
                     ORDER BY r.begun_seq)
    INTO abandoned FROM idempo.dlq_replays AS r
    WHERE r.queue_name = p_queue AND r.finished_seq IS NULL AND (r.msg_ids && p_msg_ids OR r.replay_id = p_replay_id);
    detail := p_detail::jsonb || jsonb_build_object('login', session_user::text, 'replay_id', p_replay_id,
                                                    'idle_limit_ms', p_idle_limit_ms);
    IF abandoned IS NOT NULL THEN
        detail := detail || jsonb_build_object('took_over', abandoned);
    END IF;
    audit := idempo.append_audit(now_ms, me.who, me.role, 'dlq_replay', 'queue:' || p_queue, p_reason, '', '', '',
                                 idempo.canonical_json(detail));
    UPDATE idempo.dlq_replays AS r SET finished_seq = audit.seq, taken_over_seq = audit.seq
    WHERE r.queue_name = p_queue AND r.finished_seq IS NULL AND r.msg_ids && p_msg_ids AND r.replay_id <> p_replay_id;
    INSERT INTO idempo.dlq_replays AS r (replay_id, queue_name, who, login, msg_ids, begun_seq, created_at_ms, beat_at_ms,
                                         idle_limit_ms)
    VALUES (p_replay_id, p_queue, me.who, session_user, p_msg_ids, audit.seq, now_ms, now_ms, p_idle_limit_ms)
    ON CONFLICT (replay_id) DO UPDATE SET msg_ids = excluded.msg_ids, begun_seq = excluded.begun_seq, who = excluded.who,
                                          created_at_ms = excluded.created_at_ms, beat_at_ms = excluded.beat_at_ms,
                                          idle_limit_ms = excluded.idle_limit_ms, finished_seq = NULL,
                                          taken_over_seq = NULL;
    RETURN audit.seq;
END
$$;

-- The open replay `p_replay_id` of `p_queue` locked for its run `p_begun_seq` (NULL: its current
-- run). ID008 when the run was taken over, ID005 when it is closed or not there.
CREATE FUNCTION idempo.dlq_replay_run(p_queue text, p_replay_id text, p_begun_seq bigint)
    RETURNS idempo.dlq_replays LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    run idempo.dlq_replays%ROWTYPE;
BEGIN
    IF p_begun_seq IS NOT NULL AND p_begun_seq < 1 THEN
        PERFORM idempo.raise('ID004', 'p_begun_seq must be the seq dlq_replay_begin returned (1 or more), not '
                                      || p_begun_seq);
    END IF;
    SELECT * INTO run FROM idempo.dlq_replays AS r WHERE r.replay_id = p_replay_id AND r.queue_name = p_queue FOR UPDATE;
    IF run.taken_over_seq IS NOT NULL OR (run.finished_seq IS NULL AND p_begun_seq <> run.begun_seq) THEN
        PERFORM idempo.raise('ID008', 'replay ' || p_replay_id || ' of queue ''' || p_queue || ''' (the run begun at audit seq '
            || coalesce(p_begun_seq, run.begun_seq) || ') was taken over as abandoned by the replay begun at audit seq '
            || coalesce(run.taken_over_seq, run.begun_seq) || ' (its dlq_replay record names the run it took over and '
            || 'that run''s last requeue): this run requeues nothing more');
    END IF;
    IF run.replay_id IS NULL OR run.finished_seq IS NOT NULL THEN
        PERFORM idempo.raise('ID005', 'no open replay ''' || coalesce(p_replay_id, '') || ''' of queue ''' || p_queue
                                      || '''');
    END IF;
    RETURN run;
END
$$;

-- Closes a replay with its `dlq_replay_finished` record (the counts in `p_detail`); its dead
-- letters can no longer be requeued under it. `p_begun_seq`: the run that finishes (NULL: the
-- replay's current run); a run that was taken over is refused (ID008).
CREATE FUNCTION idempo.dlq_replay_finish(p_queue text, p_replay_id text, p_reason text, p_detail text DEFAULT '{}',
                                         p_begun_seq bigint DEFAULT NULL, p_as_name text DEFAULT NULL,
                                         p_as_role text DEFAULT NULL, p_clock_pinned_ms bigint DEFAULT NULL,
                                         p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    run idempo.dlq_replays%ROWTYPE;
    now_ms bigint;
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin', 'operator'], 'replay dead letters',
                                'idempo_operator or idempo_admin', p_reason);
    PERFORM idempo.check_identifier(p_replay_id, 'p_replay_id', true, 255);
    PERFORM idempo.check_json(p_detail, 'p_detail', 1048576);
    IF jsonb_typeof(p_detail::jsonb) <> 'object' THEN
        PERFORM idempo.raise('ID004', 'p_detail must be a JSON object');
    END IF;
    run := idempo.dlq_replay_run(p_queue, p_replay_id, p_begun_seq);
    IF run.login <> session_user THEN
        PERFORM idempo.raise('ID005', 'no open replay ''' || p_replay_id || ''' of queue ''' || p_queue
                                      || ''' by login ' || session_user);
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    audit := idempo.append_audit(now_ms, me.who, me.role, 'dlq_replay_finished', 'queue:' || p_queue, p_reason, '', '', '',
                                 idempo.canonical_json(p_detail::jsonb || jsonb_build_object(
                                     'login', session_user::text, 'replay_id', p_replay_id, 'begun_seq', run.begun_seq)));
    UPDATE idempo.dlq_replays AS r SET finished_seq = audit.seq WHERE r.replay_id = p_replay_id;
    RETURN audit.seq;
END
$$;

-- A DLQ replay's requeue (idempo.dlq_replay_begin): dead letter `p_msg_id` of `<p_queue>_dlq`
-- is archived there and its body sent to `p_queue` with `p_headers`, in one transaction; NULL
-- when the dead-letter queue no longer holds it. A login that is not the owner requeues only
-- the dead letters of an open replay it began itself. Under a replay id, the run `p_begun_seq`
-- (NULL: the replay's current run) must still hold the replay (ID008 once taken over), and the
-- requeue stamps the replay as alive.
CREATE FUNCTION idempo.queue_requeue_dead_letter(p_queue text, p_msg_id bigint, p_headers text, p_replay_id text,
                                                 p_begun_seq bigint DEFAULT NULL, p_clock_pinned_ms bigint DEFAULT NULL,
                                                 p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE := idempo.queue_info(p_queue);
    run idempo.dlq_replays%ROWTYPE;
    now_ms bigint;
    body jsonb;
    taken integer;
BEGIN
    IF info.dead_letter_queue IS NULL THEN
        PERFORM idempo.raise('ID004', '''' || p_queue || ''' is a dead-letter queue: replay to its source queue');
    END IF;
    IF p_msg_id IS NULL THEN
        PERFORM idempo.raise('ID004', 'p_msg_id must not be NULL');
    END IF;
    PERFORM idempo.check_message('null', p_headers);
    IF p_replay_id IS NOT NULL AND (NOT idempo.is_owner() OR EXISTS (
            SELECT FROM idempo.dlq_replays AS r WHERE r.replay_id = p_replay_id AND r.queue_name = p_queue)) THEN
        run := idempo.dlq_replay_run(p_queue, p_replay_id, p_begun_seq);
    END IF;
    IF NOT idempo.is_owner() AND (run.login IS DISTINCT FROM session_user::text OR NOT p_msg_id = ANY (run.msg_ids)) THEN
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
    IF run.replay_id IS NOT NULL THEN
        UPDATE idempo.dlq_replays AS r SET beat_at_ms = now_ms WHERE r.replay_id = run.replay_id;
    END IF;
    IF taken = 0 THEN
        RETURN NULL;
    END IF;
    DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = info.dead_letter_queue AND e.msg_id = p_msg_id;
    RETURN idempo.enqueue(p_queue, body, nullif(p_headers, '')::jsonb, now_ms, now_ms);
END
$$;

-- New functions are executable by PUBLIC until revoked; the roles get what their role allows.
REVOKE ALL ON FUNCTION idempo.iso_utc(bigint), idempo.dlq_replay_run(text, text, bigint),
    idempo.dlq_replay_begin(text, text, bigint[], text, text, bigint, text, text, bigint, bigint),
    idempo.dlq_replay_finish(text, text, text, text, bigint, text, text, bigint, bigint),
    idempo.queue_requeue_dead_letter(text, bigint, text, text, bigint, bigint, bigint) FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles WHERE rolname IN ('idempo_operator', 'idempo_admin') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION '
                                  'idempo.dlq_replay_begin(text, text, bigint[], text, text, bigint, text, text, bigint, bigint), '
                                  'idempo.dlq_replay_finish(text, text, text, text, bigint, text, text, bigint, bigint), '
                                  'idempo.queue_requeue_dead_letter(text, bigint, text, text, bigint, bigint, bigint) TO %I',
                                  r);
    END LOOP;
END
$$;
