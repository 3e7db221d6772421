-- SPDX-License-Identifier: Apache-2.0
-- Schema version 7: the ledger's writes as functions (docs/sql-api.md): claim, transition and
-- its worker forms complete / fail / heartbeat, and the owner's purge. The rules are those of
-- ledgerrules.h and transitiontable.cpp, enforced here for every client; the contract suites
-- hold the embedded ledger and these functions equal.

-- An operation as the functions answer it: the columns of idempo.operations a client reads.
CREATE TYPE idempo.operation_answer AS (
    id bigint, namespace text, operation_key text, run_id text, step_id text, target text, tool_kind text,
    state text, payload text, payload_fingerprint text, fingerprint_fields text, attempt integer,
    max_attempts integer, lease_owner text, lease_expires_at_ms bigint, fencing_token bigint,
    next_attempt_at_ms bigint, error_class text, error_detail text, result text, receipt text,
    created_at_ms bigint, updated_at_ms bigint, retention_expires_at_ms bigint, operation_version bigint,
    schema_version integer, value_minor bigint, value_currency text);

-- A claim's answer: its outcome and the record as it stands after the claim.
CREATE TYPE idempo.claim_answer AS (
    outcome text,
    id bigint, namespace text, operation_key text, run_id text, step_id text, target text, tool_kind text,
    state text, payload text, payload_fingerprint text, fingerprint_fields text, attempt integer,
    max_attempts integer, lease_owner text, lease_expires_at_ms bigint, fencing_token bigint,
    next_attempt_at_ms bigint, error_class text, error_detail text, result text, receipt text,
    created_at_ms bigint, updated_at_ms bigint, retention_expires_at_ms bigint, operation_version bigint,
    schema_version integer, value_minor bigint, value_currency text);

CREATE FUNCTION idempo.answer(o idempo.operations) RETURNS idempo.operation_answer LANGUAGE sql STABLE
RETURN ROW(o.id, o.namespace, o.operation_key, o.run_id, o.step_id, o.target, o.tool_kind, o.state, o.payload,
           o.payload_fingerprint, o.fingerprint_fields, o.attempt, o.max_attempts, o.lease_owner,
           o.lease_expires_at_ms, o.fencing_token, o.next_attempt_at_ms, o.error_class, o.error_detail, o.result,
           o.receipt, o.created_at_ms, o.updated_at_ms, o.retention_expires_at_ms, o.operation_version,
           o.schema_version, o.value_minor, o.value_currency)::idempo.operation_answer;

-- The transition table (transitiontable.cpp).
CREATE FUNCTION idempo.transition_allowed(p_from text, p_to text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (p_from || '>' || p_to) IN (
    'received>dispatching', 'received>failed_terminal', 'awaiting_approval>received',
    'awaiting_approval>failed_terminal', 'dispatching>dispatching', 'dispatching>succeeded',
    'dispatching>failed_retryable', 'dispatching>unknown_outcome', 'dispatching>confirmation_required',
    'dispatching>failed_terminal', 'failed_retryable>dispatching', 'failed_retryable>confirmation_required',
    'failed_retryable>failed_terminal', 'unknown_outcome>succeeded', 'unknown_outcome>received',
    'unknown_outcome>confirmation_required', 'unknown_outcome>failed_terminal', 'confirmation_required>succeeded',
    'confirmation_required>received', 'confirmation_required>failed_terminal');

CREATE FUNCTION idempo.is_state(p_state text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_state IN ('received', 'awaiting_approval', 'dispatching', 'succeeded', 'failed_retryable', 'unknown_outcome',
                   'confirmation_required', 'failed_terminal');

CREATE FUNCTION idempo.is_error_class(p_class text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_class IN ('transient', 'rate_limited', 'validation', 'auth', 'policy_denied', 'unknown_outcome', 'stale_lease');

-- The change feed of live views (idempo.wait_for_changes): every write stamps the record with
-- its transaction's id, and a reader asks which records a transaction it could not see yet
-- has written since. Nothing is locked or notified at commit, so writers never queue behind
-- one another for it (NOTIFY takes a database-wide lock at commit).
ALTER TABLE idempo.operations ADD COLUMN changed_xid xid8;
CREATE INDEX operations_changed ON idempo.operations (changed_xid) WHERE changed_xid IS NOT NULL;

-- The locked record `o` moved by one compare-and-set (ledgerrules.h checkTransition and
-- applyTransition), with its history event naming `p_actor` and the login. Raises ID006 for a
-- token that is not current or a lease that is gone, ID007 for a state that moved or a pair the
-- table forbids, ID004 for a dispatch without a lease. Only for the functions of this schema.
CREATE FUNCTION idempo.move(o idempo.operations, p_from text, p_fencing_token bigint, p_to text, p_actor text,
                            p_detail text, p_result text, p_receipt text, p_error_class text, p_error_detail text,
                            p_retry_delay_ms bigint, p_lease_ms bigint, p_extra_attempts integer,
                            p_retention_ms bigint, p_now_ms bigint)
    RETURNS idempo.operations LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    dispatch boolean := p_to = 'dispatching' AND o.state <> 'dispatching';
BEGIN
    IF o.fencing_token <> p_fencing_token THEN
        PERFORM idempo.raise('ID006', 'fencing token ' || p_fencing_token || ' is not the operation''s current token ('
                                      || o.fencing_token || ')');
    END IF;
    IF o.state <> p_from THEN
        IF p_from = 'dispatching' THEN
            PERFORM idempo.raise('ID006', 'the lease is no longer held: the operation is ' || o.state);
        END IF;
        PERFORM idempo.raise('ID007', 'the operation is ' || o.state || ', not ' || p_from);
    END IF;
    IF NOT idempo.transition_allowed(p_from, p_to) THEN
        PERFORM idempo.raise('ID007', p_from || ' -> ' || p_to || ' is not an allowed transition');
    END IF;
    IF p_to = 'dispatching' AND (p_lease_ms IS NULL OR p_lease_ms <= 0) THEN
        PERFORM idempo.raise('ID004', 'a dispatch or heartbeat needs a positive lease (p_lease_ms)');
    END IF;
    UPDATE idempo.operations AS x SET
        state = p_to,
        changed_xid = pg_catalog.pg_current_xact_id(),
        updated_at_ms = p_now_ms,
        operation_version = x.operation_version + 1,
        fencing_token = CASE WHEN dispatch THEN pg_catalog.nextval('idempo.fencing_sequence') ELSE x.fencing_token END,
        attempt = CASE WHEN dispatch THEN x.attempt + 1 ELSE x.attempt END,
        lease_owner = CASE WHEN dispatch THEN p_actor ELSE x.lease_owner END,
        lease_expires_at_ms = CASE WHEN p_to = 'dispatching' THEN p_now_ms + p_lease_ms END,
        next_attempt_at_ms = p_now_ms + p_retry_delay_ms,
        retention_expires_at_ms = CASE WHEN p_to IN ('succeeded', 'failed_terminal') THEN p_now_ms + p_retention_ms END,
        result = coalesce(p_result, x.result),
        receipt = coalesce(p_receipt, x.receipt),
        error_class = CASE WHEN p_error_class IS NOT NULL THEN p_error_class
                           WHEN p_to = 'succeeded' THEN NULL ELSE x.error_class END,
        error_detail = CASE WHEN p_to = 'succeeded' AND p_error_class IS NULL THEN ''
                            WHEN p_error_detail IS NOT NULL THEN p_error_detail ELSE x.error_detail END,
        max_attempts = CASE WHEN p_extra_attempts IS NOT NULL
                            THEN CASE WHEN dispatch THEN x.attempt + 1 ELSE x.attempt END + p_extra_attempts
                            ELSE x.max_attempts END
    WHERE x.id = o.id
    RETURNING * INTO o;
    INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt, actor,
                                         error_class, detail, login)
    VALUES (o.id, o.updated_at_ms, p_from, o.state, o.fencing_token, o.attempt, p_actor, o.error_class, p_detail,
            session_user);
    RETURN o;
END
$$;

-- Raises the precise error for a claim's bad argument (the claim's fast check found one).
CREATE FUNCTION idempo.check_claim(p_namespace text, p_key text, p_payload text, p_payload_sha256 text, p_owner text,
                                   p_tool_kind text, p_lease_ms bigint, p_max_attempts integer,
                                   p_requires_approval boolean, p_run_id text, p_step_id text, p_target text,
                                   p_fingerprint_fields text, p_fingerprint text, p_value_minor bigint,
                                   p_value_currency text, p_record_schema integer)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.check_namespace(p_namespace);
    PERFORM idempo.check_identifier(p_key, 'p_key', true, 255);
    PERFORM idempo.check_identifier(p_owner, 'p_owner', true, 255);
    PERFORM idempo.check_identifier(p_run_id, 'p_run_id', false, 255);
    PERFORM idempo.check_identifier(p_step_id, 'p_step_id', false, 255);
    PERFORM idempo.check_identifier(p_target, 'p_target', false, 255);
    IF p_tool_kind IS NULL OR p_tool_kind NOT IN ('read', 'idempotent_write', 'protected_write') THEN
        PERFORM idempo.raise('ID004', 'p_tool_kind must be read, idempotent_write or protected_write, not '
                                      || coalesce(to_json(p_tool_kind)::text, 'NULL'));
    END IF;
    IF p_lease_ms IS NULL OR p_lease_ms NOT BETWEEN 1 AND 86400000 THEN
        PERFORM idempo.raise('ID004', 'p_lease_ms must be between 1 ms and 24 h, not ' || coalesce(p_lease_ms::text, 'NULL'));
    END IF;
    IF p_max_attempts IS NULL OR p_max_attempts NOT BETWEEN 1 AND 100 THEN
        PERFORM idempo.raise('ID004', 'p_max_attempts must be 1..100, not ' || coalesce(p_max_attempts::text, 'NULL'));
    END IF;
    IF p_requires_approval IS NULL OR p_record_schema IS NULL THEN
        PERFORM idempo.raise('ID004', 'p_requires_approval and p_record_schema must not be NULL');
    END IF;
    PERFORM idempo.check_json(p_payload, 'p_payload', 1048576);
    IF p_payload_sha256 IS NULL OR p_payload_sha256 <> idempo.sha256_hex(p_payload) THEN
        PERFORM idempo.raise('ID004', 'p_payload_sha256 ' || coalesce(to_json(left(p_payload_sha256, 80))::text, 'NULL')
                                      || ' is not the SHA-256 of p_payload (' || idempo.sha256_hex(p_payload)
                                      || '): send the canonical text and the hash of exactly that text');
    END IF;
    IF p_fingerprint_fields IS NULL OR NOT idempo.is_json(p_fingerprint_fields)
       OR jsonb_typeof(p_fingerprint_fields::jsonb) <> 'array'
       OR EXISTS (SELECT FROM jsonb_array_elements(p_fingerprint_fields::jsonb) AS e (v)
                  WHERE jsonb_typeof(e.v) <> 'string' OR NOT (e.v #>> '{}') ~ '^(/([^~]|~[01])*)*$') THEN
        PERFORM idempo.raise('ID004', 'p_fingerprint_fields must be a JSON array of JSON Pointers (RFC 6901)');
    END IF;
    IF p_fingerprint_fields = '[]' AND p_fingerprint IS DISTINCT FROM p_payload_sha256 THEN
        PERFORM idempo.raise('ID004', 'p_fingerprint must be p_payload_sha256 (or NULL) when no fingerprint fields are declared');
    END IF;
    IF p_fingerprint IS NULL OR p_fingerprint !~ '^[0-9a-f]{64}$' THEN
        PERFORM idempo.raise('ID004', 'p_fingerprint must be 64 lowercase hex digits (SHA-256 of the projection)');
    END IF;
    IF (p_value_minor IS NULL) <> (p_value_currency IS NULL) OR p_value_minor < 0 OR p_value_currency !~ '^[A-Z]{3}$'
       OR p_value_minor >= 1000000000000000000 THEN
        PERFORM idempo.raise('ID004', 'p_value_minor and p_value_currency go together: a non-negative amount in minor units '
                                      || 'and an ISO 4217 code such as EUR');
    END IF;
END
$$;

-- Whether two fingerprint projections (JSON arrays of field paths) name the same fields, in any
-- order and with repeats: a claim under another projection judges the payload by other fields,
-- so it is refused (outcome projection_differs, nothing written or recorded) before the
-- fingerprints are compared.
CREATE FUNCTION idempo.same_projection(p_recorded text, p_claimed text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN p_recorded = p_claimed
    OR ARRAY(SELECT DISTINCT f COLLATE "C" FROM jsonb_array_elements_text(p_recorded::jsonb) AS f ORDER BY 1)
       IS NOT DISTINCT FROM
       ARRAY(SELECT DISTINCT f COLLATE "C" FROM jsonb_array_elements_text(p_claimed::jsonb) AS f ORDER BY 1);

-- One atomic claim (ledgerrules.h planClaim): creates, re-dispatches, takes over a lapsed lease
-- or revokes it, or answers without a change; every answer other than `claimed` is recorded as a
-- suppression. A record in a final state or with another fingerprint is answered without a row
-- lock: neither changes while the record lives. A claim that changes nothing commits without
-- waiting for the WAL flush when its transaction had written nothing before it (the
-- suppression record may be lost in a crash; see docs/sql-api.md).
CREATE FUNCTION idempo.claim(
    p_namespace text, p_key text, p_payload text, p_payload_sha256 text, p_owner text,
    p_tool_kind text DEFAULT 'protected_write', p_lease_ms bigint DEFAULT 30000, p_max_attempts integer DEFAULT 3,
    p_requires_approval boolean DEFAULT false, p_run_id text DEFAULT '', p_step_id text DEFAULT '',
    p_target text DEFAULT '', p_fingerprint_fields text DEFAULT '[]', p_fingerprint text DEFAULT NULL,
    p_value_minor bigint DEFAULT NULL, p_value_currency text DEFAULT NULL, p_record_schema integer DEFAULT 1,
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
                DELETE FROM idempo.operation_events AS e WHERE e.operation_id = o.id;
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
            -- Received or retryable after its backoff, or a lapsed lease on a read or idempotent write.
            UPDATE idempo.operations AS x SET
                state = 'dispatching', fencing_token = nextval('idempo.fencing_sequence'), attempt = x.attempt + 1,
                lease_owner = p_owner, lease_expires_at_ms = now_ms + p_lease_ms, next_attempt_at_ms = NULL,
                updated_at_ms = now_ms, operation_version = x.operation_version + 1, changed_xid = pg_current_xact_id()
            WHERE x.id = o.id
            RETURNING * INTO o;
            outcome := 'claimed';
            wrote := true;
            INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt,
                                                 actor, error_class, detail, login)
            VALUES (o.id, o.updated_at_ms, prior_state, o.state, o.fencing_token, o.attempt, p_owner, o.error_class,
                    CASE WHEN prior_state = 'dispatching' THEN 'lease of ' || prior_owner || ' lapsed; taken over'
                         ELSE 'claimed' END,
                    session_user);
        END IF;
    END LOOP;
    IF outcome IS NULL THEN
        RAISE EXCEPTION 'claim of % kept racing concurrent writers of the same key; try again', p_key
            USING ERRCODE = '40001';
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
               o.schema_version, o.value_minor, o.value_currency)::idempo.claim_answer;
END
$$;

-- Raises the precise error for a transition's bad argument.
CREATE FUNCTION idempo.check_transition(p_namespace text, p_key text, p_from text, p_fencing_token bigint, p_to text,
                                        p_actor text, p_detail text, p_result text, p_receipt text,
                                        p_error_class text, p_error_detail text, p_retry_delay_ms bigint,
                                        p_lease_ms bigint, p_extra_attempts integer, p_retention_ms bigint)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.check_namespace(p_namespace);
    PERFORM idempo.check_identifier(p_key, 'p_key', true, 255);
    PERFORM idempo.check_identifier(p_actor, 'p_actor', false, 255);
    IF NOT coalesce(idempo.is_state(p_from), false) OR NOT coalesce(idempo.is_state(p_to), false) THEN
        PERFORM idempo.raise('ID004', 'p_from and p_to must be operation states, not ' || coalesce(to_json(p_from)::text, 'NULL')
                                      || ' and ' || coalesce(to_json(p_to)::text, 'NULL'));
    END IF;
    IF p_fencing_token IS NULL OR p_detail IS NULL OR p_retention_ms IS NULL THEN
        PERFORM idempo.raise('ID004', 'p_fencing_token, p_detail and p_retention_ms must not be NULL');
    END IF;
    IF octet_length(p_detail) > 65536 OR octet_length(p_error_detail) > 65536 THEN
        PERFORM idempo.raise('ID003', 'p_detail and p_error_detail hold at most 65536 bytes');
    END IF;
    IF p_result IS NOT NULL AND p_result <> '' THEN
        PERFORM idempo.check_json(p_result, 'p_result', 1048576);
    END IF;
    IF p_receipt IS NOT NULL AND p_receipt <> '' THEN
        PERFORM idempo.check_json(p_receipt, 'p_receipt', 1048576);
    END IF;
    IF p_error_class IS NOT NULL AND NOT idempo.is_error_class(p_error_class) THEN
        PERFORM idempo.raise('ID004', 'p_error_class ' || to_json(p_error_class)::text || ' is not an error class');
    END IF;
    IF p_retry_delay_ms < 0 OR p_lease_ms NOT BETWEEN 1 AND 86400000 OR p_extra_attempts NOT BETWEEN 0 AND 100
       OR p_retention_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_retry_delay_ms and p_retention_ms must not be negative, p_lease_ms must be 1 ms..24 h '
                                      || 'and p_extra_attempts 0..100');
    END IF;
END
$$;

-- One compare-and-set on (state, fencing token), appended to the history (ledgerrules.h). A
-- login that is not the owner may only write from dispatching, under the lease it holds: moving
-- an operation out of any other state is an approval (idempo.approve) or a reconciliation
-- (idempo.reconcile). Final records are kept at least an hour unless the owner says otherwise.
CREATE FUNCTION idempo.transition(
    p_namespace text, p_key text, p_from text, p_fencing_token bigint, p_to text, p_actor text DEFAULT '',
    p_detail text DEFAULT '', p_result text DEFAULT NULL, p_receipt text DEFAULT NULL, p_error_class text DEFAULT NULL,
    p_error_detail text DEFAULT NULL, p_retry_delay_ms bigint DEFAULT NULL, p_lease_ms bigint DEFAULT NULL,
    p_extra_attempts integer DEFAULT NULL, p_retention_ms bigint DEFAULT 86400000,
    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.operation_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o idempo.operations%ROWTYPE;
BEGIN
    IF p_namespace IS NULL OR p_namespace !~ '^[A-Za-z0-9._-]{1,63}$' OR p_key = ''
       OR NOT idempo.is_printable(p_key, 255) OR NOT idempo.is_printable(p_actor, 255)
       OR NOT coalesce(idempo.is_state(p_from), false) OR NOT coalesce(idempo.is_state(p_to), false)
       OR p_fencing_token IS NULL OR p_detail IS NULL OR p_retention_ms IS NULL OR octet_length(p_detail) > 65536
       OR octet_length(p_error_detail) > 65536 OR NOT coalesce(idempo.is_error_class(p_error_class), true)
       OR p_retry_delay_ms < 0 OR p_lease_ms NOT BETWEEN 1 AND 86400000 OR p_extra_attempts NOT BETWEEN 0 AND 100
       OR p_retention_ms < 0 OR octet_length(p_result) > 1048576 OR octet_length(p_receipt) > 1048576
       OR (p_result <> '' AND NOT idempo.is_json(p_result)) OR (p_receipt <> '' AND NOT idempo.is_json(p_receipt)) THEN
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
    SELECT * INTO o FROM idempo.operations AS x WHERE x.namespace = p_namespace AND x.operation_key = p_key FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM idempo.raise('ID005', 'no operation ''' || p_key || ''' in namespace ''' || p_namespace || '''');
    END IF;
    o := idempo.move(o, p_from, p_fencing_token, p_to, p_actor, p_detail, p_result, p_receipt, p_error_class,
                     p_error_detail, p_retry_delay_ms, p_lease_ms, p_extra_attempts, p_retention_ms,
                     idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms));
    RETURN idempo.answer(o);
END
$$;

-- A worker's success under its lease: dispatching -> succeeded with the result and receipt.
CREATE FUNCTION idempo.complete(p_namespace text, p_key text, p_fencing_token bigint, p_result text DEFAULT '',
                                p_receipt text DEFAULT '', p_actor text DEFAULT '',
                                p_retention_ms bigint DEFAULT 86400000)
    RETURNS idempo.operation_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN idempo.transition(p_namespace, p_key, 'dispatching', p_fencing_token, 'succeeded', p_actor, 'completed',
                             p_result, p_receipt, NULL, NULL, NULL, NULL, NULL, p_retention_ms);
END
$$;

-- A worker's lease extended to `p_lease_ms` from now.
CREATE FUNCTION idempo.heartbeat(p_namespace text, p_key text, p_fencing_token bigint, p_lease_ms bigint DEFAULT 30000,
                                 p_actor text DEFAULT '')
    RETURNS idempo.operation_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN idempo.transition(p_namespace, p_key, 'dispatching', p_fencing_token, 'dispatching', p_actor, 'heartbeat',
                             NULL, NULL, NULL, NULL, NULL, p_lease_ms);
END
$$;

-- A worker's failed attempt, placed by the default retry policy (retrypolicy.h): validation,
-- auth and policy_denied stop (failed_terminal); unknown_outcome on a protected write goes to
-- unknown_outcome; the last allowed attempt goes to confirmation_required; otherwise
-- failed_retryable after about 1 s, 4 s, 16 s (±20 %, at most 300 s; rate_limited waits at
-- least p_retry_after_ms).
CREATE FUNCTION idempo.fail(p_namespace text, p_key text, p_fencing_token bigint, p_error_class text,
                            p_error_detail text DEFAULT '', p_retry_after_ms bigint DEFAULT NULL,
                            p_actor text DEFAULT '', p_retention_ms bigint DEFAULT 86400000)
    RETURNS idempo.operation_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o idempo.operations%ROWTYPE;
    next_state text := 'failed_retryable';
    delay bigint;
BEGIN
    IF p_error_class IS NULL OR NOT idempo.is_error_class(p_error_class) OR p_error_class = 'stale_lease' THEN
        PERFORM idempo.raise('ID004', 'p_error_class must be an error class a provider can cause, not '
                                      || coalesce(to_json(p_error_class)::text, 'NULL'));
    END IF;
    IF p_retry_after_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_retry_after_ms must not be negative');
    END IF;
    SELECT * INTO o FROM idempo.operations AS x WHERE x.namespace = p_namespace AND x.operation_key = p_key;
    IF FOUND AND o.state = 'dispatching' AND o.fencing_token = p_fencing_token THEN
        IF p_error_class IN ('validation', 'auth', 'policy_denied') THEN
            next_state := 'failed_terminal';
        ELSIF p_error_class = 'unknown_outcome' AND o.tool_kind = 'protected_write' THEN
            next_state := 'unknown_outcome';
        ELSIF o.attempt >= o.max_attempts THEN
            next_state := 'confirmation_required';
        ELSE
            delay := (least(1000 * power(4, greatest(o.attempt - 1, 0)), 300000) * (1 + 0.2 * (2 * random() - 1)))::bigint;
            IF p_error_class = 'rate_limited' AND p_retry_after_ms IS NOT NULL THEN
                delay := greatest(delay, p_retry_after_ms);
            END IF;
        END IF;
    END IF;
    RETURN idempo.transition(p_namespace, p_key, 'dispatching', p_fencing_token, next_state, p_actor,
                             'attempt ' || coalesce(o.attempt, 0) || ' failed: ' || p_error_class, NULL, NULL,
                             p_error_class, left(coalesce(p_error_detail, ''), 4096), delay, NULL, NULL, p_retention_ms);
END
$$;

-- Removes the records of `p_namespace` ('' for every namespace) whose retention expired, with
-- their history; returns how many. The owner's work: granted to no role.
CREATE FUNCTION idempo.purge_expired(p_namespace text DEFAULT '', p_clock_pinned_ms bigint DEFAULT NULL,
                                     p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    purged bigint;
BEGIN
    WITH gone AS (
        DELETE FROM idempo.operations AS o
        WHERE o.retention_expires_at_ms <= now_ms AND (coalesce(p_namespace, '') = '' OR o.namespace = p_namespace)
        RETURNING o.id
    ), history_gone AS (
        DELETE FROM idempo.operation_events AS e WHERE e.operation_id IN (SELECT id FROM gone)
    )
    SELECT count(*) INTO purged FROM gone;
    RETURN purged;
END
$$;

-- Where a reader of the change feed starts: the current snapshot.
CREATE FUNCTION idempo.change_snapshot() RETURNS text LANGUAGE sql STABLE
RETURN pg_catalog.pg_current_snapshot()::text;

-- The records of namespace `p_namespace` ('' for all) created or moved by transactions that
-- `p_snapshot` did not see and this statement does (at most `p_limit` listed: more means
-- "refresh everything"), and the snapshot to ask from next time. Each change is
-- {"ns", "key", "run_id" (cut to 500 characters), "state", "version"}. An index range on
-- changed_xid from the old snapshot's xmin: only recent writes are read.
CREATE FUNCTION idempo.changes_since(p_snapshot text, p_namespace text DEFAULT '', p_limit integer DEFAULT 1000,
                                     OUT snapshot text, OUT changes jsonb)
    LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT pg_catalog.pg_current_snapshot()::text,
           coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'ns', c.namespace, 'key', c.operation_key, 'run_id', pg_catalog.left(c.run_id, 500), 'state', c.state,
               'version', c.operation_version) ORDER BY c.changed_xid, c.id), '[]'::jsonb)
    FROM (SELECT o.namespace, o.operation_key, o.run_id, o.state, o.operation_version, o.changed_xid, o.id
          FROM idempo.operations AS o
          WHERE o.changed_xid >= pg_catalog.pg_snapshot_xmin(p_snapshot::pg_snapshot)
            AND NOT pg_catalog.pg_visible_in_snapshot(o.changed_xid, p_snapshot::pg_snapshot)
            AND (coalesce(p_namespace, '') = '' OR o.namespace = p_namespace)
          LIMIT p_limit) AS c;
END;

-- idempo.changes_since() that waits, up to `p_timeout_ms` (at most a minute), for a change to
-- list: a console's long poll. It looks every 50 ms, each time with a fresh snapshot.
CREATE FUNCTION idempo.wait_for_changes(p_snapshot text, p_namespace text DEFAULT '', p_timeout_ms integer DEFAULT 400,
                                        OUT snapshot text, OUT changes jsonb)
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + least(greatest(coalesce(p_timeout_ms, 0), 0), 60000) * interval '1 ms';
BEGIN
    IF p_snapshot IS NULL OR p_snapshot !~ '^[0-9]+:[0-9]+:[0-9,]*$' THEN
        PERFORM idempo.raise('ID004', 'p_snapshot must be a snapshot idempo.change_snapshot() or an earlier answer gave, not '
                                      || coalesce(to_json(left(p_snapshot, 80))::text, 'NULL'));
    END IF;
    LOOP
        SELECT c.snapshot, c.changes INTO snapshot, changes FROM idempo.changes_since(p_snapshot, p_namespace) AS c;
        EXIT WHEN jsonb_array_length(changes) > 0 OR clock_timestamp() >= deadline;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;

-- New functions are executable by PUBLIC until revoked; the roles get what their role allows.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA idempo FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION idempo.change_snapshot(), idempo.changes_since(text, text, integer), '
                       'idempo.wait_for_changes(text, text, integer) TO %I', r);
    END LOOP;
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'idempo_worker') THEN
        GRANT EXECUTE ON FUNCTION
            idempo.claim(text, text, text, text, text, text, bigint, integer, boolean, text, text, text, text, text, bigint,
                         text, integer, bigint, bigint),
            idempo.transition(text, text, text, bigint, text, text, text, text, text, text, text, bigint, bigint, integer,
                              bigint, bigint, bigint),
            idempo.complete(text, text, bigint, text, text, text, bigint),
            idempo.heartbeat(text, text, bigint, bigint, text),
            idempo.fail(text, text, bigint, text, text, bigint, text, bigint)
        TO idempo_worker;
    END IF;
END
$$;
