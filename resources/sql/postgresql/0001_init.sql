-- SPDX-License-Identifier: Apache-2.0
-- Shared ledger, schema version 1. Applied by `idempo init` (PostgresLedgerStore::migrate) as one
-- script in one transaction, so DO blocks may span lines. Times are bigint milliseconds since the
-- Unix epoch, always computed on the server from clock_timestamp(), like the embedded ledger's.
-- Keys, namespaces and run ids use the "C" collation: byte order, so a key prefix is an index range.

-- Fencing tokens: one global sequence, so tokens stay monotonic per key across retention purges.
CREATE SEQUENCE fencing_sequence AS bigint;

CREATE TABLE operations (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace text COLLATE "C" NOT NULL,
    operation_key text COLLATE "C" NOT NULL,
    run_id text COLLATE "C" NOT NULL DEFAULT '',
    step_id text NOT NULL DEFAULT '',
    target text NOT NULL DEFAULT '',
    tool_kind text NOT NULL CHECK (tool_kind IN ('read', 'idempotent_write', 'protected_write')),
    state text NOT NULL CHECK (state IN ('received', 'awaiting_approval', 'dispatching', 'succeeded',
        'failed_retryable', 'unknown_outcome', 'confirmation_required', 'failed_terminal')),
    payload text NOT NULL,
    payload_fingerprint text NOT NULL,
    fingerprint_fields text NOT NULL DEFAULT '[]',
    attempt integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL,
    lease_owner text NOT NULL DEFAULT '',
    lease_expires_at_ms bigint,
    fencing_token bigint NOT NULL,
    next_attempt_at_ms bigint,
    error_class text,
    error_detail text NOT NULL DEFAULT '',
    result text NOT NULL DEFAULT '',
    receipt text NOT NULL DEFAULT '',
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    retention_expires_at_ms bigint,
    operation_version bigint NOT NULL DEFAULT 1,
    schema_version integer NOT NULL,
    CONSTRAINT operations_namespace_key UNIQUE (namespace, operation_key)
);
-- Keyset listings: WHERE state = ? AND id > ? ORDER BY id, and the same per run.
CREATE INDEX operations_state_id ON operations (state, id);
CREATE INDEX operations_run_id ON operations (run_id, id);
-- Key prefix listings across every namespace (within one, the unique index serves).
CREATE INDEX operations_key ON operations (operation_key);
CREATE INDEX operations_retention ON operations (retention_expires_at_ms)
    WHERE retention_expires_at_ms IS NOT NULL;

CREATE TABLE operation_events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_id bigint NOT NULL,
    at_ms bigint NOT NULL,
    from_state text,
    to_state text NOT NULL,
    fencing_token bigint NOT NULL,
    attempt integer NOT NULL,
    actor text NOT NULL DEFAULT '',
    error_class text,
    detail text NOT NULL DEFAULT ''
);
CREATE INDEX operation_events_operation ON operation_events (operation_id, id);

CREATE TABLE suppressions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace text COLLATE "C" NOT NULL,
    operation_key text COLLATE "C" NOT NULL,
    at_ms bigint NOT NULL,
    outcome text NOT NULL,
    state text NOT NULL,
    source text NOT NULL DEFAULT '',
    fingerprint text NOT NULL
);
CREATE INDEX suppressions_namespace_id ON suppressions (namespace, id);
CREATE INDEX suppressions_at ON suppressions (at_ms);

-- Least-privilege roles (NOLOGIN groups; grant them to login roles):
--   idempo_worker    claims and transitions: SELECT, INSERT, UPDATE on the ledger tables, DELETE
--                    on operation_events (a claim on a retention-expired key replaces the record
--                    and its history), USAGE on fencing_sequence; no DDL, no purge.
--   idempo_viewer    consoles and reports: SELECT only.
--   idempo_approver  guarded actions: the viewer's rights, UPDATE of operations and INSERT into
--                    operation_events.
-- Purging expired records and migrating stay with the schema owner (the role running idempo init).
-- A role is created only when missing and when the migrating role may create roles; otherwise a
-- WARNING says so and a DBA creates it, e.g. `CREATE ROLE idempo_worker NOLOGIN`, then re-runs the
-- GRANT block below. Later migrations grant on the tables they add.
DO $$
DECLARE
    wanted text;
BEGIN
    FOREACH wanted IN ARRAY ARRAY['idempo_worker', 'idempo_viewer', 'idempo_approver'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = wanted) THEN
            IF (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) THEN
                EXECUTE format('CREATE ROLE %I NOLOGIN', wanted);
            ELSE
                RAISE WARNING 'role % is missing and % may not create roles: not granted', wanted, current_user;
            END IF;
        END IF;
    END LOOP;
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_viewer') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO idempo_viewer', current_schema());
        GRANT SELECT ON operations, operation_events, suppressions, schema_migrations TO idempo_viewer;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_approver') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO idempo_approver', current_schema());
        GRANT SELECT ON operations, operation_events, suppressions, schema_migrations TO idempo_approver;
        GRANT UPDATE ON operations TO idempo_approver;
        GRANT INSERT ON operation_events TO idempo_approver;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_worker') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO idempo_worker', current_schema());
        GRANT SELECT ON operations, operation_events, suppressions, schema_migrations TO idempo_worker;
        GRANT INSERT, UPDATE ON operations, operation_events, suppressions TO idempo_worker;
        GRANT DELETE ON operation_events TO idempo_worker;
        GRANT USAGE ON SEQUENCE fencing_sequence TO idempo_worker;
    END IF;
END
$$;
