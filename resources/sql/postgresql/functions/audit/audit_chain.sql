-- SPDX-License-Identifier: Apache-2.0

-- The chain is kept here, whoever inserts: the record gets the next seq, the head's hash as
-- prev_hash and its own hash, and the head moves in the same transaction (its row lock
-- serialises appends). Updates, deletes and truncation are refused, the owner's included;
-- only disabling the trigger (owner or superuser) gets round it, which the head then exposes.
-- It refuses an insert idempo.append_audit did not make, and links each record to
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

CREATE OR REPLACE TRIGGER audit_log_chain BEFORE INSERT OR UPDATE OR DELETE ON idempo.audit_log
    FOR EACH ROW EXECUTE FUNCTION idempo.audit_chain();

CREATE OR REPLACE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON idempo.audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION idempo.audit_chain();

SELECT idempo.grant_execute('idempo.audit_chain()');
