-- SPDX-License-Identifier: Apache-2.0

-- Approve (redispatch, confirm) or reject an operation in awaiting_approval or
-- confirmation_required (approvecommand.h). Refused (ID008) without a reason, to the login (or
-- the owner's named identity) that requested or last touched the operation, to a second
-- approval of the same proposal by the same identity, and for an approval id already used for
-- another decision or operation; the same approval id again answers `replayed` with the first
-- decision. Above the guard setting four_eyes_above a redispatch or confirm needs two
-- identities: the first is `pending`, the second `applied`.
CREATE OR REPLACE FUNCTION idempo.approve(p_namespace text, p_key text, p_approval_id text, p_decision text, p_reason text,
                               p_external_reference text DEFAULT '', p_extra_attempts integer DEFAULT 3,
                               p_retention_ms bigint DEFAULT 86400000, p_as_name text DEFAULT NULL,
                               p_as_role text DEFAULT NULL, p_clock_pinned_ms bigint DEFAULT NULL,
                               p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.approval_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    o idempo.operations%ROWTYPE;
    before idempo.operations%ROWTYPE;
    a idempo.approvals%ROWTYPE;
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    proposal_hash text;
    last_revision integer;
    pending text[];
    value record;
    bare idempo.operations%ROWTYPE;
    said record;
    four_eyes boolean;
    touched_as text;
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.check_namespace(p_namespace);
    PERFORM idempo.check_identifier(p_key, 'p_key', true, 255);
    PERFORM idempo.check_identifier(p_approval_id, 'p_approval_id', true, 255);
    PERFORM idempo.check_identifier(p_external_reference, 'p_external_reference', false, 255);
    IF p_decision IS NULL OR p_decision NOT IN ('redispatch', 'confirm', 'reject') THEN
        PERFORM idempo.raise('ID004', 'p_decision must be redispatch, confirm or reject, not '
                                      || coalesce(to_json(p_decision)::text, 'NULL'));
    END IF;
    IF p_extra_attempts IS NULL OR p_extra_attempts NOT BETWEEN 1 AND 100 THEN
        PERFORM idempo.raise('ID004', 'p_extra_attempts must be 1..100, not ' || coalesce(p_extra_attempts::text, 'NULL'));
    END IF;
    IF p_retention_ms IS NULL OR p_retention_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retention_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_retention_ms::text, 'NULL'));
    END IF;
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin', 'approver'], 'approve or reject operations',
                                'idempo_approver or idempo_admin', p_reason);

    SELECT * INTO o FROM idempo.operations AS x WHERE x.namespace = p_namespace AND x.operation_key = p_key FOR UPDATE;
    SELECT * INTO a FROM idempo.approvals AS x WHERE x.approval_id = p_approval_id;
    IF FOUND THEN
        IF a.namespace <> p_namespace OR a.operation_key <> p_key OR a.decision <> p_decision
           OR a.external_reference <> p_external_reference THEN
            PERFORM idempo.raise('ID008', 'approval id ''' || p_approval_id || ''' was already used for another decision or operation');
        END IF;
        RETURN ROW('replayed', a.approval_id, a.namespace, a.operation_key, a.revision, a.decision, a.reason, a.operator,
                   a.role, a.external_reference, a.proposal, a.status, a.operation_version, a.created_at_ms,
                   NULL)::idempo.approval_answer;
    END IF;
    IF o.id IS NULL THEN
        PERFORM idempo.raise('ID005', 'no operation ''' || p_key || ''' in namespace ''' || p_namespace || '''');
    END IF;
    IF NOT (o.state = 'confirmation_required' OR (o.state = 'awaiting_approval' AND p_decision <> 'confirm')) THEN
        PERFORM idempo.raise('ID007', 'an operation in ' || o.state || ' cannot take the decision ' || p_decision);
    END IF;
    IF p_decision = 'confirm' AND p_external_reference = '' THEN
        PERFORM idempo.raise('ID008', 'confirming needs the external reference that proves the effect');
    END IF;
    IF p_decision <> 'confirm' AND p_external_reference <> '' THEN
        PERFORM idempo.raise('ID008', 'an external reference belongs to a confirm decision only');
    END IF;
    -- Four-eyes is by identity: the logins (and labels) of the first and the latest event.
    SELECT touched.what INTO touched_as FROM (
               (SELECT 1 AS n, 'requested' AS what, e.login, e.actor FROM idempo.operation_events AS e
                WHERE e.operation_id = o.id ORDER BY e.id LIMIT 1)
               UNION ALL
               (SELECT 2, 'last touched', e.login, e.actor FROM idempo.operation_events AS e
                WHERE e.operation_id = o.id ORDER BY e.id DESC LIMIT 1)
           ) AS touched
    WHERE touched.login = me.who OR touched.actor = me.who
       OR (touched.login = session_user AND me.who = session_user::text)
    ORDER BY touched.n LIMIT 1;
    IF touched_as IS NOT NULL THEN
        PERFORM idempo.raise('ID008', me.who || ' ' || touched_as || ' this operation and cannot approve it');
    END IF;

    proposal_hash := idempo.sha256_hex('{"decision":' || to_json(p_decision)::text || ',"reference":'
                                  || to_json(p_external_reference)::text || ',"version":' || o.operation_version || '}');
    SELECT coalesce(max(x.revision), 0) INTO last_revision FROM idempo.approvals AS x
    WHERE x.namespace = p_namespace AND x.operation_key = p_key;
    SELECT coalesce(array_agg(x.approval_id ORDER BY x.created_at_ms, x.approval_id), '{}') INTO pending
    FROM idempo.approvals AS x
    WHERE x.namespace = p_namespace AND x.operation_key = p_key AND x.revision = last_revision AND x.status = 'pending'
      AND x.proposal = proposal_hash;
    IF EXISTS (SELECT FROM idempo.approvals AS x WHERE x.approval_id = ANY (pending) AND (x.operator = me.who OR x.login = session_user AND NOT idempo.is_owner())) THEN
        PERFORM idempo.raise('ID008', 'four-eyes: ' || me.who || ' already approved this proposal; a second, different approver is needed');
    END IF;
    value := idempo.operation_value(o);
    -- What the payload says counts too: a declared value smaller than the payload's amount does
    -- not take a large payment past the second approver.
    bare := o;
    bare.value_minor := NULL;
    bare.value_currency := NULL;
    said := idempo.operation_value(bare);
    four_eyes := p_decision <> 'reject'
                 AND (value.minor IS NOT NULL AND idempo.needs_four_eyes(value.minor, value.currency)
                      OR said.minor IS NOT NULL AND idempo.needs_four_eyes(said.minor, said.currency));

    INSERT INTO idempo.approvals AS x (approval_id, namespace, operation_key, revision, decision, reason, operator, role,
                                       external_reference, proposal, status, operation_version, created_at_ms, login)
    VALUES (p_approval_id, p_namespace, p_key, CASE WHEN cardinality(pending) = 0 THEN last_revision + 1 ELSE last_revision END,
            p_decision, p_reason, me.who, me.role, p_external_reference, proposal_hash,
            CASE WHEN four_eyes AND cardinality(pending) = 0 THEN 'pending' ELSE 'applied' END, o.operation_version, now_ms,
            session_user)
    ON CONFLICT (approval_id) DO NOTHING
    RETURNING * INTO a;
    IF NOT FOUND THEN
        PERFORM idempo.raise('ID008', 'approval id ''' || p_approval_id || ''' was already used for another decision or operation');
    END IF;
    before := o;
    IF a.status = 'applied' THEN
        UPDATE idempo.approvals AS x SET status = 'seconded' WHERE x.approval_id = ANY (pending) AND x.status = 'pending';
        o := idempo.move(o, o.state, o.fencing_token,
                         CASE p_decision WHEN 'redispatch' THEN 'received' WHEN 'confirm' THEN 'succeeded' ELSE 'failed_terminal' END,
                         me.who, p_decision || ' by ' || me.who || ' (approval ' || p_approval_id || '): ' || p_reason,
                         NULL,
                         CASE WHEN p_decision = 'confirm'
                              THEN '{"approval_id":' || to_json(p_approval_id)::text || ',"confirmed_by":' || to_json(me.who)::text
                                   || ',"external_reference":' || to_json(p_external_reference)::text || '}' END,
                         CASE WHEN p_decision = 'reject' THEN 'policy_denied' END,
                         CASE WHEN p_decision = 'reject' THEN 'rejected by ' || me.who || ': ' || p_reason END,
                         NULL, NULL,
                         CASE WHEN p_decision = 'redispatch'
                              THEN CASE WHEN o.state = 'awaiting_approval' THEN o.max_attempts - o.attempt ELSE p_extra_attempts END END,
                         p_retention_ms, now_ms);
    ELSE
        pending := '{}';
    END IF;
    audit := idempo.append_audit(now_ms, me.who, me.role, CASE WHEN p_decision = 'reject' THEN 'reject' ELSE 'approve' END,
                                 p_namespace || '/' || p_key, p_reason, idempo.operation_snapshot(before),
                                 idempo.operation_snapshot(o), p_approval_id,
                                 '{"decision":' || to_json(p_decision)::text || ',"external_reference":'
                                 || to_json(p_external_reference)::text || ',"four_eyes":' || four_eyes::text
                                 || ',"login":' || to_json(session_user::text)::text || ',"revision":' || a.revision
                                 || ',"seconds":' || to_json(pending)::text || ',"status":' || to_json(a.status)::text || '}');
    RETURN ROW(a.status, a.approval_id, a.namespace, a.operation_key, a.revision, a.decision, a.reason, a.operator, a.role,
               a.external_reference, a.proposal, a.status, a.operation_version, a.created_at_ms,
               audit.seq)::idempo.approval_answer;
END
$$;

SELECT idempo.grant_execute('idempo.approve(text,text,text,text,text,text,integer,bigint,text,text,bigint,bigint)', 'idempo_admin', 'idempo_approver');
