-- SPDX-License-Identifier: Apache-2.0

-- A guarded run action (runactioncommand.h): resume a halted run adding to its limits, or set
-- its limits (p_limits: failed_dispatches, no_progress_s, spend_minor with spend_currency,
-- tokens; a key present changes that limit, null removes it). Reason, role, idempotency by
-- request id, four-eyes when the spend cap rises by more than four_eyes_above, all under the
-- run's row lock; answers `applied`, `pending` (waits for a second identity) or `replayed`.
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

SELECT idempo.grant_execute('idempo.run_action(text,text,text,text,text,bigint,bigint,text,bigint,jsonb,text,text,bigint,bigint)', 'idempo_admin', 'idempo_operator');
