-- SPDX-License-Identifier: Apache-2.0
-- Schema version 23: the listing indexes leave the write path (docs/benchmarks.md). Every claim
-- and every move wrote an entry in each of thirteen indexes of idempo.operations, and every new
-- record its payload's leaves, though only listings read them. They now live on
-- idempo.operation_listing, a copy of the columns listings filter and order by, which
-- idempo.refresh_listing() brings up to date from the change feed (changed_xid) after the
-- writes committed: a reader calls it before it lists. idempo.operations keeps what writers and
-- the run rules read: its key, the change feed and the (namespace, run, state) index.
--
-- A record that leaves (purge, an expired key claimed again under a new id) leaves the listing
-- and the payload side table in its own transaction, as before: those paths are rare.

CREATE TABLE idempo.operation_listing (
    id bigint PRIMARY KEY,
    namespace text NOT NULL,
    operation_key text COLLATE "C" NOT NULL,
    run_id text NOT NULL,
    state text NOT NULL,
    updated_at_ms bigint NOT NULL,
    value_minor bigint,
    value_currency text,
    retention_expires_at_ms bigint
);

-- Where idempo.refresh_listing() took up the change feed last: every change a transaction
-- visible in this snapshot made is in the listing.
CREATE TABLE idempo.listing_cursor (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    snapshot text NOT NULL
);

-- The same orders as on idempo.operations before (schemas 1, 16 and 18), and the namespace's key
-- range that the unique key served.
DROP INDEX idempo.operations_state_id, idempo.operations_run_id, idempo.operations_key, idempo.operations_retention,
    idempo.operations_updated, idempo.operations_value, idempo.operations_state_updated,
    idempo.operations_state_value_order, idempo.operations_state_key;
DROP TRIGGER IF EXISTS payload_fields_insert ON idempo.operations;

INSERT INTO idempo.operation_listing (id, namespace, operation_key, run_id, state, updated_at_ms, value_minor,
                                      value_currency, retention_expires_at_ms)
SELECT o.id, o.namespace, o.operation_key, o.run_id, o.state, o.updated_at_ms, o.value_minor, o.value_currency,
       o.retention_expires_at_ms
FROM idempo.operations AS o;
INSERT INTO idempo.listing_cursor (snapshot) VALUES (pg_catalog.pg_current_snapshot()::text);

CREATE INDEX operation_listing_state_id ON idempo.operation_listing (state, id) WHERE state <> 'succeeded';
CREATE INDEX operation_listing_run_id ON idempo.operation_listing (run_id, id);
CREATE INDEX operation_listing_key ON idempo.operation_listing (operation_key);
CREATE INDEX operation_listing_namespace_key ON idempo.operation_listing (namespace, operation_key);
CREATE INDEX operation_listing_retention ON idempo.operation_listing (retention_expires_at_ms)
    WHERE retention_expires_at_ms IS NOT NULL;
CREATE INDEX operation_listing_updated ON idempo.operation_listing (updated_at_ms, id);
CREATE INDEX operation_listing_value ON idempo.operation_listing ((coalesce(value_minor, -1)), id);
CREATE INDEX operation_listing_state_updated ON idempo.operation_listing (state, updated_at_ms, id);
CREATE INDEX operation_listing_state_value ON idempo.operation_listing (state, (coalesce(value_minor, -1)), id);
CREATE INDEX operation_listing_state_key ON idempo.operation_listing (state, operation_key, id);

REVOKE ALL ON idempo.operation_listing, idempo.listing_cursor FROM PUBLIC;
DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE pg_catalog.format('GRANT SELECT ON idempo.operation_listing TO %I', r);
    END LOOP;
END
$$;

