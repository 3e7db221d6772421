-- SPDX-License-Identifier: Apache-2.0

-- One atomic claim (ledgerrules.h planClaim): creates, re-dispatches, takes over a lapsed lease
-- or revokes it, or answers without a change; every answer other than `claimed` is recorded as a
-- suppression. A record in a final state or with another fingerprint is answered without a row
-- lock: neither changes while the record lives. A claim that changes nothing commits without
-- waiting for the WAL flush when its transaction had written nothing before it (the
-- suppression record may be lost in a crash; see docs/sql-api.md).
-- A claim that dispatched judges its record again once its writes are done
-- (idempo.settle_writes): the insert may have waited for the table, the row, a concurrent claim of
-- the same key that rolled back, the events table or the run.
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
    IF outcome = 'claimed' AND idempo.waited_past(o) THEN
        PERFORM idempo.settle_writes(o.id);
        SELECT * INTO o FROM idempo.operations AS x WHERE x.id = o.id;
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

SELECT idempo.grant_execute('idempo.claim(text,text,text,text,text,text,bigint,integer,boolean,text,text,text,text,text,bigint,text,integer,bigint,text,bigint,bigint,bigint)', 'idempo_worker');
