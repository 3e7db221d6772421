-- SPDX-License-Identifier: Apache-2.0
-- Schema 16: the hot path in fewer statements (docs/benchmarks.md). Same signatures, same rules,
-- same refusals; what changes is how many statements and nested calls a call runs.
--
-- idempo.claim: a key the first read does not find is inserted at once (a conflict sends the
-- claim to the locked path as before); a claim that charges nothing passes its run on one read;
-- the payload is parsed only when it is not the recorded payload again (same SHA-256).
-- idempo.transition: one statement that compares state and token, moves and appends the
-- history event; a refusal is judged on the locked record as before. A new record and its first
-- event are one statement too, and a NULL result or receipt is not parsed (it was, inside an
-- exception block, for nothing). Queue send, read and ack: the registry read, the clock and the
-- message checks inline, the JSON text parsed once.

-- As in schema 13; see above for what changed.
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
       OR p_value_minor >= 1000000000000000000 OR p_value_currency !~ '^[A-Z]{3}$' THEN
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
    -- A payload with the recorded one's SHA-256 is that JSON text again: only another is parsed.
    IF NOT (present AND o.payload_fingerprint = p_payload_sha256 AND o.fingerprint_fields = '[]')
       AND NOT idempo.is_json(p_payload) THEN
        PERFORM idempo.check_claim(p_namespace, p_key, p_payload, p_payload_sha256, p_owner, p_tool_kind, p_lease_ms,
                                   p_max_attempts, p_requires_approval, p_run_id, p_step_id, p_target,
                                   p_fingerprint_fields, fingerprint, p_value_minor, p_value_currency, p_record_schema);
    END IF;
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
    -- A key the first read did not find is inserted at once: when another claim inserted it
    -- since, the insert conflicts and the next round locks and judges that record.
    FOR pass IN 1..8 LOOP
        EXIT WHEN outcome IS NOT NULL;
        IF present OR pass > 1 THEN
            SELECT * INTO o FROM idempo.operations AS x
            WHERE x.namespace = p_namespace AND x.operation_key = p_key FOR UPDATE;
            present := FOUND;
        END IF;
        now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
        IF NOT present OR o.retention_expires_at_ms <= now_ms THEN
            -- A claim that charges nothing passes an active run within its limits on one read
            -- (idempo.run_exhaustion's rule for it); any other case is judged by idempo.check_run.
            IF budgeted AND (p_cost_minor IS NOT NULL OR p_tokens > 0 OR NOT EXISTS (
                    SELECT FROM idempo.runs AS r
                    WHERE r.namespace = p_namespace AND r.run_id = p_run_id AND r.state = 'active'
                      AND (r.failed_dispatch_limit IS NULL OR r.failed_dispatches < r.failed_dispatch_limit)
                      AND (r.spend_limit_minor IS NULL OR r.spent_minor <= r.spend_limit_minor)
                      AND (r.token_limit IS NULL OR r.tokens_used <= r.token_limit))) THEN
                exhausted := idempo.check_run(p_namespace, p_run_id, p_cost_minor, p_cost_currency, p_tokens, false, now_ms);
                IF exhausted.budget IS NOT NULL THEN
                    outcome := 'budget_exhausted';
                    EXIT;
                END IF;
            END IF;
            IF NOT present THEN
                -- The record and its first history event in one statement.
                WITH created AS (
                    INSERT INTO idempo.operations AS x (namespace, operation_key, run_id, step_id, target, tool_kind,
                        state, payload, payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner,
                        lease_expires_at_ms, fencing_token, created_at_ms, updated_at_ms, operation_version,
                        schema_version, value_minor, value_currency, changed_xid)
                    VALUES (p_namespace, p_key, p_run_id, p_step_id, p_target, p_tool_kind,
                        CASE WHEN p_requires_approval THEN 'awaiting_approval' ELSE 'dispatching' END,
                        p_payload, fingerprint, p_fingerprint_fields, CASE WHEN p_requires_approval THEN 0 ELSE 1 END,
                        p_max_attempts, CASE WHEN p_requires_approval THEN '' ELSE p_owner END,
                        CASE WHEN p_requires_approval THEN NULL ELSE now_ms + p_lease_ms END,
                        CASE WHEN p_requires_approval THEN 0 ELSE nextval('idempo.fencing_sequence') END,
                        now_ms, now_ms, 1, p_record_schema, p_value_minor, p_value_currency, pg_current_xact_id())
                    ON CONFLICT (namespace, operation_key) DO NOTHING
                    RETURNING *),
                event AS (
                    INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token,
                                                         attempt, actor, error_class, detail, login)
                    SELECT c.id, c.updated_at_ms, NULL, c.state, c.fencing_token, c.attempt, p_owner, NULL, 'created',
                           session_user
                    FROM created AS c)
                SELECT * INTO o FROM created;
                CONTINUE WHEN NOT FOUND;
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
                INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt,
                                                     actor, error_class, detail, login)
                VALUES (o.id, o.updated_at_ms, NULL, o.state, o.fencing_token, o.attempt, p_owner, NULL,
                        'created (previous record expired)', session_user);
            END IF;
            outcome := CASE WHEN p_requires_approval THEN 'in_progress' ELSE 'claimed' END;
            wrote := true;
            IF budgeted AND (p_cost_minor IS NOT NULL OR p_tokens > 0) THEN
                PERFORM idempo.spend_run(p_namespace, p_run_id, p_cost_minor, p_cost_currency, p_tokens, now_ms);
            END IF;
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
                IF o.run_id <> '' AND (p_cost_minor IS NOT NULL OR p_tokens > 0) THEN
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

-- As in schema 7; see above for what changed.
CREATE OR REPLACE FUNCTION idempo.transition(
    p_namespace text, p_key text, p_from text, p_fencing_token bigint, p_to text, p_actor text DEFAULT '',
    p_detail text DEFAULT '', p_result text DEFAULT NULL, p_receipt text DEFAULT NULL, p_error_class text DEFAULT NULL,
    p_error_detail text DEFAULT NULL, p_retry_delay_ms bigint DEFAULT NULL, p_lease_ms bigint DEFAULT NULL,
    p_extra_attempts integer DEFAULT NULL, p_retention_ms bigint DEFAULT 86400000,
    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.operation_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o idempo.operations%ROWTYPE;
    dispatch boolean := p_to = 'dispatching' AND p_from <> 'dispatching';
    done boolean := false;
    now_ms bigint;
BEGIN
    IF p_namespace IS NULL OR p_namespace !~ '^[A-Za-z0-9._-]{1,63}$' OR p_key = ''
       OR NOT idempo.is_printable(p_key, 255) OR NOT idempo.is_printable(p_actor, 255)
       OR NOT coalesce(idempo.is_state(p_from), false) OR NOT coalesce(idempo.is_state(p_to), false)
       OR p_fencing_token IS NULL OR p_detail IS NULL OR p_retention_ms IS NULL OR octet_length(p_detail) > 65536
       OR octet_length(p_error_detail) > 65536 OR NOT coalesce(idempo.is_error_class(p_error_class), true)
       OR p_retry_delay_ms < 0 OR p_lease_ms NOT BETWEEN 1 AND 86400000 OR p_extra_attempts NOT BETWEEN 0 AND 100
       OR p_retention_ms < 0 OR octet_length(p_result) > 1048576 OR octet_length(p_receipt) > 1048576
       OR (coalesce(p_result, '') <> '' AND NOT idempo.is_json(p_result))
       OR (coalesce(p_receipt, '') <> '' AND NOT idempo.is_json(p_receipt)) THEN
        PERFORM idempo.check_transition(p_namespace, p_key, p_from, p_fencing_token, p_to, p_actor, p_detail, p_result,
                                        p_receipt, p_error_class, p_error_detail, p_retry_delay_ms, p_lease_ms,
                                        p_extra_attempts, p_retention_ms);
    END IF;
    IF (p_from <> 'dispatching' OR (p_to IN ('succeeded', 'failed_terminal') AND p_retention_ms < 3600000))
       AND NOT idempo.is_owner() THEN
        IF p_from <> 'dispatching' THEN
            RAISE EXCEPTION 'login % may not move an operation out of %: a worker writes only from dispatching, under its lease; '
                            'approvals and reconciliations have their own functions', session_user, p_from
                USING ERRCODE = '42501';
        END IF;
        PERFORM idempo.raise('ID004', 'p_retention_ms must be at least 3600000 (one hour): a shorter retention lets a '
                                      'finished operation run again');
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    -- The compare-and-set of idempo.move as one statement: it moves the record only in state
    -- p_from under token p_fencing_token (re-checked on the newest version when another writer
    -- held the row). Anything else is judged on the locked record below, with move's refusals.
    IF idempo.transition_allowed(p_from, p_to) AND (p_to <> 'dispatching' OR p_lease_ms > 0) THEN
        now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
        WITH moved AS (UPDATE idempo.operations AS x SET
            state = p_to,
            changed_xid = pg_catalog.pg_current_xact_id(),
            updated_at_ms = now_ms,
            operation_version = x.operation_version + 1,
            fencing_token = CASE WHEN dispatch THEN pg_catalog.nextval('idempo.fencing_sequence') ELSE x.fencing_token END,
            attempt = CASE WHEN dispatch THEN x.attempt + 1 ELSE x.attempt END,
            lease_owner = CASE WHEN dispatch THEN p_actor ELSE x.lease_owner END,
            lease_expires_at_ms = CASE WHEN p_to = 'dispatching' THEN now_ms + p_lease_ms END,
            next_attempt_at_ms = now_ms + p_retry_delay_ms,
            retention_expires_at_ms = CASE WHEN p_to IN ('succeeded', 'failed_terminal') THEN now_ms + p_retention_ms END,
            result = coalesce(p_result, x.result),
            receipt = coalesce(p_receipt, x.receipt),
            error_class = CASE WHEN p_error_class IS NOT NULL THEN p_error_class
                               WHEN p_to = 'succeeded' THEN NULL ELSE x.error_class END,
            error_detail = CASE WHEN p_to = 'succeeded' AND p_error_class IS NULL THEN ''
                                WHEN p_error_detail IS NOT NULL THEN p_error_detail ELSE x.error_detail END,
            max_attempts = CASE WHEN p_extra_attempts IS NOT NULL
                                THEN CASE WHEN dispatch THEN x.attempt + 1 ELSE x.attempt END + p_extra_attempts
                                ELSE x.max_attempts END
        WHERE x.namespace = p_namespace AND x.operation_key = p_key AND x.state = p_from
          AND x.fencing_token = p_fencing_token
        RETURNING *),
        event AS (
            INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt, actor,
                                                 error_class, detail, login)
            SELECT m.id, m.updated_at_ms, p_from, m.state, m.fencing_token, m.attempt, p_actor, m.error_class, p_detail,
                   session_user
            FROM moved AS m)
        SELECT * INTO o FROM moved;
        done := FOUND;
    END IF;
    IF done THEN
        RETURN idempo.answer(o);
    END IF;
    SELECT * INTO o FROM idempo.operations AS x WHERE x.namespace = p_namespace AND x.operation_key = p_key FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM idempo.raise('ID005', 'no operation ''' || p_key || ''' in namespace ''' || p_namespace || '''');
    END IF;
    o := idempo.move(o, p_from, p_fencing_token, p_to, p_actor, p_detail, p_result, p_receipt, p_error_class,
                     p_error_detail, p_retry_delay_ms, p_lease_ms, p_extra_attempts, p_retention_ms,
                     idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms));
    RETURN idempo.answer(o);
END
$$;

-- As in schema 8, with the registry read and the clock inline.
CREATE OR REPLACE FUNCTION idempo.queue_read(p_queue text, p_vt_ms bigint, p_quantity integer DEFAULT 1, p_ack text DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS SETOF idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
    now_ms bigint;
    after bigint := 0;
    missing integer := p_quantity;
    asked integer;
    candidates integer;
    exhausted bigint[];
    m record;
    pair jsonb;
BEGIN
    SELECT * INTO info FROM idempo.queue_registry AS x WHERE x.queue_name = p_queue;
    IF NOT FOUND THEN
        info := idempo.queue_info(p_queue);
    END IF;
    IF p_vt_ms IS NULL OR p_vt_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_vt_ms (the visibility timeout) must not be negative');
    END IF;
    IF p_quantity IS NULL OR p_quantity NOT BETWEEN 1 AND 10000 THEN
        PERFORM idempo.raise('ID004', 'p_quantity must be 1..10000, not ' || coalesce(p_quantity::text, 'NULL'));
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
    IF p_ack IS NOT NULL THEN
        IF NOT idempo.is_json(p_ack) OR jsonb_typeof(p_ack::jsonb) <> 'array' THEN
            PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs');
        END IF;
        FOR pair IN SELECT e.v FROM jsonb_array_elements(p_ack::jsonb) AS e (v) LOOP
            IF jsonb_typeof(pair) <> 'array' OR jsonb_array_length(pair) <> 2 OR jsonb_typeof(pair -> 0) <> 'number'
               OR jsonb_typeof(pair -> 1) <> 'number' THEN
                PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs, not ' || pair::text);
            END IF;
            PERFORM idempo.acknowledge(p_queue, (pair ->> 0)::bigint, (pair ->> 1)::integer, now_ms);
        END LOOP;
    END IF;
    LOOP
        exhausted := '{}';
        candidates := 0;
        asked := missing;
        FOR m IN EXECUTE format(
            'WITH candidates AS MATERIALIZED ('
            '  SELECT q.msg_id, q.read_ct FROM pgmq.%1$I AS q WHERE q.vt <= $1 AND q.msg_id > $2'
            '  ORDER BY q.msg_id LIMIT $3 FOR UPDATE SKIP LOCKED), '
            'delivered AS ('
            '  UPDATE pgmq.%1$I AS m SET vt = $4, read_ct = m.read_ct + 1, last_read_at = $1'
            '  WHERE m.msg_id = ANY (ARRAY(SELECT c.msg_id FROM candidates AS c WHERE $5::integer IS NULL OR c.read_ct < $5))'
            '  RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.last_read_at, m.vt, m.message, m.headers) '
            'SELECT true AS delivered, d.* FROM delivered AS d '
            'UNION ALL SELECT false, c.msg_id, c.read_ct, NULL, NULL, NULL, NULL, NULL FROM candidates AS c '
            '  WHERE c.read_ct >= $5 '
            'ORDER BY 2', 'q_' || p_queue)
            USING idempo.ms_at(now_ms), after, asked, idempo.ms_at(now_ms + p_vt_ms), info.max_reads
        LOOP
            candidates := candidates + 1;
            after := greatest(after, m.msg_id);
            IF m.delivered THEN
                missing := missing - 1;
                RETURN NEXT ROW(m.msg_id, m.read_ct, floor(extract(epoch FROM m.enqueued_at) * 1000)::bigint,
                                floor(extract(epoch FROM m.last_read_at) * 1000)::bigint,
                                floor(extract(epoch FROM m.vt) * 1000)::bigint, m.message, m.headers)::idempo.queue_message;
            ELSE
                exhausted := exhausted || m.msg_id;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(exhausted) = 0;
        PERFORM idempo.dead_letter(p_queue, info.dead_letter_queue, exhausted, now_ms);
        -- A round that found fewer candidates than it asked for has seen every visible message.
        EXIT WHEN missing = 0 OR candidates < asked;
    END LOOP;
END
$$;

-- The registry row of a queue the functions below name: read inline; a bad or unknown name
-- gets idempo.queue_info's refusal.
CREATE OR REPLACE FUNCTION idempo.queue_send(p_queue text, p_message text, p_headers text DEFAULT NULL,
                                             p_delay_ms bigint DEFAULT 0, p_clock_pinned_ms bigint DEFAULT NULL,
                                             p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    message jsonb;
    headers jsonb;
    id bigint;
BEGIN
    PERFORM FROM idempo.queue_registry AS r WHERE r.queue_name = p_queue;
    IF NOT FOUND THEN
        PERFORM idempo.queue_info(p_queue);
    END IF;
    IF p_message IS NULL OR octet_length(p_message) > 1048576 OR octet_length(p_headers) > 1048576 THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END IF;
    -- One parse of each text; one that is not JSON gets idempo.check_message's refusal.
    BEGIN
        message := p_message::jsonb;
        headers := nullif(p_headers, '')::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END;
    IF jsonb_typeof(headers) <> 'object' THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END IF;
    IF p_delay_ms IS NULL OR p_delay_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_delay_ms must not be negative');
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
    EXECUTE format('INSERT INTO pgmq.%I (enqueued_at, vt, message, headers) VALUES ($1, $2, $3, $4) RETURNING msg_id',
                   'q_' || p_queue)
        INTO id USING idempo.ms_at(now_ms), idempo.ms_at(now_ms + p_delay_ms), message, headers;
    RETURN id;
END
$$;

-- As in schema 11, with the read_ct check inline and the receipt and the error's removal in
-- one statement.
CREATE OR REPLACE FUNCTION idempo.acknowledge(p_queue text, p_msg_id bigint, p_read_ct integer, p_now_ms bigint)
    RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    current_read integer;
BEGIN
    IF p_msg_id IS NULL THEN
        PERFORM idempo.raise('ID004', 'p_msg_id must not be NULL');
    END IF;
    IF p_read_ct IS NULL OR p_read_ct < 1 THEN
        PERFORM idempo.check_read_ct(p_read_ct, true);
    END IF;
    EXECUTE format('DELETE FROM pgmq.%I AS m WHERE m.msg_id = $1 AND m.read_ct = $2 RETURNING m.read_ct', 'q_' || p_queue)
        INTO current_read USING p_msg_id, p_read_ct;
    IF current_read IS NOT NULL THEN
        WITH cleared AS (DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = p_queue AND e.msg_id = p_msg_id)
        INSERT INTO idempo.queue_acks (queue_name, msg_id, read_ct, acked_at_ms) VALUES (p_queue, p_msg_id, p_read_ct, p_now_ms)
        ON CONFLICT (queue_name, msg_id) DO UPDATE SET read_ct = excluded.read_ct, acked_at_ms = excluded.acked_at_ms;
        RETURN 'done';
    END IF;
    EXECUTE format('SELECT m.read_ct FROM pgmq.%I AS m WHERE m.msg_id = $1', 'q_' || p_queue) INTO current_read USING p_msg_id;
    IF current_read IS NULL THEN
        SELECT a.read_ct INTO current_read FROM idempo.queue_acks AS a WHERE a.queue_name = p_queue AND a.msg_id = p_msg_id;
        IF current_read = p_read_ct THEN
            RETURN 'done';
        ELSIF current_read IS NULL THEN
            PERFORM idempo.raise('ID005', 'queue ''' || p_queue || ''' holds no message ' || p_msg_id);
        END IF;
    END IF;
    PERFORM idempo.refuse_read(p_queue, p_msg_id, p_read_ct, current_read, 'ack');
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION idempo.queue_ack(p_queue text, p_msg_id bigint, p_read_ct integer,
                                            p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM FROM idempo.queue_registry AS r WHERE r.queue_name = p_queue;
    IF NOT FOUND THEN
        PERFORM idempo.queue_info(p_queue);
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    RETURN idempo.acknowledge(p_queue, p_msg_id, p_read_ct, idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms));
END
$$;

-- Fewer index entries per write. operations_state_value served no query: the value listing
-- orders by coalesce(value_minor, ...) DESC, id, which that index cannot give, and filters the
-- state with operations_state_id. A listing by state walks operations_state_id for the rarer
-- states and the primary key for succeeded (the common state, ORDER BY id), so succeeded
-- records, most of a ledger, no longer get an entry in it: completing an operation writes
-- two index entries fewer.
DROP INDEX idempo.operations_state_value;
DROP INDEX idempo.operations_state_id;
CREATE INDEX operations_state_id ON idempo.operations (state, id) WHERE state <> 'succeeded';
