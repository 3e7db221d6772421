-- SPDX-License-Identifier: Apache-2.0

-- Opens a DLQ replay of `p_msg_ids` (dead letters of `<p_queue>_dlq`) under `p_replay_id`, with
-- its `dlq_replay` audit record, and returns that record's seq (the run's p_begun_seq);
-- `p_detail` (a JSON object: counts, classes, rate) goes into the record. Refused with ID009
-- while a live replay of the queue holds one of the ids or has this replay id; one silent for
-- longer than its `p_idle_limit_ms` is taken over (see above). Opening a closed replay id again
-- by the same login reopens it with the new set.
CREATE OR REPLACE FUNCTION idempo.dlq_replay_begin(p_queue text, p_replay_id text, p_msg_ids bigint[], p_reason text,
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

SELECT idempo.grant_execute('idempo.dlq_replay_begin(text,text,bigint[],text,text,bigint,text,text,bigint,bigint)', 'idempo_admin', 'idempo_operator');
