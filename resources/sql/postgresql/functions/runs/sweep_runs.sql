-- SPDX-License-Identifier: Apache-2.0

-- The no-progress sweep (LedgerStore::sweepRuns): halts the active runs with an open operation
-- and no progress for their limit. The reconciler's loop calls it; a claim judges its own run.
CREATE OR REPLACE FUNCTION idempo.sweep_runs(p_namespace text DEFAULT '', p_clock_pinned_ms bigint DEFAULT NULL,
                                  p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    halted bigint;
BEGIN
    UPDATE idempo.runs AS r SET state = 'halted', halt_budget = 'no_progress', halted_at_ms = now_ms,
        halt_detail = 'no progress for ' || ((now_ms - idempo.run_progress(r)) / 1000) || ' s (limit '
                      || (r.no_progress_ms / 1000) || ' s)',
        updated_at_ms = now_ms, run_version = r.run_version + 1
    WHERE r.state = 'active' AND r.no_progress_ms IS NOT NULL AND idempo.run_progress(r) + r.no_progress_ms <= now_ms
      AND (coalesce(p_namespace, '') = '' OR r.namespace = p_namespace)
      AND EXISTS (SELECT FROM idempo.operations AS o WHERE o.namespace = r.namespace AND o.run_id = r.run_id
                  AND o.state NOT IN ('succeeded', 'failed_terminal'));
    GET DIAGNOSTICS halted = ROW_COUNT;
    RETURN halted;
END
$$;

SELECT idempo.grant_execute('idempo.sweep_runs(text,bigint,bigint)', 'idempo_admin', 'idempo_operator', 'idempo_worker');
