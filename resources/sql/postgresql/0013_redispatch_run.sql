-- SPDX-License-Identifier: Apache-2.0
-- Schema 13: a re-dispatch is judged, and charged, by the run its record belongs to; a run
-- action's request id answers only the same ask.
--
-- Until now the budget step of a claim that dispatches an existing record (a retry, a lapsed
-- lease taken over) looked up the run the claim named: a retry loop that left out the run id, or
-- passed another, went on dispatching a halted run's operations, and their failures still
-- counted against the halted run. The record's run governs now, whatever the claim says; a new
-- record still belongs to the run its first claim names. Only the re-dispatch branch of
-- idempo.claim changes (same signature, so its grants stay).
--
-- idempo.run_action answered a reused request id with `replayed` whatever was asked under it:
-- other figures, or another identity, got "already done" while nothing of theirs was applied.
-- Now the same id must carry the same ask (the run's version aside) from the same identity, or
-- it is refused (ID008); a repeat of a request still waiting for its second identity answers
-- `pending` again, not `replayed`.
--
-- Four-eyes on the spend cap looked at each raise alone: one identity walked a cap up to any
-- height in steps below the threshold. Now a raise that takes the cap above four_eyes_above
-- needs a second identity, however small it is; a first cap on a run that had none narrows it
-- and needs one.

CREATE OR REPLACE FUNCTION idempo.claim(
    p_namespace text, p_key text, p_payload text, p_payload_sha256 text, p_owner text,
    p_tool_kind text DEFAULT 'protected_write', p_lease_ms bigint DEFAULT 30000, p_max_attempts integer DEFAULT 3,
    p_requires_approval boolean DEFAULT false, p_run_id text DEFAULT '', p_step_id text DEFAULT '',
    p_target text DEFAULT '', p_fingerprint_fields text DEFAULT '[]', p_fingerprint text DEFAULT NULL,
    p_value_minor bigint DEFAULT NULL, p_value_currency text DEFAULT NULL, p_record_schema integer DEFAULT 1,
    p_cost_minor bigint DEFAULT NULL, p_cost_currency text DEFAULT NULL, p_tokens bigint DEFAULT 0,
    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.claim_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o idempo.operations%ROWTYPE;
    fingerprint text := coalesce(p_fingerprint, p_payload_sha256);
    first_write boolean := pg_current_xact_id_if_assigned() IS NULL;
    wrote boolean := false;
    present boolean;
    now_ms bigint;
    outcome text;
    prior_state text;
    prior_owner text;
    detail text;
    exhausted idempo.budget_answer;
    budgeted boolean := p_run_id <> '' AND NOT p_requires_approval;
BEGIN
    IF p_namespace IS NULL OR p_namespace !~ '^[A-Za-z0-9._-]{1,63}$' OR p_key = ''
       OR NOT idempo.is_printable(p_key, 255) OR p_owner = '' OR NOT idempo.is_printable(p_owner, 255)
       OR NOT idempo.is_printable(p_run_id, 255) OR NOT idempo.is_printable(p_step_id, 255)
       OR NOT idempo.is_printable(p_target, 255)
       OR p_tool_kind IS NULL OR p_tool_kind NOT IN ('read', 'idempotent_write', 'protected_write')
       OR p_lease_ms IS NULL OR p_lease_ms NOT BETWEEN 1 AND 86400000
       OR p_max_attempts IS NULL OR p_max_attempts NOT BETWEEN 1 AND 100
       OR p_requires_approval IS NULL OR p_record_schema IS NULL
       OR p_payload IS NULL OR octet_length(p_payload) > 1048576
       OR p_payload_sha256 IS NULL OR p_payload_sha256 <> idempo.sha256_hex(p_payload)
       OR fingerprint IS NULL OR fingerprint !~ '^[0-9a-f]{64}$'
       OR (p_fingerprint_fields IS DISTINCT FROM '[]' OR fingerprint <> p_payload_sha256)
       OR (p_value_minor IS NULL) <> (p_value_currency IS NULL) OR p_value_minor < 0
       OR p_value_minor >= 1000000000000000000 OR p_value_currency !~ '^[A-Z]{3}$'
       OR NOT idempo.is_json(p_payload) THEN
        -- Fingerprint fields other than [] are the one valid case the fast check sends here.
        PERFORM idempo.check_claim(p_namespace, p_key, p_payload, p_payload_sha256, p_owner, p_tool_kind, p_lease_ms,
                                   p_max_attempts, p_requires_approval, p_run_id, p_step_id, p_target,
                                   p_fingerprint_fields, fingerprint, p_value_minor, p_value_currency, p_record_schema);
    END IF;
    IF (p_cost_minor IS NULL) <> (p_cost_currency IS NULL) OR p_cost_minor < 0 OR p_cost_minor >= 1000000000000000000
       OR p_cost_currency !~ '^[A-Z]{3}$' OR p_tokens IS NULL OR p_tokens NOT BETWEEN 0 AND 1000000000000 THEN
        PERFORM idempo.raise('ID004', 'p_cost_minor and p_cost_currency go together (a non-negative amount in minor '
                                      || 'units and an ISO 4217 code such as EUR); p_tokens must be 0..10^12');
    END IF;
    IF (p_cost_minor IS NOT NULL OR p_tokens > 0) AND p_run_id = '' THEN
        PERFORM idempo.raise('ID004', 'a cost or tokens count against a run''s budget: name the run (p_run_id)');
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;

    SELECT * INTO o FROM idempo.operations AS x WHERE x.namespace = p_namespace AND x.operation_key = p_key;
    present := FOUND;
    IF present THEN
        now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
        IF o.retention_expires_at_ms > now_ms OR o.retention_expires_at_ms IS NULL THEN
            IF NOT idempo.same_projection(o.fingerprint_fields, p_fingerprint_fields) THEN
                outcome := 'projection_differs';
            ELSIF o.payload_fingerprint <> fingerprint THEN
                outcome := 'payload_mismatch';
            ELSIF o.state IN ('succeeded', 'failed_terminal') THEN
                outcome := 'replayed';
            END IF;
        END IF;
    END IF;

    -- Every other case decides on the locked record, with the clock read once the lock is held.
    -- A key another claim inserted after this statement's snapshot conflicts on insert; the
    -- next round's statement sees and locks it.
    FOR pass IN 1..8 LOOP
        EXIT WHEN outcome IS NOT NULL;
        SELECT * INTO o FROM idempo.operations AS x
        WHERE x.namespace = p_namespace AND x.operation_key = p_key FOR UPDATE;
        present := FOUND;
        now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
        IF NOT present OR o.retention_expires_at_ms <= now_ms THEN
            IF budgeted THEN
                exhausted := idempo.check_run(p_namespace, p_run_id, p_cost_minor, p_cost_currency, p_tokens, false, now_ms);
                IF exhausted.budget IS NOT NULL THEN
                    outcome := 'budget_exhausted';
                    EXIT;
                END IF;
            END IF;
            IF NOT present THEN
                INSERT INTO idempo.operations AS x (namespace, operation_key, run_id, step_id, target, tool_kind, state,
                    payload, payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner,
                    lease_expires_at_ms, fencing_token, created_at_ms, updated_at_ms, operation_version, schema_version,
                    value_minor, value_currency, changed_xid)
                VALUES (p_namespace, p_key, p_run_id, p_step_id, p_target, p_tool_kind,
                    CASE WHEN p_requires_approval THEN 'awaiting_approval' ELSE 'dispatching' END,
                    p_payload, fingerprint, p_fingerprint_fields, CASE WHEN p_requires_approval THEN 0 ELSE 1 END,
                    p_max_attempts, CASE WHEN p_requires_approval THEN '' ELSE p_owner END,
                    CASE WHEN p_requires_approval THEN NULL ELSE now_ms + p_lease_ms END,
                    CASE WHEN p_requires_approval THEN 0 ELSE nextval('idempo.fencing_sequence') END,
                    now_ms, now_ms, 1, p_record_schema, p_value_minor, p_value_currency, pg_current_xact_id())
                ON CONFLICT (namespace, operation_key) DO NOTHING
                RETURNING * INTO o;
                CONTINUE WHEN NOT FOUND;
                detail := 'created';
            ELSE
                -- Retention expired: a new operation under the same key, without the old history.
                DELETE FROM idempo.operation_events AS ev WHERE ev.operation_id = o.id;
                UPDATE idempo.operations AS x SET
                    id = DEFAULT, run_id = p_run_id, step_id = p_step_id, target = p_target, tool_kind = p_tool_kind,
                    state = CASE WHEN p_requires_approval THEN 'awaiting_approval' ELSE 'dispatching' END,
                    payload = p_payload, payload_fingerprint = fingerprint, fingerprint_fields = p_fingerprint_fields,
                    attempt = CASE WHEN p_requires_approval THEN 0 ELSE 1 END, max_attempts = p_max_attempts,
                    lease_owner = CASE WHEN p_requires_approval THEN '' ELSE p_owner END,
                    lease_expires_at_ms = CASE WHEN p_requires_approval THEN NULL ELSE now_ms + p_lease_ms END,
                    fencing_token = CASE WHEN p_requires_approval THEN 0 ELSE nextval('idempo.fencing_sequence') END,
                    next_attempt_at_ms = NULL, error_class = NULL, error_detail = '', result = '', receipt = '',
                    created_at_ms = now_ms, updated_at_ms = now_ms, retention_expires_at_ms = NULL,
                    operation_version = 1, schema_version = p_record_schema, value_minor = p_value_minor,
                    value_currency = p_value_currency, changed_xid = pg_current_xact_id()
                WHERE x.id = o.id
                RETURNING * INTO o;
                detail := 'created (previous record expired)';
            END IF;
            outcome := CASE WHEN p_requires_approval THEN 'in_progress' ELSE 'claimed' END;
            wrote := true;
            IF budgeted THEN
                PERFORM idempo.spend_run(p_namespace, p_run_id, p_cost_minor, p_cost_currency, p_tokens, now_ms);
            END IF;
            INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt, actor,
                                                 error_class, detail, login)
            VALUES (o.id, o.updated_at_ms, NULL, o.state, o.fencing_token, o.attempt, p_owner, NULL, detail, session_user);
            EXIT;
        END IF;
        prior_state := o.state;
        prior_owner := o.lease_owner;
        IF NOT idempo.same_projection(o.fingerprint_fields, p_fingerprint_fields) THEN
            outcome := 'projection_differs';
        ELSIF o.payload_fingerprint <> fingerprint THEN
            outcome := 'payload_mismatch';
        ELSIF o.state IN ('succeeded', 'failed_terminal') THEN
            outcome := 'replayed';
        ELSIF o.state IN ('awaiting_approval', 'confirmation_required') THEN
            outcome := 'in_progress';
        ELSIF o.state = 'unknown_outcome' THEN
            outcome := 'reconcile_required';
        ELSIF o.state IN ('received', 'failed_retryable') AND o.next_attempt_at_ms > now_ms THEN
            outcome := 'retry_later';
        ELSIF o.state = 'dispatching' AND o.lease_expires_at_ms > now_ms THEN
            outcome := 'in_progress';
        ELSIF o.state = 'dispatching' AND o.tool_kind = 'protected_write' THEN
            -- A lapsed lease on a protected write: the effect may have happened; reconcile first.
            UPDATE idempo.operations AS x SET
                state = 'unknown_outcome', fencing_token = nextval('idempo.fencing_sequence'),
                lease_expires_at_ms = NULL, error_class = 'unknown_outcome',
                error_detail = 'lease of ' || x.lease_owner || ' lapsed during a protected write',
                updated_at_ms = now_ms, operation_version = x.operation_version + 1, changed_xid = pg_current_xact_id()
            WHERE x.id = o.id
            RETURNING * INTO o;
            outcome := 'reconcile_required';
            wrote := true;
            INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt,
                                                 actor, error_class, detail, login)
            VALUES (o.id, o.updated_at_ms, prior_state, o.state, o.fencing_token, o.attempt, p_owner, o.error_class,
                    o.error_detail, session_user);
        ELSE
            -- Received or retryable after its backoff, or a lapsed lease on a read or idempotent write,
            -- unless the run is out of budget: then nothing dispatches and the record stays as it is.
            IF o.run_id <> '' THEN
                exhausted := idempo.check_run(o.namespace, o.run_id, p_cost_minor, p_cost_currency, p_tokens, true, now_ms);
            END IF;
            IF exhausted.budget IS NOT NULL THEN
                outcome := 'budget_exhausted';
            ELSE
                UPDATE idempo.operations AS x SET
                    state = 'dispatching', fencing_token = nextval('idempo.fencing_sequence'), attempt = x.attempt + 1,
                    lease_owner = p_owner, lease_expires_at_ms = now_ms + p_lease_ms, next_attempt_at_ms = NULL,
                    updated_at_ms = now_ms, operation_version = x.operation_version + 1,
                    changed_xid = pg_current_xact_id()
                WHERE x.id = o.id
                RETURNING * INTO o;
                outcome := 'claimed';
                wrote := true;
                INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt,
                                                     actor, error_class, detail, login)
                VALUES (o.id, o.updated_at_ms, prior_state, o.state, o.fencing_token, o.attempt, p_owner,
                        o.error_class,
                        CASE WHEN prior_state = 'dispatching' THEN 'lease of ' || prior_owner || ' lapsed; taken over'
                             ELSE 'claimed' END,
                        session_user);
                IF o.run_id <> '' THEN
                    PERFORM idempo.spend_run(o.namespace, o.run_id, p_cost_minor, p_cost_currency, p_tokens, now_ms);
                END IF;
            END IF;
        END IF;
    END LOOP;
    IF outcome IS NULL THEN
        RAISE EXCEPTION 'claim of % kept racing concurrent writers of the same key; try again', p_key
            USING ERRCODE = '40001';
    END IF;

    IF outcome = 'budget_exhausted' THEN
        -- A halt may have been written; a key never claimed (or expired) answers an unsaved record.
        wrote := true;
        IF NOT present OR o.retention_expires_at_ms <= now_ms THEN
            o.id := 0; o.namespace := p_namespace; o.operation_key := p_key; o.run_id := p_run_id;
            o.step_id := p_step_id; o.target := p_target; o.tool_kind := p_tool_kind; o.state := 'received';
            o.payload := p_payload; o.payload_fingerprint := fingerprint; o.fingerprint_fields := p_fingerprint_fields;
            o.attempt := 0; o.max_attempts := p_max_attempts; o.lease_owner := ''; o.lease_expires_at_ms := NULL;
            o.fencing_token := 0; o.next_attempt_at_ms := NULL; o.error_class := NULL; o.error_detail := '';
            o.result := ''; o.receipt := ''; o.created_at_ms := now_ms; o.updated_at_ms := now_ms;
            o.retention_expires_at_ms := NULL; o.operation_version := 1; o.schema_version := p_record_schema;
            o.value_minor := p_value_minor; o.value_currency := p_value_currency;
        END IF;
    END IF;
    IF outcome NOT IN ('claimed', 'projection_differs') THEN
        INSERT INTO idempo.suppressions (namespace, operation_key, at_ms, outcome, state, source, fingerprint)
        VALUES (p_namespace, p_key, now_ms, outcome, o.state, p_owner, fingerprint);
        IF first_write AND NOT wrote THEN
            PERFORM set_config('synchronous_commit', 'off', true);
        END IF;
    END IF;
    RETURN ROW(outcome, o.id, o.namespace, o.operation_key, o.run_id, o.step_id, o.target, o.tool_kind, o.state,
               o.payload, o.payload_fingerprint, o.fingerprint_fields, o.attempt, o.max_attempts, o.lease_owner,
               o.lease_expires_at_ms, o.fencing_token, o.next_attempt_at_ms, o.error_class, o.error_detail, o.result,
               o.receipt, o.created_at_ms, o.updated_at_ms, o.retention_expires_at_ms, o.operation_version,
               o.schema_version, o.value_minor, o.value_currency, exhausted.budget, exhausted.used, exhausted.budget_limit, exhausted.requested,
               exhausted.currency, exhausted.detail)::idempo.claim_answer;
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
    threshold bigint;
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
    threshold := CASE WHEN a.currency <> '' THEN
        idempo.major_to_minor(nullif((SELECT s.value FROM idempo.guard_settings AS s WHERE s.name = 'four_eyes_above'), ''),
                              a.currency) END;
    -- Raising the cap to above the threshold needs two identities, however small the step.
    waits := threshold IS NOT NULL AND raise_minor > 0 AND (a.spend_limit_minor IS NULL OR a.spend_limit_minor > threshold)
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
