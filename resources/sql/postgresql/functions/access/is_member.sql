-- SPDX-License-Identifier: Apache-2.0

-- True when the login is a member of the group `wanted` (false when the group is missing).
CREATE OR REPLACE FUNCTION idempo.is_member(wanted text) RETURNS boolean LANGUAGE sql STABLE
RETURN coalesce((SELECT pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER') FROM pg_catalog.pg_roles AS r
                 WHERE r.rolname = wanted), false);

SELECT idempo.grant_execute('idempo.is_member(text)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
