-- SPDX-License-Identifier: Apache-2.0
-- Schema version 22: only the ledger's functions append audit records, and each record carries
-- the hash of its target's previous record (auditchain.h), so an operation's records show on
-- their own that none is missing and an evidence pack needs no other target's records. Records written before keep '' (no link) and
-- hash as they did; the twelve-field idempo.audit_hash stays for them.
ALTER TABLE idempo.audit_log ADD COLUMN target_prev_hash text NOT NULL DEFAULT '';

-- The record hash with the target link: the same RFC 8785 text with "target_prev_hash" between
-- "target" and "who" (its UTF-16 place); an empty link hashes as the twelve-field record.
CREATE FUNCTION idempo.audit_hash(p_seq bigint, p_at_ms bigint, p_who text, p_role text, p_action text,
                                  p_target text, p_reason text, p_before_state text, p_after_state text,
                                  p_approval_id text, p_detail text, p_prev_hash text, p_target_prev_hash text)
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
    || CASE WHEN p_target_prev_hash = '' THEN ''
            ELSE ',"target_prev_hash":' || pg_catalog.to_json(p_target_prev_hash)::text END
    || ',"who":' || pg_catalog.to_json(p_who)::text || '}', 'UTF8')), 'hex');

-- As in schema 9, and it marks its own insert for the chain trigger below, which refuses any
-- other: a plain INSERT, the owner's included, appends no record that the functions' rules did
-- not let through. (The owner can still set the mark by hand, as it can disable the trigger: a
-- deliberate circumvention, which only an anchor kept outside exposes; docs/sql-api.md.)
CREATE OR REPLACE FUNCTION idempo.append_audit(p_at_ms bigint, p_who text, p_role text, p_action text, p_target text,
                                               p_reason text, p_before_state text, p_after_state text,
                                               p_approval_id text, p_detail text)
    RETURNS idempo.audit_log LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    appended idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM pg_catalog.set_config('idempo.audit_append', 'on', true);
    INSERT INTO idempo.audit_log (at_ms, who, role, action, target, reason, before_state, after_state, approval_id, detail)
    VALUES (p_at_ms, p_who, p_role, p_action, p_target, p_reason, p_before_state, p_after_state, p_approval_id, p_detail)
    RETURNING * INTO appended;
    PERFORM pg_catalog.set_config('idempo.audit_append', '', true);
    RETURN appended;
END
$$;

-- As in schema 6, refusing an insert idempo.append_audit did not make, and the record links to
-- its target's newest record (audit_log_target serves the read; the head's row lock already
-- serialises appends, so that record stays the newest).
CREATE OR REPLACE FUNCTION idempo.audit_chain() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    head idempo.audit_head%ROWTYPE;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = '42501';
    END IF;
    IF coalesce(pg_catalog.current_setting('idempo.audit_append', true), '') <> 'on' THEN
        RAISE EXCEPTION 'audit records are appended only by the ledger''s functions (approve, reject, reconcile, '
                        'settings, DLQ replay), never by a plain INSERT' USING ERRCODE = '42501';
    END IF;
    SELECT * INTO head FROM idempo.audit_head WHERE singleton FOR UPDATE;
    NEW.seq := head.seq + 1;
    NEW.prev_hash := head.hash;
    NEW.target_prev_hash := coalesce((SELECT l.hash FROM idempo.audit_log AS l WHERE l.target = NEW.target
                                      ORDER BY l.seq DESC LIMIT 1),
                                     '0000000000000000000000000000000000000000000000000000000000000000');
    NEW.hash := idempo.audit_hash(NEW.seq, NEW.at_ms, NEW.who, NEW.role, NEW.action, NEW.target, NEW.reason,
                                  NEW.before_state, NEW.after_state, NEW.approval_id, NEW.detail, NEW.prev_hash,
                                  NEW.target_prev_hash);
    UPDATE idempo.audit_head SET seq = NEW.seq, hash = NEW.hash, updated_at_ms = NEW.at_ms WHERE singleton;
    RETURN NEW;
END
$$;

REVOKE ALL ON FUNCTION idempo.audit_hash(bigint, bigint, text, text, text, text, text, text, text, text, text, text,
                                         text) FROM PUBLIC;
DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION idempo.audit_hash(bigint, bigint, text, text, text, text, '
                                  'text, text, text, text, text, text, text) TO %I', r);
    END LOOP;
END
$$;
