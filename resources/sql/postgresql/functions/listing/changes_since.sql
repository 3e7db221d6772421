-- SPDX-License-Identifier: Apache-2.0

-- The records of namespace `p_namespace` ('' for all) created or moved by transactions that
-- `p_snapshot` did not see and this statement does (at most `p_limit` listed: more means
-- "refresh everything"), and the snapshot to ask from next time. Each change is
-- {"ns", "key", "run_id" (cut to 500 characters), "state", "version"}. An index range on
-- changed_xid from the old snapshot's xmin: only recent writes are read.
CREATE OR REPLACE FUNCTION idempo.changes_since(p_snapshot text, p_namespace text DEFAULT '', p_limit integer DEFAULT 1000,
                                     OUT snapshot text, OUT changes jsonb)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT pg_catalog.pg_current_snapshot()::text,
           coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'ns', c.namespace, 'key', c.operation_key, 'run_id', pg_catalog.left(c.run_id, 500), 'state', c.state,
               'version', c.operation_version) ORDER BY c.changed_xid, c.id), '[]'::jsonb)
    FROM (SELECT o.namespace, o.operation_key, o.run_id, o.state, o.operation_version, o.changed_xid, o.id
          FROM idempo.operations AS o
          WHERE o.changed_xid >= pg_catalog.pg_snapshot_xmin(p_snapshot::pg_snapshot)
            AND NOT pg_catalog.pg_visible_in_snapshot(o.changed_xid, p_snapshot::pg_snapshot)
            AND (coalesce(p_namespace, '') = '' OR o.namespace = p_namespace)
          LIMIT p_limit) AS c;
END;

SELECT idempo.grant_execute('idempo.changes_since(text,text,integer)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
