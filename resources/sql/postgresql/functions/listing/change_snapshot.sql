-- SPDX-License-Identifier: Apache-2.0

-- Where a reader of the change feed starts: the current snapshot.
CREATE OR REPLACE FUNCTION idempo.change_snapshot() RETURNS text LANGUAGE sql STABLE
RETURN pg_catalog.pg_current_snapshot()::text;

SELECT idempo.grant_execute('idempo.change_snapshot()', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
