-- SPDX-License-Identifier: Apache-2.0

-- The login and the first idempo group it acts through.
CREATE OR REPLACE FUNCTION idempo.whoami(OUT login text, OUT role text) LANGUAGE sql STABLE
RETURN (session_user::text,
        CASE WHEN idempo.is_owner() THEN 'owner'
             WHEN idempo.is_member('idempo_admin') THEN 'admin'
             WHEN idempo.is_member('idempo_approver') THEN 'approver'
             WHEN idempo.is_member('idempo_operator') THEN 'operator'
             WHEN idempo.is_member('idempo_worker') THEN 'worker'
             WHEN idempo.is_member('idempo_viewer') THEN 'viewer'
             ELSE 'none' END);

SELECT idempo.grant_execute('idempo.whoami()', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
