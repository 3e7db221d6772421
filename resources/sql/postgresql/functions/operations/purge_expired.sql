-- SPDX-License-Identifier: Apache-2.0

-- Removes the records of `p_namespace` ('' for every namespace) whose retention expired, with
-- their history; returns how many. The owner's work: granted to no role.
-- It finds the expired records through the listing.
CREATE OR REPLACE FUNCTION idempo.purge_expired(p_namespace text DEFAULT '', p_clock_pinned_ms bigint DEFAULT NULL,
                                                p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    purged bigint;
BEGIN
    PERFORM idempo.refresh_listing();
    WITH gone AS (
        DELETE FROM idempo.operations AS o
        WHERE o.id IN (SELECT l.id FROM idempo.operation_listing AS l WHERE l.retention_expires_at_ms <= now_ms)
          AND o.retention_expires_at_ms <= now_ms AND (coalesce(p_namespace, '') = '' OR o.namespace = p_namespace)
        RETURNING o.id
    ), history_gone AS (
        DELETE FROM idempo.operation_events AS e WHERE e.operation_id IN (SELECT id FROM gone)
    )
    SELECT count(*) INTO purged FROM gone;
    RETURN purged;
END
$$;

SELECT idempo.grant_execute('idempo.purge_expired(text,bigint,bigint)');
