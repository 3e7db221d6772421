-- SPDX-License-Identifier: Apache-2.0
-- Guarded actions, schema version 4: approvals, the hash-chained audit log, guard settings, the
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

-- True when the current role is a member of the group `wanted` (false when the group is missing).
CREATE FUNCTION idempo_acts_as(wanted text) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT FROM pg_roles WHERE rolname = wanted) AND pg_has_role(current_user, wanted, 'MEMBER')
$$;

-- True for the role that owns the ledger's tables (it ran `idempo init`) and for superusers.
CREATE FUNCTION idempo_is_owner() RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
        OR pg_has_role(current_user, (SELECT tableowner FROM pg_tables
                                       WHERE schemaname = current_schema() AND tablename = 'audit_log'), 'MEMBER')
$$;

-- The audit log is append-only for everyone; only the owner can get round it, by disabling
-- the trigger. A record names the role that wrote it: `who` must be current_user (the owner may
-- record on behalf of others, as tools run by the owner do).
CREATE FUNCTION idempo_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.who <> current_user::text AND NOT idempo_is_owner() THEN
            RAISE EXCEPTION 'an audit record by % must name its own role, not %', current_user, NEW.who
                USING ERRCODE = '42501';
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = '42501';
END
$$;
CREATE TRIGGER audit_log_append_only BEFORE INSERT OR UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION idempo_audit_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION idempo_audit_append_only();

-- An approval names the role that submitted it.
CREATE FUNCTION idempo_approval_attributed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.operator <> current_user::text AND NOT idempo_is_owner() THEN
        RAISE EXCEPTION 'an approval by % must name its own role, not %', current_user, NEW.operator
            USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER approvals_attributed BEFORE INSERT ON approvals
    FOR EACH ROW EXECUTE FUNCTION idempo_approval_attributed();

-- What a guarded role may do to an operation, checked by the database itself: workers and the
-- owner are not limited here (claims and transitions are their work); an approver only moves an
-- operation out of awaiting_approval / confirmation_required, an operator only settles
-- unknown_outcome, a lapsed dispatch, or a confirmation with evidence; and either only with
-- its own audit record of that action for that operation written earlier in the same
-- transaction. xmin of a row written by this transaction is its 32-bit transaction id.
CREATE FUNCTION idempo_guard_operation_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    audited text;
BEGIN
    IF idempo_acts_as('idempo_worker') OR idempo_is_owner() THEN
        RETURN NEW;
    END IF;
    SELECT string_agg(action, ',') INTO audited FROM audit_log
     WHERE target = NEW.namespace || '/' || NEW.operation_key
       AND who = current_user::text
       AND xmin::text::bigint = txid_current() % 4294967296;
    IF audited IS NOT NULL THEN
        IF idempo_acts_as('idempo_approver') AND audited ~ '(approve|reject)'
           AND OLD.state IN ('awaiting_approval', 'confirmation_required')
           AND NEW.state IN ('received', 'succeeded', 'failed_terminal') THEN
            RETURN NEW;
        END IF;
        IF idempo_acts_as('idempo_operator') AND audited ~ 'reconcile'
           AND (OLD.state IN ('unknown_outcome', 'dispatching')
                OR (OLD.state = 'confirmation_required' AND NEW.state = 'succeeded')) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'role % may not move operation % from % to %', current_user, NEW.operation_key,
        OLD.state, NEW.state USING ERRCODE = '42501';
END
$$;
CREATE TRIGGER operations_guarded BEFORE UPDATE ON operations
    FOR EACH ROW EXECUTE FUNCTION idempo_guard_operation_change();

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
