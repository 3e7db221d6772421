-- SPDX-License-Identifier: Apache-2.0

-- Closes a replay with its `dlq_replay_finished` record (the counts in `p_detail`); its dead
-- letters can no longer be requeued under it. `p_begun_seq`: the run that finishes (NULL: the
-- replay's current run); a run that was taken over is refused (ID008).
CREATE OR REPLACE FUNCTION idempo.dlq_replay_finish(p_queue text, p_replay_id text, p_reason text, p_detail text DEFAULT '{}',
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

SELECT idempo.grant_execute('idempo.dlq_replay_finish(text,text,text,text,bigint,text,text,bigint,bigint)', 'idempo_admin', 'idempo_operator');
