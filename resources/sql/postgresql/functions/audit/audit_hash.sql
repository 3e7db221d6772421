-- SPDX-License-Identifier: Apache-2.0

-- The record hash of auditchain.h: lowercase hex SHA-256 of the RFC 8785 text of the record's
-- fields. The keys are ASCII, so their UTF-16 order is the order written here; to_json() of
-- text escapes exactly as RFC 8785 does (\b \t \n \f \r, \u00xx for other controls).
CREATE OR REPLACE FUNCTION idempo.audit_hash(p_seq bigint, p_at_ms bigint, p_who text, p_role text, p_action text,
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

-- The record hash with the target link: the same RFC 8785 text with "target_prev_hash" between
-- "target" and "who" (its UTF-16 place); an empty link hashes as the twelve-field record.
CREATE OR REPLACE FUNCTION idempo.audit_hash(p_seq bigint, p_at_ms bigint, p_who text, p_role text, p_action text,
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

SELECT idempo.grant_execute('idempo.audit_hash(bigint,bigint,text,text,text,text,text,text,text,text,text,text)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');

SELECT idempo.grant_execute('idempo.audit_hash(bigint,bigint,text,text,text,text,text,text,text,text,text,text,text)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
