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

-- The record hash of auditchain.h: lowercase hex SHA-256 of the RFC 8785 text of the record's
-- fields. The keys are ASCII, so their UTF-16 order is the order written here; to_json() of
-- text escapes exactly as RFC 8785 does (\b \t \n \f \r, \u00xx for other controls).
CREATE FUNCTION idempo.audit_hash(p_seq bigint, p_at_ms bigint, p_who text, p_role text, p_action text,
                                  p_target text, p_reason text, p_before_state text, p_after_state text,
                                  p_approval_id text, p_detail text, p_prev_hash text)
    RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
RETURN pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(
    '{"action":' || pg_catalog.to_json(p_action)::text
    || ',"after_state":' || pg_catalog.to_json(p_after_state)::text
    || ',"approval_id":' || pg_catalog.to_json(p_approval_id)::text
    || ',"at_ms":' || p_at_ms::text
    || ',"before_state":' || pg_catalog.to_json(p_before_state)::text
    || ',"detail":' || pg_catalog.to_json(p_detail)::text
    || ',"prev_hash":' || pg_catalog.to_json(p_prev_hash)::text
    || ',"reason":' || pg_catalog.to_json(p_reason)::text
    || ',"role":' || pg_catalog.to_json(p_role)::text
    || ',"seq":' || p_seq::text
    || ',"target":' || pg_catalog.to_json(p_target)::text
    || ',"who":' || pg_catalog.to_json(p_who)::text || '}', 'UTF8')), 'hex');

-- The chain is kept here, whoever inserts: the record gets the next seq, the head's hash as
-- prev_hash and its own hash, and the head moves in the same transaction (its row lock
-- serialises appends). Updates, deletes and truncation are refused, the owner's included;
-- only disabling the trigger (owner or superuser) gets round it, which the head then exposes.
CREATE FUNCTION idempo.audit_chain() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    head idempo.audit_head%ROWTYPE;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = '42501';
    END IF;
    SELECT * INTO head FROM idempo.audit_head WHERE singleton FOR UPDATE;
    NEW.seq := head.seq + 1;
    NEW.prev_hash := head.hash;
    NEW.hash := idempo.audit_hash(NEW.seq, NEW.at_ms, NEW.who, NEW.role, NEW.action, NEW.target, NEW.reason,
                                  NEW.before_state, NEW.after_state, NEW.approval_id, NEW.detail, NEW.prev_hash);
    UPDATE idempo.audit_head SET seq = NEW.seq, hash = NEW.hash, updated_at_ms = NEW.at_ms WHERE singleton;
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_log_chain BEFORE INSERT OR UPDATE OR DELETE ON idempo.audit_log
    FOR EACH ROW EXECUTE FUNCTION idempo.audit_chain();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON idempo.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION idempo.audit_chain();

-- The head moves only with an appended record (the trigger above runs at depth 1).
CREATE FUNCTION idempo.audit_head_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND pg_catalog.pg_trigger_depth() > 1 THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_head moves only when a record is appended: % refused', TG_OP USING ERRCODE = '42501';
END
$$;
CREATE TRIGGER audit_head_guarded BEFORE INSERT OR UPDATE OR DELETE ON idempo.audit_head
    FOR EACH ROW EXECUTE FUNCTION idempo.audit_head_guard();
CREATE TRIGGER audit_head_no_truncate BEFORE TRUNCATE ON idempo.audit_head
    FOR EACH STATEMENT EXECUTE FUNCTION idempo.audit_head_guard();

-- Who is calling. The owner is the role that owns the ledger's tables (it ran `idempo init`)
-- and superusers; inside a SECURITY DEFINER function current_user is that owner, so identity is
-- always session_user.
CREATE FUNCTION idempo.is_owner() RETURNS boolean LANGUAGE sql STABLE
RETURN pg_catalog.pg_has_role(session_user, (SELECT c.relowner FROM pg_catalog.pg_class AS c
                                             WHERE c.oid = 'idempo.operations'::regclass), 'MEMBER');

-- True when the login is a member of the group `wanted` (false when the group is missing).
CREATE FUNCTION idempo.is_member(wanted text) RETURNS boolean LANGUAGE sql STABLE
RETURN coalesce((SELECT pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER') FROM pg_catalog.pg_roles AS r
                 WHERE r.rolname = wanted), false);

-- The login and the first idempo group it acts through.
CREATE FUNCTION idempo.whoami(OUT login text, OUT role text) LANGUAGE sql STABLE
RETURN (session_user::text,
        CASE WHEN idempo.is_owner() THEN 'owner'
             WHEN idempo.is_member('idempo_admin') THEN 'admin'
             WHEN idempo.is_member('idempo_approver') THEN 'approver'
             WHEN idempo.is_member('idempo_operator') THEN 'operator'
             WHEN idempo.is_member('idempo_worker') THEN 'worker'
             WHEN idempo.is_member('idempo_viewer') THEN 'viewer'
             ELSE 'none' END);

-- The ledger's clock in milliseconds since the epoch: the server's clock_timestamp(), or a
-- pinned instant, plus an offset (tests). Reading it is open to every role; the write
-- functions take the same two arguments and accept them from the owner only (idempo.clock_for).
CREATE FUNCTION idempo.now_ms(p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE sql VOLATILE
RETURN coalesce(p_clock_pinned_ms, pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                                                    * 1000)::bigint)
       + coalesce(p_clock_offset_ms, 0);

-- Raises `message` with SQLSTATE `code`.
CREATE FUNCTION idempo.raise(code text, message text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
END
$$;

-- The clock a write judges expiries on; a moved clock only for the owner (tests).
CREATE FUNCTION idempo.clock_for(p_clock_pinned_ms bigint, p_clock_offset_ms bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF (p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0) AND NOT idempo.is_owner() THEN
        RAISE EXCEPTION 'login % may not move the ledger''s clock (p_clock_pinned_ms, p_clock_offset_ms are for tests by the owner)',
            session_user USING ERRCODE = '42501';
    END IF;
    RETURN idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
END
$$;

-- Keys, run and step ids, targets and labels (operationkey.h): at most `max_bytes` bytes of
-- UTF-8, no white space at either end, no control or format characters, no line or paragraph
-- separators. Unassigned code points are refused by the engine's own check, not here.
CREATE FUNCTION idempo.is_printable(p_value text, p_max_bytes integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_value IS NOT NULL AND pg_catalog.octet_length(p_value) <= p_max_bytes
    AND p_value !~ '^[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]'
    AND p_value !~ '[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$'
    AND p_value !~ '[\u0001-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]';

-- Raises ID001 (or ID004 for NULL) naming the argument unless `p_value` is a valid identifier;
-- `p_required`: it must not be empty either.
CREATE FUNCTION idempo.check_identifier(p_value text, p_argument text, p_required boolean, p_max_bytes integer)
    RETURNS void LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_value IS NULL THEN
        PERFORM idempo.raise('ID004', p_argument || ' must not be NULL');
    ELSIF p_required AND p_value = '' THEN
        PERFORM idempo.raise('ID001', p_argument || ' is empty');
    ELSIF octet_length(p_value) > p_max_bytes THEN
        PERFORM idempo.raise('ID001', p_argument || ' is ' || octet_length(p_value) || ' bytes; the limit is ' || p_max_bytes);
    ELSIF NOT idempo.is_printable(p_value, p_max_bytes) THEN
        PERFORM idempo.raise('ID001', p_argument || ' starts or ends with white space or holds an unprintable character');
    END IF;
END
$$;

-- Raises ID001 unless `p_namespace` is 1..63 bytes of letters, digits, '.', '_' and '-'.
CREATE FUNCTION idempo.check_namespace(p_namespace text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_namespace IS NULL THEN
        PERFORM idempo.raise('ID004', 'p_namespace must not be NULL');
    ELSIF p_namespace !~ '^[A-Za-z0-9._-]{1,63}$' THEN
        PERFORM idempo.raise('ID001', 'p_namespace must be 1..63 bytes of letters, digits, ''.'', ''_'' and ''-'', not '
                                      || to_json(left(p_namespace, 80))::text);
    END IF;
END
$$;

-- True when `p_text` is JSON text (RFC 8259 syntax; the engine's stricter I-JSON rules and the
-- canonical form are the caller's part of the contract).
CREATE FUNCTION idempo.is_json(p_text text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM p_text::json;
    RETURN true;
EXCEPTION WHEN invalid_text_representation THEN
    RETURN false;
END
$$;

-- Raises ID003 / ID002 naming the argument unless `p_text` is JSON of at most `p_max_bytes`.
CREATE FUNCTION idempo.check_json(p_text text, p_argument text, p_max_bytes integer) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_text IS NULL THEN
        PERFORM idempo.raise('ID004', p_argument || ' must not be NULL');
    ELSIF octet_length(p_text) > p_max_bytes THEN
        PERFORM idempo.raise('ID003', p_argument || ' is ' || octet_length(p_text) || ' bytes; the limit is ' || p_max_bytes || ' bytes');
    ELSIF NOT idempo.is_json(p_text) THEN
        PERFORM idempo.raise('ID002', p_argument || ' is not JSON text');
    END IF;
END
$$;

-- Lowercase hex SHA-256 of text's UTF-8 bytes.
CREATE FUNCTION idempo.sha256_hex(p_text text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(p_text, 'UTF8')), 'hex');

-- Who acts: the login, or, for the owner only, the identity it names (tools the owner runs
-- record on behalf of people). `p_as_role` is recorded for the owner's named identity; for
-- everyone else the login's own group is.
CREATE FUNCTION idempo.acting(p_as_name text, p_as_role text, OUT who text, OUT role text)
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    SELECT w.login, w.role INTO who, role FROM idempo.whoami() AS w;
    IF p_as_name IS NULL OR p_as_name = '' OR p_as_name = who THEN
        RETURN;
    END IF;
    IF role <> 'owner' THEN
        RAISE EXCEPTION 'login % may not act as %: identity is the database login', who, p_as_name
            USING ERRCODE = '42501';
    END IF;
    PERFORM idempo.check_identifier(p_as_name, 'p_as_name', true, 255);
    who := p_as_name;
    role := coalesce(nullif(p_as_role, ''), 'owner');
END
$$;

-- An operation's state as an audit record keeps it (auditchain.h operationSnapshot): RFC 8785
-- text of {attempt, error_class, fencing_token, max_attempts, receipt, state, version}.
CREATE FUNCTION idempo.operation_snapshot(o idempo.operations) RETURNS text LANGUAGE sql STABLE
RETURN '{"attempt":' || o.attempt::text
    || ',"error_class":' || coalesce(pg_catalog.to_json(o.error_class)::text, 'null')
    || ',"fencing_token":' || o.fencing_token::text
    || ',"max_attempts":' || o.max_attempts::text
    || ',"receipt":' || pg_catalog.to_json(o.receipt)::text
    || ',"state":' || pg_catalog.to_json(o.state)::text
    || ',"version":' || o.operation_version::text || '}';

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
    REVOKE ALL ON ALL FUNCTIONS IN SCHEMA idempo FROM PUBLIC;
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
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION idempo.whoami(), idempo.now_ms(bigint, bigint), '
                                  'idempo.audit_hash(bigint, bigint, text, text, text, text, text, text, text, text, text, text), '
                                  'idempo.sha256_hex(text), idempo.is_printable(text, integer), idempo.is_json(text), '
                                  'idempo.is_owner(), idempo.is_member(text) TO %I', r);
    END LOOP;
END
$$;
