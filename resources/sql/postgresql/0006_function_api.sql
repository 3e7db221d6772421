-- SPDX-License-Identifier: Apache-2.0
-- Schema version 6: the ledger becomes a function API (docs/sql-api.md). Every table moves into
-- schema idempo; every write is a SECURITY DEFINER function there (this file and 0007-0009),
-- with a fixed search_path and schema-qualified names; roles keep SELECT and get EXECUTE, and no
-- role (PUBLIC included) keeps INSERT, UPDATE, DELETE or TRUNCATE on any table. Identity is the
-- database login (session_user). The audit chain gets a head record, kept by a trigger, that a
-- verifier compares (`idempo audit head`, `idempo audit verify --expect-head`).
--
-- Errors raised by the functions carry these SQLSTATEs (class ID), mapped to the engine's codes:
--   ID001 invalid_key  ID002 invalid_json  ID003 payload_too_large  ID004 invalid_argument
--   ID005 not_found    ID006 stale_lease   ID007 illegal_transition ID008 refused
-- and 42501 (insufficient_privilege) when the login's role may not do what it asked.

CREATE SCHEMA IF NOT EXISTS idempo;

-- The tables move from the schema `idempo init` created them in (current_schema() of its
-- session) to idempo; the old names stay behind as read-only views for readers written against
-- schema 5. The triggers and functions of 0005, which unqualified names could fool, are dropped:
-- nobody but the owner can write the tables now.
DO $$
DECLARE
    legacy name := (SELECT n.nspname FROM pg_catalog.pg_class AS c
                    JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                    WHERE c.oid = pg_catalog.to_regclass('operations'));
    moved text[] := ARRAY['operations', 'operation_events', 'suppressions', 'approvals', 'audit_log',
                          'guard_settings', 'queue_registry', 'queue_errors', 'schema_migrations'];
    t text;
BEGIN
    IF legacy IS NULL THEN
        RAISE EXCEPTION 'no ledger tables on the search path (%): run idempo init with the role and search_path that created them',
            pg_catalog.current_setting('search_path');
    END IF;
    IF legacy <> 'idempo' THEN
        FOREACH t IN ARRAY moved LOOP
            EXECUTE pg_catalog.format('ALTER TABLE %I.%I SET SCHEMA idempo', legacy, t);
        END LOOP;
        EXECUTE pg_catalog.format('ALTER SEQUENCE %I.fencing_sequence SET SCHEMA idempo', legacy);
    END IF;
    DROP TRIGGER IF EXISTS operations_guarded ON idempo.operations;
    DROP TRIGGER IF EXISTS approvals_attributed ON idempo.approvals;
    DROP TRIGGER IF EXISTS audit_log_append_only ON idempo.audit_log;
    DROP TRIGGER IF EXISTS audit_log_no_truncate ON idempo.audit_log;
    FOREACH t IN ARRAY ARRAY['idempo_guard_operation_change()', 'idempo_approval_attributed()',
                             'idempo_audit_append_only()', 'idempo_is_owner()', 'idempo_acts_as(text)'] LOOP
        EXECUTE pg_catalog.format('DROP FUNCTION IF EXISTS %I.%s', legacy, t);
    END LOOP;
    IF legacy <> 'idempo' THEN
        FOREACH t IN ARRAY moved LOOP
            EXECUTE pg_catalog.format('CREATE VIEW %I.%I AS SELECT * FROM idempo.%I', legacy, t, t);
            EXECUTE pg_catalog.format('REVOKE ALL ON %I.%I FROM PUBLIC', legacy, t);
        END LOOP;
    END IF;
END
$$;

-- Identity: the login that wrote each history event and approval (session_user). `actor` keeps
-- the label a client gives (a worker's lease owner, "host:pid").
ALTER TABLE idempo.operation_events ADD COLUMN login text NOT NULL DEFAULT '';
ALTER TABLE idempo.approvals ADD COLUMN login text NOT NULL DEFAULT '';

-- The audit chain's head: the seq and hash of its newest record, updated by the trigger below
-- in the transaction that appends the record. A verifier compares the chain's end with it (tail
-- truncation, a removed newest record); an anchor kept outside the database (`idempo audit
-- head`) also catches an owner who rewrites the chain and the head together.
CREATE TABLE idempo.audit_head (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    seq bigint NOT NULL,
    hash text NOT NULL,
    updated_at_ms bigint
);
INSERT INTO idempo.audit_head (seq, hash, updated_at_ms)
SELECT coalesce(l.seq, 0), coalesce(l.hash, '0000000000000000000000000000000000000000000000000000000000000000'), l.at_ms
FROM (VALUES (1)) AS one (v)
LEFT JOIN (SELECT seq, hash, at_ms FROM idempo.audit_log ORDER BY seq DESC LIMIT 1) AS l ON true;

-- A DLQ replay in progress: the dead letters its operator may requeue (idempo.dlq_replay_begin).
CREATE TABLE idempo.dlq_replays (
    replay_id text COLLATE "C" PRIMARY KEY,
    queue_name text COLLATE "C" NOT NULL,
    who text NOT NULL,
    login text NOT NULL,
    msg_ids bigint[] NOT NULL,
    begun_seq bigint NOT NULL,
    finished_seq bigint,
    created_at_ms bigint NOT NULL
);

-- Privileges: no role keeps a write on any table, of the ledger or of the queues; readers keep
-- what they read. Functions are granted by the migrations that create them; none is PUBLIC's
-- (PostgreSQL grants EXECUTE to PUBLIC on every new function: each migration revokes it).
DO $$
DECLARE
    r text;
    legacy name;
BEGIN
    REVOKE ALL ON ALL TABLES IN SCHEMA idempo FROM PUBLIC;
    REVOKE ALL ON ALL SEQUENCES IN SCHEMA idempo FROM PUBLIC;
    IF pg_catalog.to_regnamespace('pgmq') IS NOT NULL THEN
        REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA pgmq FROM PUBLIC;
    END IF;
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE pg_catalog.format('REVOKE ALL ON ALL TABLES IN SCHEMA idempo FROM %I', r);
        EXECUTE pg_catalog.format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA idempo FROM %I', r);
        EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA idempo TO %I', r);
        IF pg_catalog.to_regnamespace('pgmq') IS NOT NULL THEN
            EXECUTE pg_catalog.format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN SCHEMA pgmq FROM %I', r);
        END IF;
        IF r = 'idempo_worker' THEN
            GRANT SELECT ON idempo.operations, idempo.operation_events, idempo.suppressions, idempo.schema_migrations,
                idempo.queue_registry, idempo.guard_settings TO idempo_worker;
        ELSE
            EXECUTE pg_catalog.format('GRANT SELECT ON ALL TABLES IN SCHEMA idempo TO %I', r);
        END IF;
        FOR legacy IN SELECT n.nspname FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                      WHERE c.relname = 'operations' AND c.relkind = 'v' AND n.nspname <> 'idempo' LOOP
            EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %I TO %I', legacy, r);
            IF r = 'idempo_worker' THEN
                EXECUTE pg_catalog.format('GRANT SELECT ON %1$I.operations, %1$I.operation_events, %1$I.suppressions, '
                                          '%1$I.schema_migrations, %1$I.queue_registry, %1$I.guard_settings TO %2$I', legacy, r);
            ELSE
                EXECUTE pg_catalog.format('GRANT SELECT ON %1$I.operations, %1$I.operation_events, %1$I.suppressions, '
                                          '%1$I.schema_migrations, %1$I.queue_registry, %1$I.guard_settings, %1$I.approvals, '
                                          '%1$I.audit_log, %1$I.queue_errors TO %2$I', legacy, r);
            END IF;
        END LOOP;
    END LOOP;
END
$$;
