-- SPDX-License-Identifier: Apache-2.0

-- Brings the listing and the payload side table up to what this statement's snapshot sees, and
-- returns how many records it listed anew or again; NULL when it could not: in a read-only
-- transaction (a standby lists what the primary took up), while another session's refresh holds
-- the cursor for more than a second (its caller may keep its transaction open), or when a
-- repeatable-read transaction's snapshot is older than the last refresh. With nothing to take
-- up it writes nothing, so listing a quiet ledger stays a read.
--
-- Callers queue on the cursor's row lock, so one takes up a change once; the statement after the
-- lock reads with a snapshot taken after the previous caller committed. The snapshot stored
-- counts the caller's own transaction as in progress (a snapshot leaves its own transaction out
-- of its list, and counts it as seen when a later one has committed), so what the caller writes
-- after this call is taken up once it commits. A record new to the
-- listing gets its payload leaves; a record removed by a transaction that committed while this
-- one took it up leaves the listing again.
-- jit off: the planner cannot count a batch before it reads it, and its guess for the payload
-- leaves is large enough to compile each call (half a second) for a few rows.
CREATE OR REPLACE FUNCTION idempo.refresh_listing() RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET jit = off AS $$
DECLARE
    since pg_snapshot;
    own xid8;
    waits text := current_setting('lock_timeout');
    listed bigint;
    taken bigint[];
BEGIN
    SELECT c.snapshot::pg_snapshot INTO since FROM idempo.listing_cursor AS c;
    -- What `since` did not see: transactions from its xmax on, and those in progress then (its
    -- xip list). Two index ranges, however long ago its xmin is.
    IF NOT EXISTS (
            SELECT FROM idempo.operations AS o WHERE o.changed_xid >= pg_snapshot_xmax(since)
            UNION ALL
            SELECT FROM idempo.operations AS o
            WHERE o.changed_xid = ANY (ARRAY(SELECT pg_snapshot_xip(since)))) THEN
        RETURN 0;
    END IF;
    IF current_setting('transaction_read_only')::boolean THEN
        RETURN NULL;
    END IF;
    -- The cursor is asked for without queueing (NOWAIT, again for up to a second), so a refresh
    -- is never part of a lock cycle with a writer that refreshes in its own transaction; a
    -- writer's row it meets is waited for a second at most. Either way the listing is served as
    -- it stands.
    FOR attempt IN 1..50 LOOP
        BEGIN
            SELECT c.snapshot::pg_snapshot INTO since FROM idempo.listing_cursor AS c FOR UPDATE NOWAIT;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            IF attempt = 50 THEN
                RETURN NULL;
            END IF;
            PERFORM pg_sleep(0.02);
        WHEN serialization_failure THEN
            RETURN NULL;
        END;
    END LOOP;
    own := pg_current_xact_id();
    BEGIN
        PERFORM set_config('lock_timeout', '1s', true);
        WITH changed AS MATERIALIZED (
            SELECT o.id, o.namespace, o.operation_key, o.run_id, o.state, o.updated_at_ms, o.value_minor,
                   o.value_currency, o.retention_expires_at_ms, o.payload, l.id IS NULL AS added
            -- Index probes whatever the planner guesses of how many changed: OFFSET 0 and LIMIT
            -- keep each subquery from becoming a join that scans a whole table.
            FROM (SELECT x.* FROM idempo.operations AS x WHERE x.changed_xid >= pg_snapshot_xmax(since)
                  UNION ALL
                  SELECT x.* FROM pg_snapshot_xip(since) AS t (xid)
                  CROSS JOIN LATERAL (SELECT y.* FROM idempo.operations AS y WHERE y.changed_xid = t.xid
                                      OFFSET 0) AS x) AS o
            LEFT JOIN LATERAL (SELECT z.id FROM idempo.operation_listing AS z WHERE z.id = o.id LIMIT 1) AS l
                ON true),
        listed_rows AS (
            INSERT INTO idempo.operation_listing AS l (id, namespace, operation_key, run_id, state, updated_at_ms,
                                                       value_minor, value_currency, retention_expires_at_ms)
            SELECT c.id, c.namespace, c.operation_key, c.run_id, c.state, c.updated_at_ms, c.value_minor,
                   c.value_currency, c.retention_expires_at_ms
            FROM changed AS c
            ON CONFLICT (id) DO UPDATE SET
                namespace = excluded.namespace, operation_key = excluded.operation_key, run_id = excluded.run_id,
                state = excluded.state, updated_at_ms = excluded.updated_at_ms, value_minor = excluded.value_minor,
                value_currency = excluded.value_currency, retention_expires_at_ms = excluded.retention_expires_at_ms
            RETURNING l.id),
        fields AS (
            INSERT INTO idempo.payload_fields (pointer, value, operation_id)
            SELECT f.pointer, f.value, c.id
            FROM changed AS c CROSS JOIN LATERAL idempo.payload_leaves(c.payload) AS f
            WHERE c.added
            ON CONFLICT DO NOTHING),
        moved_cursor AS (
            UPDATE idempo.listing_cursor AS c SET snapshot = (
                SELECT CASE WHEN own >= pg_snapshot_xmax(n.s) THEN n.s::text
                            ELSE least(pg_snapshot_xmin(n.s), own)::text || ':' || pg_snapshot_xmax(n.s)::text || ':'
                                 || (SELECT string_agg(x::text, ',' ORDER BY x)
                                     FROM (SELECT pg_snapshot_xip(n.s) UNION SELECT own) AS xs (x)) END
                FROM (SELECT pg_current_snapshot() AS s) AS n)
            WHERE c.singleton)
        SELECT count(*), array_agg(r.id) INTO listed, taken FROM listed_rows AS r;
        -- A record deleted (or renewed under a new id) by a transaction this one waited for.
        DELETE FROM idempo.operation_listing AS l
        WHERE l.id = ANY (taken) AND NOT (SELECT EXISTS (SELECT FROM idempo.operations AS o WHERE o.id = l.id));
        PERFORM set_config('lock_timeout', waits, true);
    EXCEPTION WHEN lock_not_available OR deadlock_detected OR serialization_failure THEN
        RETURN NULL; -- nothing of it stays, the block's lock_timeout neither
    END;
    RETURN listed;
END
$$;

SELECT idempo.grant_execute('idempo.refresh_listing()', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
