-- SPDX-License-Identifier: Apache-2.0

-- A DLQ replay's requeue (idempo.dlq_replay_begin): dead letter `p_msg_id` of `<p_queue>_dlq`
-- is archived there and its body sent to `p_queue` with `p_headers`, in one transaction; NULL
-- when the dead-letter queue no longer holds it. A login that is not the owner requeues only
-- the dead letters of an open replay it began itself. Under a replay id, the run `p_begun_seq`
-- (NULL: the replay's current run) must still hold the replay (ID008 once taken over), and the
-- requeue stamps the replay as alive.
CREATE OR REPLACE FUNCTION idempo.queue_requeue_dead_letter(p_queue text, p_msg_id bigint, p_headers text, p_replay_id text,
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

SELECT idempo.grant_execute('idempo.queue_requeue_dead_letter(text,bigint,text,text,bigint,bigint,bigint)', 'idempo_admin', 'idempo_operator');
