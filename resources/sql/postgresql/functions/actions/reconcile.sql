-- SPDX-License-Identifier: Apache-2.0

-- Settles an operation by what its provider says (reconcilecommand.h): `p_evidence` is the
-- JSON object {"status": found | not_found | pending | unsupported, "provider", "reference",
-- "answer"} a lookup by key returned. Only unknown_outcome, confirmation_required and a
-- protected write whose lease lapsed are reconciled (a live lease is refused, ID007); found
-- moves to succeeded with the reference as receipt, not_found back to received (through
-- unknown_outcome from dispatching), anything else to confirmation_required for a person. The
-- evidence is kept in the audit record. `p_expected_version`: refused (ID007) if the operation
-- changed since it was looked up.
CREATE OR REPLACE FUNCTION idempo.reconcile(p_namespace text, p_key text, p_evidence text, p_reason text,
                                 p_expected_version bigint DEFAULT NULL, p_retention_ms bigint DEFAULT 86400000,
                                 p_as_name text DEFAULT NULL, p_as_role text DEFAULT NULL,
                                 p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.action_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    o idempo.operations%ROWTYPE;
    before idempo.operations%ROWTYPE;
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    evidence jsonb;
    status text;
    reference text;
    moves text[];
    detail text;
    step text;
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.check_namespace(p_namespace);
    PERFORM idempo.check_identifier(p_key, 'p_key', true, 255);
    PERFORM idempo.check_json(p_evidence, 'p_evidence', 1048576);
    evidence := p_evidence::jsonb;
    status := evidence ->> 'status';
    IF jsonb_typeof(evidence) <> 'object' OR status IS NULL OR status NOT IN ('found', 'not_found', 'pending', 'unsupported') THEN
        PERFORM idempo.raise('ID004', 'p_evidence must be an object whose "status" is found, not_found, pending or unsupported');
    END IF;
    reference := coalesce(evidence ->> 'reference', '');
    IF p_retention_ms IS NULL OR p_retention_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retention_ms must be 0..315360000000 ms (ten years), not ' || coalesce(p_retention_ms::text, 'NULL'));
    END IF;
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin', 'operator'], 'reconcile operations',
                                'idempo_operator or idempo_admin', p_reason);
    SELECT * INTO o FROM idempo.operations AS x WHERE x.namespace = p_namespace AND x.operation_key = p_key FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM idempo.raise('ID005', 'no operation ''' || p_key || ''' in namespace ''' || p_namespace || '''');
    END IF;
    IF p_expected_version IS NOT NULL AND o.operation_version <> p_expected_version THEN
        PERFORM idempo.raise('ID007', 'the operation changed after it was looked up');
    END IF;
    IF NOT (o.state IN ('unknown_outcome', 'confirmation_required')
            OR (o.state = 'dispatching' AND o.tool_kind = 'protected_write' AND o.lease_expires_at_ms <= now_ms)) THEN
        PERFORM idempo.raise('ID007', 'an operation in ' || o.state || ' has nothing to reconcile (only unknown_outcome, '
                                      'confirmation_required and protected writes whose lease lapsed)');
    END IF;
    moves := CASE WHEN status = 'found' THEN ARRAY['succeeded']
                  WHEN o.state = 'unknown_outcome' THEN ARRAY[CASE WHEN status = 'not_found' THEN 'received' ELSE 'confirmation_required' END]
                  WHEN o.state = 'dispatching' AND status = 'not_found' THEN ARRAY['unknown_outcome', 'received']
                  WHEN o.state = 'dispatching' THEN ARRAY['confirmation_required']
                  ELSE '{}' END;
    detail := 'reconciled by ' || me.who || ': provider ' || status || CASE WHEN reference = '' THEN '' ELSE ' ' || reference END
              || '; ' || p_reason;
    before := o;
    FOREACH step IN ARRAY moves LOOP
        o := idempo.move(o, o.state, o.fencing_token, step, me.who, detail, NULL,
                         CASE WHEN step = 'succeeded'
                              THEN '{"external_reference":' || to_json(reference)::text || ',"provider":'
                                   || to_json(coalesce(evidence ->> 'provider', ''))::text || ',"reconciled_by":'
                                   || to_json(me.who)::text || '}' END,
                         CASE WHEN step = 'unknown_outcome' THEN 'unknown_outcome' END,
                         CASE WHEN step = 'unknown_outcome' THEN 'lease of ' || o.lease_owner || ' lapsed during a protected write' END,
                         NULL, NULL, NULL, p_retention_ms, now_ms);
    END LOOP;
    audit := idempo.append_audit(now_ms, me.who, me.role, 'reconcile', p_namespace || '/' || p_key, p_reason,
                                 idempo.operation_snapshot(before), idempo.operation_snapshot(o), '',
                                 '{"evidence":' || idempo.canonical_json(evidence) || ',"login":'
                                 || to_json(session_user::text)::text || '}');
    RETURN ROW(before.state, o.state, audit.seq)::idempo.action_answer;
END
$$;

SELECT idempo.grant_execute('idempo.reconcile(text,text,text,text,bigint,bigint,text,text,bigint,bigint)', 'idempo_admin', 'idempo_operator');
