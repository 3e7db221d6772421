-- SPDX-License-Identifier: Apache-2.0

-- The last progress of run `r`: its own stamp (created, resumed, an operation received again)
-- or the newest operation of it created or final. Read when judged, so that the claim and
-- complete of a healthy run write nothing to the run.
CREATE OR REPLACE FUNCTION idempo.run_progress(r idempo.runs) RETURNS bigint
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
RETURN greatest(r.last_progress_at_ms,
                (SELECT max(CASE WHEN o.state IN ('succeeded', 'failed_terminal') THEN o.updated_at_ms
                                 ELSE o.created_at_ms END)
                 FROM idempo.operations AS o WHERE o.namespace = r.namespace AND o.run_id = r.run_id));

SELECT idempo.grant_execute('idempo.run_progress(runs)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
