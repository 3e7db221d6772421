-- SPDX-License-Identifier: Apache-2.0
-- Schema version 12: run budgets (runbudget.h, docs/run-budgets.md). One record per
-- (namespace, run id), created by the first claim naming the run with the ledger's default
-- budgets (guard settings run_*); every dispatching claim checks and charges it inside
-- idempo.claim, under the run's row lock, so no two claims pass the same last unit. Failed
-- dispatches and progress are counted by a trigger on the history every write appends to.
-- Limits that are NULL do not limit; spend is in minor units of `currency`.

CREATE TABLE idempo.runs (
    namespace text NOT NULL,
    run_id text NOT NULL,
    state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'halted')),
    failed_dispatch_limit bigint,
    no_progress_ms bigint,
    spend_limit_minor bigint,
    token_limit bigint,
    currency text NOT NULL DEFAULT '',
    failed_dispatches bigint NOT NULL DEFAULT 0,
    spent_minor bigint NOT NULL DEFAULT 0,
    tokens_used bigint NOT NULL DEFAULT 0,
    last_progress_at_ms bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    halted_at_ms bigint,
    halt_budget text CHECK (halt_budget IN ('failed_dispatches', 'no_progress', 'spend', 'tokens')),
    halt_detail text NOT NULL DEFAULT '',
    run_version bigint NOT NULL DEFAULT 1,
    PRIMARY KEY (namespace, run_id)
);
CREATE INDEX runs_state ON idempo.runs (state, namespace, run_id);
CREATE INDEX operations_namespace_run ON idempo.operations (namespace, run_id, state);

-- Requests of the guarded run actions (resume, budget), idempotent by request id.
CREATE TABLE idempo.run_actions (
    request_id text PRIMARY KEY,
    namespace text NOT NULL,
    run_id text NOT NULL,
    action text NOT NULL CHECK (action IN ('resume', 'budget')),
    proposal text NOT NULL,
    status text NOT NULL CHECK (status IN ('applied', 'pending', 'seconded')),
    operator text NOT NULL,
    role text NOT NULL,
    login text NOT NULL DEFAULT session_user,
    reason text NOT NULL CHECK (length(reason) > 0),
    audit_seq bigint NOT NULL,
    created_at_ms bigint NOT NULL
);
CREATE INDEX run_actions_run ON idempo.run_actions (namespace, run_id, created_at_ms);

-- Which budget a claim found exhausted, with its figures (runbudget.h BudgetExhaustion).
CREATE TYPE idempo.budget_answer AS (
    budget text, used bigint, budget_limit bigint, requested bigint, currency text, detail text);

-- "1,250.00 EUR" (amount.h formatAmount).
CREATE FUNCTION idempo.format_minor(p_minor bigint, p_currency text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.to_char(p_minor / (10::bigint ^ idempo.currency_exponent(p_currency))::bigint, 'FM999,999,999,999,999,990')
    || CASE WHEN idempo.currency_exponent(p_currency) > 0
            THEN '.' || pg_catalog.lpad((p_minor % (10::bigint ^ idempo.currency_exponent(p_currency))::bigint)::text,
                                        idempo.currency_exponent(p_currency), '0')
            ELSE '' END
    || ' ' || p_currency;

-- The sentence of an exhaustion (runbudget.h exhaustionDetail).
CREATE FUNCTION idempo.budget_detail(e idempo.budget_answer) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
RETURN CASE e.budget
    WHEN 'failed_dispatches' THEN e.used || ' failed dispatches of ' || e.budget_limit
    WHEN 'no_progress' THEN 'no progress for ' || (e.used / 1000) || ' s (limit ' || (e.budget_limit / 1000) || ' s)'
    WHEN 'spend' THEN CASE WHEN e.requested = 0
                           THEN 'spent ' || idempo.format_minor(e.used, e.currency) || ' of '
                                || idempo.format_minor(e.budget_limit, e.currency)
                           ELSE 'spent ' || idempo.format_minor(e.used, e.currency) || ' + '
                                || idempo.format_minor(e.requested, e.currency) || ' would pass the cap of '
                                || idempo.format_minor(e.budget_limit, e.currency) END
    ELSE CASE WHEN e.requested = 0 THEN e.used || ' tokens of ' || e.budget_limit
              ELSE e.used || ' tokens + ' || e.requested || ' would pass the cap of ' || e.budget_limit END
    END;

-- The budget rule of a dispatching claim (runbudget.h checkRunBudget): NULL when it may dispatch.
CREATE FUNCTION idempo.run_exhaustion(r idempo.runs, p_cost bigint, p_tokens bigint, p_redispatch boolean,
                                      p_now_ms bigint)
    RETURNS idempo.budget_answer LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    e idempo.budget_answer;
BEGIN
    IF r.state = 'halted' THEN
        e := ROW(coalesce(r.halt_budget, 'failed_dispatches'), NULL, NULL, 0, r.currency, r.halt_detail);
        e.used := CASE e.budget WHEN 'failed_dispatches' THEN r.failed_dispatches
                                WHEN 'no_progress' THEN p_now_ms - r.last_progress_at_ms
                                WHEN 'spend' THEN r.spent_minor ELSE r.tokens_used END;
        e.budget_limit := coalesce(CASE e.budget WHEN 'failed_dispatches' THEN r.failed_dispatch_limit
                                                 WHEN 'no_progress' THEN r.no_progress_ms
                                                 WHEN 'spend' THEN r.spend_limit_minor ELSE r.token_limit END, 0);
        IF e.detail = '' THEN
            e.detail := idempo.budget_detail(e);
        END IF;
        RETURN e;
    ELSIF r.failed_dispatch_limit IS NOT NULL AND r.failed_dispatches >= r.failed_dispatch_limit THEN
        e := ROW('failed_dispatches', r.failed_dispatches, r.failed_dispatch_limit, 0, '', NULL);
    ELSIF p_redispatch AND r.no_progress_ms IS NOT NULL AND p_now_ms - r.last_progress_at_ms >= r.no_progress_ms THEN
        e := ROW('no_progress', p_now_ms - r.last_progress_at_ms, r.no_progress_ms, 0, '', NULL);
    ELSIF r.spend_limit_minor IS NOT NULL AND r.spent_minor + p_cost > r.spend_limit_minor THEN
        e := ROW('spend', r.spent_minor, r.spend_limit_minor, p_cost, r.currency, NULL);
    ELSIF r.token_limit IS NOT NULL AND r.tokens_used + p_tokens > r.token_limit THEN
        e := ROW('tokens', r.tokens_used, r.token_limit, p_tokens, '', NULL);
    ELSE
        RETURN NULL;
    END IF;
    e.detail := idempo.budget_detail(e);
    RETURN e;
END
$$;

-- The last progress of run `r`: its own stamp (created, resumed, an operation received again)
-- or the newest operation of it created or final. Read when judged, so that the claim and
-- complete of a healthy run write nothing to the run.
CREATE FUNCTION idempo.run_progress(r idempo.runs) RETURNS bigint
    LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
RETURN greatest(r.last_progress_at_ms,
                (SELECT max(CASE WHEN o.state IN ('succeeded', 'failed_terminal') THEN o.updated_at_ms
                                 ELSE o.created_at_ms END)
                 FROM idempo.operations AS o WHERE o.namespace = r.namespace AND o.run_id = r.run_id));

-- The budget step of a dispatching claim, before its write: the run's record, created with
-- the default budgets on its first claim, checked (a re-dispatch on its progress too), and
-- halted when exhausted. A claim that declares no cost or tokens reads the run unlocked while
-- it passes; one that does locks it, so no two claims pass the same last unit. NULL: the claim
-- may dispatch, and then charges with idempo.spend_run under the same lock.
CREATE FUNCTION idempo.check_run(p_namespace text, p_run_id text, p_cost_minor bigint, p_cost_currency text,
                                 p_tokens bigint, p_redispatch boolean, p_now_ms bigint)
    RETURNS idempo.budget_answer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r idempo.runs%ROWTYPE;
    e idempo.budget_answer;
    cost bigint := coalesce(p_cost_minor, 0);
    tokens bigint := coalesce(p_tokens, 0);
    defaults record;
BEGIN
    IF cost = 0 AND tokens = 0 THEN
        SELECT * INTO r FROM idempo.runs AS x WHERE x.namespace = p_namespace AND x.run_id = p_run_id;
        IF FOUND THEN
            IF p_redispatch THEN
                r.last_progress_at_ms := idempo.run_progress(r);
            END IF;
            e := idempo.run_exhaustion(r, 0, 0, p_redispatch, p_now_ms);
            IF e.budget IS NULL OR r.state = 'halted' THEN
                RETURN e;
            END IF;
        END IF;
    END IF;
    SELECT * INTO r FROM idempo.runs AS x WHERE x.namespace = p_namespace AND x.run_id = p_run_id FOR UPDATE;
    IF NOT FOUND THEN
        SELECT max(s.value) FILTER (WHERE s.name = 'run_failed_dispatches') AS failed,
               max(s.value) FILTER (WHERE s.name = 'run_no_progress_s') AS no_progress,
               max(s.value) FILTER (WHERE s.name = 'run_spend_cap') AS spend,
               max(s.value) FILTER (WHERE s.name = 'run_token_cap') AS tokens,
               coalesce(bool_or(s.name = 'run_failed_dispatches'), false) AS failed_set,
               coalesce(bool_or(s.name = 'run_no_progress_s'), false) AS no_progress_set
        INTO defaults FROM idempo.guard_settings AS s
        WHERE s.name IN ('run_failed_dispatches', 'run_no_progress_s', 'run_spend_cap', 'run_token_cap');
        INSERT INTO idempo.runs AS x (namespace, run_id, failed_dispatch_limit, no_progress_ms, spend_limit_minor,
                                      token_limit, currency, last_progress_at_ms, created_at_ms, updated_at_ms)
        VALUES (p_namespace, p_run_id,
                CASE WHEN defaults.failed_set THEN nullif(defaults.failed, '')::bigint ELSE 3 END,
                CASE WHEN defaults.no_progress_set THEN nullif(defaults.no_progress, '')::bigint * 1000 ELSE 600000 END,
                idempo.major_to_minor(split_part(nullif(defaults.spend, ''), ' ', 1),
                                      split_part(nullif(defaults.spend, ''), ' ', 2)),
                nullif(defaults.tokens, '')::bigint, coalesce(split_part(nullif(defaults.spend, ''), ' ', 2), ''),
                p_now_ms, p_now_ms, p_now_ms)
        ON CONFLICT (namespace, run_id) DO NOTHING;
        SELECT * INTO r FROM idempo.runs AS x WHERE x.namespace = p_namespace AND x.run_id = p_run_id FOR UPDATE;
    END IF;
    IF p_cost_currency IS NOT NULL AND r.currency <> '' AND p_cost_currency <> r.currency THEN
        PERFORM idempo.raise('ID004', 'the claim''s cost is in ' || p_cost_currency || ' but run ''' || p_run_id
                                      || ''' counts its spend in ' || r.currency);
    END IF;
    IF p_redispatch THEN
        r.last_progress_at_ms := idempo.run_progress(r);
    END IF;
    e := idempo.run_exhaustion(r, cost, tokens, p_redispatch, p_now_ms);
    IF e.budget IS NOT NULL AND r.state = 'active' THEN
        UPDATE idempo.runs AS x SET state = 'halted', halt_budget = e.budget, halted_at_ms = p_now_ms,
                                    halt_detail = e.detail, updated_at_ms = p_now_ms, run_version = x.run_version + 1
        WHERE x.namespace = p_namespace AND x.run_id = p_run_id;
    END IF;
    RETURN e;
END
$$;

-- Charges a claim that passed idempo.check_run (under its lock) with its cost and tokens.
CREATE FUNCTION idempo.spend_run(p_namespace text, p_run_id text, p_cost_minor bigint, p_cost_currency text,
                                 p_tokens bigint, p_now_ms bigint)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(p_cost_minor, 0) > 0 OR coalesce(p_tokens, 0) > 0 OR p_cost_currency IS NOT NULL THEN
        UPDATE idempo.runs AS x SET
            spent_minor = x.spent_minor + coalesce(p_cost_minor, 0),
            tokens_used = x.tokens_used + coalesce(p_tokens, 0),
            currency = coalesce(p_cost_currency, x.currency),
            updated_at_ms = p_now_ms, run_version = x.run_version + 1
        WHERE x.namespace = p_namespace AND x.run_id = p_run_id;
    END IF;
END
$$;

-- Every history event that ends a dispatch in failure counts against its run and halts it at the
-- limit; an operation received again (an approval, a reconciliation) is progress. The trigger
-- fires on neither a claim nor a completion.
CREATE FUNCTION idempo.follow_run() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    failed boolean := NEW.to_state <> 'received';
    r idempo.runs%ROWTYPE;
    halts boolean;
BEGIN
    SELECT x.* INTO r FROM idempo.operations AS o
    JOIN idempo.runs AS x ON x.namespace = o.namespace AND x.run_id = o.run_id
    WHERE o.id = NEW.operation_id AND o.run_id <> '' FOR UPDATE OF x;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    halts := failed AND r.state = 'active' AND r.failed_dispatch_limit IS NOT NULL
             AND r.failed_dispatches + 1 >= r.failed_dispatch_limit;
    UPDATE idempo.runs AS x SET
        failed_dispatches = x.failed_dispatches + failed::integer,
        last_progress_at_ms = CASE WHEN failed THEN x.last_progress_at_ms
                                   ELSE greatest(x.last_progress_at_ms, NEW.at_ms) END,
        state = CASE WHEN halts THEN 'halted' ELSE x.state END,
        halt_budget = CASE WHEN halts THEN 'failed_dispatches' ELSE x.halt_budget END,
        halted_at_ms = CASE WHEN halts THEN NEW.at_ms ELSE x.halted_at_ms END,
        halt_detail = CASE WHEN halts THEN (x.failed_dispatches + 1) || ' failed dispatches of ' || x.failed_dispatch_limit
                           ELSE x.halt_detail END,
        updated_at_ms = NEW.at_ms, run_version = x.run_version + 1
    WHERE x.namespace = r.namespace AND x.run_id = r.run_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER runs_follow_events AFTER INSERT ON idempo.operation_events FOR EACH ROW
    WHEN (NEW.from_state IS NOT NULL
          AND ((NEW.from_state = 'dispatching'
                AND NEW.to_state IN ('failed_retryable', 'failed_terminal', 'unknown_outcome', 'confirmation_required'))
               OR NEW.to_state = 'received'))
    EXECUTE FUNCTION idempo.follow_run();

-- The no-progress sweep (LedgerStore::sweepRuns): halts the active runs with an open operation
-- and no progress for their limit. The reconciler's loop calls it; a claim judges its own run.
CREATE FUNCTION idempo.sweep_runs(p_namespace text DEFAULT '', p_clock_pinned_ms bigint DEFAULT NULL,
                                  p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    halted bigint;
BEGIN
    UPDATE idempo.runs AS r SET state = 'halted', halt_budget = 'no_progress', halted_at_ms = now_ms,
        halt_detail = 'no progress for ' || ((now_ms - idempo.run_progress(r)) / 1000) || ' s (limit '
                      || (r.no_progress_ms / 1000) || ' s)',
        updated_at_ms = now_ms, run_version = r.run_version + 1
    WHERE r.state = 'active' AND r.no_progress_ms IS NOT NULL AND idempo.run_progress(r) + r.no_progress_ms <= now_ms
      AND (coalesce(p_namespace, '') = '' OR r.namespace = p_namespace)
      AND EXISTS (SELECT FROM idempo.operations AS o WHERE o.namespace = r.namespace AND o.run_id = r.run_id
                  AND o.state NOT IN ('succeeded', 'failed_terminal'));
    GET DIAGNOSTICS halted = ROW_COUNT;
    RETURN halted;
END
$$;

-- The claim answers which budget it found exhausted, and the claim takes what a dispatch may
-- cost. Its arguments change, so the function is made again (and granted again below).
ALTER TYPE idempo.claim_answer ADD ATTRIBUTE budget text, ADD ATTRIBUTE budget_used bigint,
    ADD ATTRIBUTE budget_limit bigint, ADD ATTRIBUTE budget_requested bigint, ADD ATTRIBUTE budget_currency text,
    ADD ATTRIBUTE budget_detail text;
DROP FUNCTION idempo.claim(text, text, text, text, text, text, bigint, integer, boolean, text, text, text, text, text,
                           bigint, text, integer, bigint, bigint);

-- One atomic claim (ledgerrules.h planClaim): creates, re-dispatches, takes over a lapsed lease
-- or revokes it, or answers without a change; every answer other than `claimed` is recorded as a
-- suppression. A record in a final state or with another fingerprint is answered without a row
-- lock: neither changes while the record lives. A claim that changes nothing commits without
-- waiting for the WAL flush when its transaction had written nothing before it (the
-- suppression record may be lost in a crash; see docs/sql-api.md). A claim that would dispatch
-- in a run passes the run's budgets first (idempo.check_run, under the run's row lock) and is
-- charged after its write; an exhausted budget answers `budget_exhausted` with the figures and
-- leaves the operation as it was.
CREATE FUNCTION idempo.claim(
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
            IF p_run_id <> '' THEN
                exhausted := idempo.check_run(p_namespace, p_run_id, p_cost_minor, p_cost_currency, p_tokens, true, now_ms);
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
                IF p_run_id <> '' THEN
                    PERFORM idempo.spend_run(p_namespace, p_run_id, p_cost_minor, p_cost_currency, p_tokens, now_ms);
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

-- Raises the precise error for a transition's bad argument.

-- Guard settings: four_eyes_above, and the default budgets of new runs (runbudget.h).
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
    IF p_name IS NULL OR p_name NOT IN ('four_eyes_above', 'run_failed_dispatches', 'run_no_progress_s', 'run_spend_cap',
                                        'run_token_cap') THEN
        PERFORM idempo.raise('ID004', 'unknown guard setting ' || coalesce(to_json(p_name)::text, 'NULL'));
    END IF;
    IF p_value IS NULL THEN
        PERFORM idempo.raise('ID004', 'the value of ' || p_name || ' must not be NULL');
    END IF;
    IF p_name = 'four_eyes_above' AND p_value <> '' AND idempo.major_to_minor(p_value, '') IS NULL THEN
        PERFORM idempo.raise('ID004', 'the four-eyes threshold must be a non-negative amount such as 1000.00, not '
                                      || to_json(p_value)::text);
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

-- A guarded run action (runactioncommand.h): resume a halted run adding to its limits, or set
-- its limits (p_limits: failed_dispatches, no_progress_s, spend_minor with spend_currency,
-- tokens; a key present changes that limit, null removes it). Reason, role, idempotency by
-- request id, four-eyes when the spend cap rises by more than four_eyes_above, all under the
-- run's row lock; answers `applied`, `pending` (waits for a second identity) or `replayed`.
CREATE FUNCTION idempo.run_action(p_namespace text, p_run_id text, p_request_id text, p_action text, p_reason text,
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
        IF earlier.namespace <> p_namespace OR earlier.run_id <> p_run_id OR earlier.action <> p_action THEN
            PERFORM idempo.raise('ID008', 'request id ' || p_request_id || ' was used for another request ('
                                          || earlier.action || ' of run ' || earlier.run_id || ')');
        END IF;
        RETURN QUERY SELECT 'replayed'::text, earlier.audit_seq;
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
                                ELSE greatest(0, a.spend_limit_minor - coalesce(r.spend_limit_minor, 0)) END;
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
    waits := threshold IS NOT NULL AND raise_minor > threshold AND cardinality(partners) = 0;
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

-- New functions are executable by PUBLIC until revoked; the roles get what their role allows.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA idempo FROM PUBLIC;
REVOKE ALL ON idempo.runs, idempo.run_actions FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT SELECT ON idempo.runs, idempo.run_actions TO %I', r);
        EXECUTE format('GRANT EXECUTE ON FUNCTION idempo.run_progress(idempo.runs) TO %I', r);
    END LOOP;
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'idempo_worker') THEN
        GRANT EXECUTE ON FUNCTION
            idempo.claim(text, text, text, text, text, text, bigint, integer, boolean, text, text, text, text, text, bigint,
                         text, integer, bigint, text, bigint, bigint, bigint),
            idempo.sweep_runs(text, bigint, bigint)
        TO idempo_worker;
    END IF;
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles WHERE rolname IN ('idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION idempo.sweep_runs(text, bigint, bigint), '
                       'idempo.run_action(text, text, text, text, text, bigint, bigint, text, bigint, jsonb, text, text, '
                       'bigint, bigint) TO %I', r);
    END LOOP;
END
$$;
