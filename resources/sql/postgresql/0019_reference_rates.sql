-- SPDX-License-Identifier: Apache-2.0
-- Schema version 19: four-eyes in one reference currency. The guard setting reference_rates
-- ("EUR USD=0.92 JPY=0.0061": the reference currency, then what one unit of each other currency
-- is worth in it) states every amount in the reference currency; four_eyes_above is then in it,
-- and a currency without a rate always needs two approvers. Without rates the threshold applies
-- as written in every currency, as before. idempo.approve, idempo.run_action and
-- idempo.set_guard_setting are replaced whole (CREATE OR REPLACE keeps their grants); only their
-- four-eyes test and the setting's validation change; approve also weighs the payload's own
-- amount when the claim declared a different value. money.h needsFourEyes() is the same
-- comparison for the embedded ledger.

-- Refuses (ID004, naming what is wrong) text that is not a reference_rates setting.
CREATE FUNCTION idempo.check_reference_rates(p_value text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    part text;
    seen text[];
BEGIN
    seen := ARRAY[split_part(p_value, ' ', 1)];
    IF seen[1] !~ '^[A-Z]{3}$' THEN
        PERFORM idempo.raise('ID004', 'reference_rates must start with the reference currency (three capital letters, '
                                      || 'e.g. EUR), not ' || to_json(seen[1])::text);
    END IF;
    FOR part IN SELECT u.t FROM unnest(string_to_array(p_value, ' ')) WITH ORDINALITY AS u(t, n) WHERE u.n > 1 LOOP
        IF part !~ '^[A-Z]{3}=[0-9]{1,9}(\.[0-9]{1,9})?$' THEN
            PERFORM idempo.raise('ID004', 'each rate of reference_rates is CUR=RATE (e.g. USD=0.92, up to 9 decimals, single '
                                          || 'spaces between), not ' || to_json(part)::text);
        END IF;
        IF split_part(part, '=', 2)::numeric = 0 THEN
            PERFORM idempo.raise('ID004', 'the rate of ' || split_part(part, '=', 1) || ' must be above zero');
        END IF;
        IF split_part(part, '=', 1) = ANY (seen) THEN
            PERFORM idempo.raise('ID004', 'reference_rates names ' || split_part(part, '=', 1) || ' twice');
        END IF;
        seen := seen || split_part(part, '=', 1);
    END LOOP;
END
$$;

-- Whether approving p_minor of p_currency takes a second approver (money.h needsFourEyes):
-- exact numeric comparisons, no division.
CREATE FUNCTION idempo.needs_four_eyes(p_minor bigint, p_currency text) RETURNS boolean
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    threshold numeric := replace(nullif((SELECT s.value FROM idempo.guard_settings AS s WHERE s.name = 'four_eyes_above'), ''),
                                 ',', '')::numeric;
    rates text := nullif((SELECT s.value FROM idempo.guard_settings AS s WHERE s.name = 'reference_rates'), '');
    scale numeric := 10::numeric ^ idempo.currency_exponent(coalesce(p_currency, ''));
    rate numeric;
BEGIN
    IF p_minor IS NULL OR threshold IS NULL THEN
        RETURN false;
    END IF;
    IF rates IS NULL THEN
        RETURN p_minor > threshold * scale;
    END IF;
    IF p_currency = split_part(rates, ' ', 1) THEN
        rate := 1;
    ELSE
        SELECT split_part(t.part, '=', 2)::numeric INTO rate FROM unnest(string_to_array(rates, ' ')) AS t(part)
        WHERE split_part(t.part, '=', 1) = p_currency;
    END IF;
    RETURN rate IS NULL OR p_minor * rate > threshold * scale;
END
$$;
REVOKE ALL ON FUNCTION idempo.check_reference_rates(text), idempo.needs_four_eyes(bigint, text) FROM PUBLIC;

-- Guard settings: reference_rates joins them.
CREATE OR REPLACE FUNCTION idempo.set_guard_setting(p_name text, p_value text, p_reason text, p_as_name text DEFAULT NULL,
                                                    p_as_role text DEFAULT NULL, p_clock_pinned_ms bigint DEFAULT NULL,
                                                    p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    previous text;
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin'], 'change guard settings', 'idempo_admin', p_reason);
    IF p_name IS NULL OR p_name NOT IN ('four_eyes_above', 'reference_rates', 'run_failed_dispatches', 'run_no_progress_s',
                                        'run_spend_cap', 'run_token_cap') THEN
        PERFORM idempo.raise('ID004', 'unknown guard setting ' || coalesce(to_json(p_name)::text, 'NULL'));
    END IF;
    IF p_value IS NULL THEN
        PERFORM idempo.raise('ID004', 'the value of ' || p_name || ' must not be NULL');
    END IF;
    IF p_name = 'four_eyes_above' AND p_value <> '' AND idempo.major_to_minor(p_value, '') IS NULL THEN
        PERFORM idempo.raise('ID004', 'the four-eyes threshold must be a non-negative amount such as 1000.00, not '
                                      || to_json(p_value)::text);
    END IF;
    IF p_name = 'reference_rates' AND p_value <> '' THEN
        PERFORM idempo.check_reference_rates(p_value);
    END IF;
    IF p_name = 'run_spend_cap' AND p_value <> ''
       AND (p_value !~ '^[0-9]+(\.[0-9]+)? [A-Z]{3}$'
            OR idempo.major_to_minor(split_part(p_value, ' ', 1), split_part(p_value, ' ', 2)) IS NULL) THEN
        PERFORM idempo.raise('ID004', 'the run spend cap must be an amount such as 100.00 EUR, not ' || to_json(p_value)::text);
    END IF;
    IF p_name IN ('run_failed_dispatches', 'run_no_progress_s', 'run_token_cap') AND p_value <> ''
       AND (p_value !~ '^[0-9]{1,15}$' OR p_value::bigint < 1) THEN
        PERFORM idempo.raise('ID004', p_name || ' must be a positive whole number (or empty for no limit), not '
                                      || to_json(p_value)::text);
    END IF;
    SELECT s.value INTO previous FROM idempo.guard_settings AS s WHERE s.name = p_name FOR UPDATE;
    INSERT INTO idempo.guard_settings (name, value) VALUES (p_name, p_value)
    ON CONFLICT (name) DO UPDATE SET value = excluded.value;
    audit := idempo.append_audit(now_ms, me.who, me.role, 'setting', 'setting:' || p_name, p_reason,
                                 coalesce(to_json(previous)::text, 'null'), to_json(p_value)::text, '', '');
    RETURN audit.seq;
END
$$;

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
    IF p_extra_attempts IS NULL OR p_extra_attempts NOT BETWEEN 1 AND 100 OR p_retention_ms IS NULL OR p_retention_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_extra_attempts must be 1..100 and p_retention_ms not negative');
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
    IF EXISTS (SELECT FROM (
                   (SELECT e.login, e.actor FROM idempo.operation_events AS e WHERE e.operation_id = o.id ORDER BY e.id LIMIT 1)
                   UNION ALL
                   (SELECT e.login, e.actor FROM idempo.operation_events AS e WHERE e.operation_id = o.id ORDER BY e.id DESC LIMIT 1)
               ) AS touched
               WHERE touched.login = me.who OR touched.actor = me.who
                  OR (touched.login = session_user AND me.who = session_user::text)) THEN
        PERFORM idempo.raise('ID008', me.who || ' requested or last touched this operation and cannot approve it');
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

CREATE OR REPLACE FUNCTION idempo.run_action(p_namespace text, p_run_id text, p_request_id text, p_action text, p_reason text,
                                  p_add_failed bigint DEFAULT 0, p_add_spend_minor bigint DEFAULT NULL,
                                  p_add_spend_currency text DEFAULT NULL, p_add_tokens bigint DEFAULT 0,
                                  p_limits jsonb DEFAULT '{}', p_as_name text DEFAULT NULL, p_as_role text DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS TABLE (run_status text, run_audit_seq bigint) LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    r idempo.runs%ROWTYPE;
    a idempo.runs%ROWTYPE;
    earlier idempo.run_actions%ROWTYPE;
    asked text;
    raise_minor bigint := 0;
    partners text[];
    waits boolean;
    still text;
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin', 'operator'], 'resume runs or change their budgets',
                                'idempo_operator or idempo_admin', p_reason);
    IF p_action IS NULL OR p_action NOT IN ('resume', 'budget') THEN
        PERFORM idempo.raise('ID004', 'p_action must be resume or budget, not ' || coalesce(to_json(p_action)::text, 'NULL'));
    END IF;
    PERFORM idempo.check_identifier(p_request_id, 'p_request_id', true, 255);
    IF p_add_failed IS NULL OR p_add_failed NOT BETWEEN 0 AND 1000000000000000
       OR p_add_tokens IS NULL OR p_add_tokens NOT BETWEEN 0 AND 1000000000000000
       OR (p_add_spend_minor IS NULL) <> (p_add_spend_currency IS NULL) OR p_add_spend_minor < 0
       OR p_add_spend_minor > 1000000000000000000 OR p_add_spend_currency !~ '^[A-Z]{3}$' THEN
        PERFORM idempo.raise('ID004', 'additions must be 0..10^15 (p_add_spend_minor with its ISO 4217 p_add_spend_currency)');
    END IF;
    IF p_limits IS NULL OR jsonb_typeof(p_limits) <> 'object' OR EXISTS (
           SELECT FROM jsonb_each(p_limits) AS l (name, value)
           WHERE l.name NOT IN ('failed_dispatches', 'no_progress_s', 'spend_minor', 'spend_currency', 'tokens')
              OR (l.name = 'spend_currency' AND NOT (jsonb_typeof(l.value) = 'string' AND l.value #>> '{}' ~ '^[A-Z]{3}$'))
              OR (l.name <> 'spend_currency' AND jsonb_typeof(l.value) <> 'null'
                  AND NOT CASE WHEN jsonb_typeof(l.value) = 'number' AND l.value::text ~ '^[0-9]{1,16}$'
                               THEN (l.value::text)::bigint BETWEEN 1 AND 1000000000000000 ELSE false END)) THEN
        PERFORM idempo.raise('ID004', 'p_limits must be an object of failed_dispatches, no_progress_s, spend_minor (with '
                                      || 'spend_currency) and tokens, each a positive whole number or null');
    END IF;

    SELECT * INTO earlier FROM idempo.run_actions AS q WHERE q.request_id = p_request_id;
    IF FOUND THEN
        -- What this call asks, the run's version aside (an IF condition cannot hold a CASE).
        asked := CASE WHEN p_action = 'resume'
                      THEN jsonb_build_object('action', 'resume', 'add_failed_dispatches', p_add_failed,
                                              'add_spend_minor', p_add_spend_minor, 'add_tokens', p_add_tokens)
                      ELSE jsonb_build_object('action', 'budget', 'limits', p_limits) END::text;
        IF earlier.namespace <> p_namespace OR earlier.run_id <> p_run_id OR earlier.action <> p_action
           OR earlier.operator <> me.who OR earlier.proposal::jsonb - 'run_version' <> asked::jsonb THEN
            PERFORM idempo.raise('ID008', 'request id ' || p_request_id || ' was used for another request ('
                                          || earlier.action || ' of run ' || earlier.run_id || ' by ' || earlier.operator
                                          || ': ' || earlier.proposal || '): give this one an id of its own');
        END IF;
        -- A request still waiting for its second identity is answered as what it is.
        RETURN QUERY SELECT CASE WHEN earlier.status = 'pending' THEN 'pending' ELSE 'replayed' END::text,
                            earlier.audit_seq;
        RETURN;
    END IF;
    SELECT * INTO r FROM idempo.runs AS x WHERE x.namespace = p_namespace AND x.run_id = p_run_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM idempo.raise('ID005', 'no run ''' || p_run_id || ''' in namespace ''' || p_namespace
                                      || ''': a claim naming it makes one');
    END IF;
    a := r;
    IF p_action = 'resume' THEN
        IF r.state <> 'halted' THEN
            PERFORM idempo.raise('ID007', 'run ''' || p_run_id || ''' is ' || r.state
                                          || ', not halted: only a halted run is resumed');
        END IF;
        IF p_add_failed > 0 AND r.failed_dispatch_limit IS NULL THEN
            PERFORM idempo.raise('ID008', 'run ''' || p_run_id || ''' has no failed-dispatch limit to add to');
        END IF;
        IF p_add_tokens > 0 AND r.token_limit IS NULL THEN
            PERFORM idempo.raise('ID008', 'run ''' || p_run_id || ''' has no token cap to add to');
        END IF;
        IF p_add_spend_minor IS NOT NULL AND r.spend_limit_minor IS NULL THEN
            PERFORM idempo.raise('ID008', 'run ''' || p_run_id || ''' has no spend cap to add to');
        END IF;
        IF p_add_spend_currency IS NOT NULL AND r.currency <> '' AND p_add_spend_currency <> r.currency THEN
            PERFORM idempo.raise('ID008', 'run ''' || p_run_id || ''' counts its spend in ' || r.currency || ', not '
                                          || p_add_spend_currency);
        END IF;
        a.failed_dispatch_limit := r.failed_dispatch_limit + p_add_failed;
        a.spend_limit_minor := r.spend_limit_minor + coalesce(p_add_spend_minor, 0);
        a.token_limit := r.token_limit + p_add_tokens;
        a.state := 'active';
        a.last_progress_at_ms := now_ms;
        a.halt_budget := NULL;
        a.halted_at_ms := NULL;
        a.halt_detail := '';
        raise_minor := coalesce(p_add_spend_minor, 0);
        IF coalesce(r.halt_budget, 'failed_dispatches') = 'failed_dispatches' AND a.failed_dispatch_limit IS NOT NULL
           AND a.failed_dispatches >= a.failed_dispatch_limit THEN
            still := 'failed dispatches (' || a.failed_dispatches || ' of ' || a.failed_dispatch_limit
                     || '): add some with --add-failed N';
        ELSIF r.halt_budget = 'spend' AND p_add_spend_minor IS NULL THEN
            still := 'spend (' || r.halt_detail || '): add some with --add-spend AMOUNT';
        ELSIF r.halt_budget = 'tokens' AND p_add_tokens = 0 THEN
            still := 'tokens (' || r.halt_detail || '): add some with --add-tokens N';
        END IF;
        IF still IS NOT NULL THEN
            PERFORM idempo.raise('ID008', 'run ''' || p_run_id || ''' would still be out of ' || still);
        END IF;
        asked := idempo.canonical_json(jsonb_build_object('action', 'resume', 'run_version', r.run_version,
            'add_failed_dispatches', p_add_failed, 'add_spend_minor', p_add_spend_minor, 'add_tokens', p_add_tokens));
    ELSE
        IF p_limits - 'spend_currency' = '{}' THEN
            PERFORM idempo.raise('ID004', 'name at least one budget to set');
        END IF;
        IF p_limits ? 'failed_dispatches' THEN
            a.failed_dispatch_limit := (p_limits ->> 'failed_dispatches')::bigint;
        END IF;
        IF p_limits ? 'no_progress_s' THEN
            a.no_progress_ms := (p_limits ->> 'no_progress_s')::bigint * 1000;
        END IF;
        IF p_limits ? 'tokens' THEN
            a.token_limit := (p_limits ->> 'tokens')::bigint;
        END IF;
        IF p_limits ? 'spend_minor' THEN
            IF p_limits ->> 'spend_minor' IS NOT NULL THEN
                IF NOT p_limits ? 'spend_currency' THEN
                    PERFORM idempo.raise('ID004', 'spend_minor needs its spend_currency');
                END IF;
                IF r.currency <> '' AND p_limits ->> 'spend_currency' <> r.currency THEN
                    PERFORM idempo.raise('ID008', 'run ''' || p_run_id || ''' counts its spend in ' || r.currency
                                                  || ', not ' || (p_limits ->> 'spend_currency'));
                END IF;
                a.currency := p_limits ->> 'spend_currency';
            END IF;
            a.spend_limit_minor := (p_limits ->> 'spend_minor')::bigint;
            raise_minor := CASE WHEN a.spend_limit_minor IS NULL
                                THEN CASE WHEN r.spend_limit_minor IS NULL THEN 0 ELSE 1000000000000000000 END
                                WHEN r.spend_limit_minor IS NULL THEN 0 -- a first cap narrows the run
                                ELSE greatest(0, a.spend_limit_minor - r.spend_limit_minor) END;
        END IF;
        asked := idempo.canonical_json(jsonb_build_object('action', 'budget', 'run_version', r.run_version,
                                                             'limits', p_limits));
    END IF;
    a.updated_at_ms := now_ms;
    a.run_version := r.run_version + 1;

    IF EXISTS (SELECT FROM idempo.run_actions AS q WHERE q.namespace = p_namespace AND q.run_id = p_run_id
               AND q.status = 'pending' AND q.proposal = asked AND q.operator = me.who) THEN
        PERFORM idempo.raise('ID008', 'four-eyes: ' || me.who || ' already asked for this; a second, different '
                                      || 'identity is needed');
    END IF;
    partners := ARRAY(SELECT q.request_id FROM idempo.run_actions AS q
                      WHERE q.namespace = p_namespace AND q.run_id = p_run_id AND q.status = 'pending'
                        AND q.proposal = asked ORDER BY q.created_at_ms, q.request_id);
    -- Raising the cap to above the threshold needs two identities, however small the step.
    waits := a.currency <> ''
             AND nullif((SELECT s.value FROM idempo.guard_settings AS s WHERE s.name = 'four_eyes_above'), '') IS NOT NULL
             AND raise_minor > 0
             AND (a.spend_limit_minor IS NULL OR idempo.needs_four_eyes(a.spend_limit_minor, a.currency))
             AND cardinality(partners) = 0;
    audit := idempo.append_audit(now_ms, me.who, me.role, 'run_' || p_action, 'run:' || p_namespace || '/' || p_run_id,
                                 p_reason, idempo.canonical_json(to_jsonb(r)),
                                 idempo.canonical_json(to_jsonb(CASE WHEN waits THEN r ELSE a END)), p_request_id,
                                 idempo.canonical_json(jsonb_build_object('proposal', asked::jsonb, 'status',
                                     CASE WHEN waits THEN 'pending' ELSE 'applied' END, 'seconds', to_jsonb(partners))));
    INSERT INTO idempo.run_actions (request_id, namespace, run_id, action, proposal, status, operator, role, reason,
                                    audit_seq, created_at_ms)
    VALUES (p_request_id, p_namespace, p_run_id, p_action, asked, CASE WHEN waits THEN 'pending' ELSE 'applied' END,
            me.who, me.role, p_reason, audit.seq, now_ms);
    IF NOT waits THEN
        UPDATE idempo.run_actions AS q SET status = 'seconded' WHERE q.request_id = ANY (partners) AND q.status = 'pending';
        UPDATE idempo.runs AS x SET state = a.state, failed_dispatch_limit = a.failed_dispatch_limit,
            no_progress_ms = a.no_progress_ms, spend_limit_minor = a.spend_limit_minor, token_limit = a.token_limit,
            currency = a.currency, last_progress_at_ms = a.last_progress_at_ms, halted_at_ms = a.halted_at_ms,
            halt_budget = a.halt_budget, halt_detail = a.halt_detail, updated_at_ms = a.updated_at_ms,
            run_version = a.run_version
        WHERE x.namespace = p_namespace AND x.run_id = p_run_id;
    END IF;
    RETURN QUERY SELECT CASE WHEN waits THEN 'pending' ELSE 'applied' END, audit.seq;
END
$$;
