-- SPDX-License-Identifier: Apache-2.0

-- Appends an audit record; the chain trigger gives it its seq, prev_hash and hash.
-- It marks its own insert for the chain trigger (audit/audit_chain.sql), which refuses any
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

SELECT idempo.grant_execute('idempo.append_audit(bigint,text,text,text,text,text,text,text,text,text)');
