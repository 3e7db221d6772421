-- SPDX-License-Identifier: Apache-2.0

-- Who is calling. The owner is the role that owns the ledger's tables (it ran `idempo init`)
-- and superusers; inside a SECURITY DEFINER function current_user is that owner, so identity is
-- always session_user.
CREATE OR REPLACE FUNCTION idempo.is_owner() RETURNS boolean LANGUAGE sql STABLE
RETURN pg_catalog.pg_has_role(session_user, (SELECT c.relowner FROM pg_catalog.pg_class AS c
                                             WHERE c.oid = 'idempo.operations'::regclass), 'MEMBER');

SELECT idempo.grant_execute('idempo.is_owner()', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
