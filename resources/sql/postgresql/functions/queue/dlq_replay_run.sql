-- SPDX-License-Identifier: Apache-2.0

-- The open replay `p_replay_id` of `p_queue` locked for its run `p_begun_seq` (NULL: its current
-- run). ID008 when the run was taken over, ID005 when it is closed or not there.
CREATE OR REPLACE FUNCTION idempo.dlq_replay_run(p_queue text, p_replay_id text, p_begun_seq bigint)
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

SELECT idempo.grant_execute('idempo.dlq_replay_run(text,text,bigint)');
