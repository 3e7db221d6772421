-- SPDX-License-Identifier: Apache-2.0
-- Guarded actions, schema version 5: approvals, the hash-chained audit log, guard settings, the
-- roles idempo_operator and idempo_admin, and the database's own checks of who may change what.
-- Times are bigint milliseconds since the Unix epoch, computed on the server.

CREATE TABLE approvals (
    approval_id text COLLATE "C" PRIMARY KEY,
    namespace text COLLATE "C" NOT NULL,
    operation_key text COLLATE "C" NOT NULL,
    revision integer NOT NULL,
    decision text NOT NULL CHECK (decision IN ('redispatch', 'confirm', 'reject')),
    reason text NOT NULL CHECK (length(reason) > 0),
    operator text NOT NULL,
    role text NOT NULL,
    external_reference text NOT NULL DEFAULT '',
    proposal text NOT NULL,
    status text NOT NULL CHECK (status IN ('applied', 'pending', 'seconded')),
    operation_version bigint NOT NULL,
    created_at_ms bigint NOT NULL
);
CREATE INDEX approvals_operation ON approvals (namespace, operation_key, revision);
-- One applied decision per (operation, revision).
CREATE UNIQUE INDEX approvals_applied_once ON approvals (namespace, operation_key, revision)
    WHERE status = 'applied';

CREATE TABLE audit_log (
    seq bigint PRIMARY KEY,
    at_ms bigint NOT NULL,
    who text NOT NULL,
    role text NOT NULL,
    action text NOT NULL,
    target text COLLATE "C" NOT NULL,
    reason text NOT NULL DEFAULT '',
    before_state text NOT NULL DEFAULT '',
    after_state text NOT NULL DEFAULT '',
    approval_id text NOT NULL DEFAULT '',
    detail text NOT NULL DEFAULT '',
    prev_hash text NOT NULL,
    hash text NOT NULL
);
CREATE INDEX audit_log_target ON audit_log (target, seq);

CREATE TABLE guard_settings (
    name text PRIMARY KEY,
    value text NOT NULL
);

-- Roles (NOLOGIN groups, created like those of 0001):
--   idempo_viewer    SELECT only, the audit log and approvals included.
--   idempo_operator  reconcile and DLQ replay: the viewer's rights, appending audit records,
--                    the operation changes the trigger above allows, and the queues' tables.
--   idempo_approver  approve and reject: the viewer's rights, approvals, appending audit
--                    records, and the operation changes the trigger above allows.
--   idempo_admin     both of the above, and the guard settings (the four-eyes threshold).
-- Nobody is granted UPDATE or DELETE on audit_log. The 0001 grants of UPDATE on operations to
-- idempo_approver stay: the trigger narrows them.
DO $$
DECLARE
    wanted text;
BEGIN
    FOREACH wanted IN ARRAY ARRAY['idempo_operator', 'idempo_admin', 'idempo_approver', 'idempo_viewer'] LOOP
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
DECLARE
    queue text;
BEGIN
    REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM PUBLIC;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_viewer') THEN
        GRANT SELECT ON approvals, audit_log, guard_settings TO idempo_viewer;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_worker') THEN
        GRANT SELECT ON guard_settings TO idempo_worker;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_approver') THEN
        GRANT SELECT ON approvals, audit_log, guard_settings TO idempo_approver;
        GRANT INSERT, UPDATE ON approvals TO idempo_approver;
        GRANT INSERT ON audit_log TO idempo_approver;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_operator') THEN
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO idempo_operator', current_schema());
        GRANT SELECT ON operations, operation_events, suppressions, schema_migrations, queue_registry,
            queue_errors, approvals, audit_log, guard_settings TO idempo_operator;
        GRANT UPDATE ON operations TO idempo_operator;
        GRANT INSERT ON operation_events, audit_log TO idempo_operator;
        GRANT DELETE ON queue_errors TO idempo_operator;
        GRANT USAGE ON SEQUENCE fencing_sequence TO idempo_operator;
        -- Queues created before this migration; createQueue grants on later ones.
        FOR queue IN SELECT queue_name FROM queue_registry LOOP
            IF to_regclass(format('pgmq.%I', 'q_' || queue)) IS NOT NULL THEN
                EXECUTE format('GRANT USAGE ON SCHEMA pgmq TO idempo_operator');
                EXECUTE format('GRANT SELECT, INSERT, DELETE ON pgmq.%I, pgmq.%I TO idempo_operator',
                               'q_' || queue, 'a_' || queue);
            END IF;
        END LOOP;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_admin')
       AND (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) THEN
        GRANT idempo_operator, idempo_approver TO idempo_admin;
        GRANT INSERT, UPDATE ON guard_settings TO idempo_admin;
    END IF;
END
$$;
