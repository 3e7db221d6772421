-- SPDX-License-Identifier: Apache-2.0
-- Schema version 25: every time a write stores counts from the ledger's clock once the write
-- holds its locks.
--
-- The functions read the clock, then write. A write that waited in between (for a table lock
-- held by a migration, VACUUM FULL or an operator's open transaction; for a row another
-- transaction holds; behind a claim of the same key that rolled back) stored times of the clock
-- before the wait: a claim that waited 3 s granted a 2 s lease that had lapsed when it committed,
-- and the next claim of the key took over while the first worker still ran.
--
-- The rule: a write's stamp (operations.updated_at_ms, runs.updated_at_ms, a message's vt) is
-- judged again once all its locks are held, and when the clock has moved on by more than 1 % of
-- the shortest duration computed from it (at least 1 ms: idempo.past_tolerance) the stamp and
-- every time computed from it (lease, next attempt, retention, run progress, visibility timeout)
-- move on by the wait. A grant is thus never short by more than 1 % of what was asked, so never
-- lapsed when it is granted, and a write the scheduler merely delayed is not written twice.
-- claim, transition and move judge the operation they wrote at their end (idempo.waited_past: one
-- clock read on the hot path) and settle it through idempo.settle_writes, the one place that
-- moves a record, its newest event and a creation; follow_run and the outbox do the same after
-- the run's and the queue's locks. A run's stamp is judged by the BEFORE trigger
-- runs_stamp_after_locks. A guarded action takes the audit chain's locks before it reads the
-- clock (idempo.acting), so its audit record never waits after its writes and the chain's times
-- follow its order. The queue's functions apply the rule to the messages they deliver, delay or
-- hold. A transaction in which the owner moved the clock for a test (p_clock_pinned_ms,
-- p_clock_offset_ms) keeps the times it was given.

-- As in schema 6, and a moved clock marks its transaction.
CREATE OR REPLACE FUNCTION idempo.clock_for(p_clock_pinned_ms bigint, p_clock_offset_ms bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        IF NOT idempo.is_owner() THEN
            RAISE EXCEPTION 'login % may not move the ledger''s clock (p_clock_pinned_ms, p_clock_offset_ms are for tests by the owner)',
                session_user USING ERRCODE = '42501';
        END IF;
        PERFORM pg_catalog.set_config('idempo.test_clock', 'on', true);
    END IF;
    RETURN idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
END
$$;

-- The tolerance of the rule above: whether a write that waited `p_waited_ms` after it read the
-- clock must move a time that lies `p_duration_ms` past its stamp.
CREATE FUNCTION idempo.past_tolerance(p_waited_ms bigint, p_duration_ms bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE
RETURN p_duration_ms > 0 AND p_waited_ms > greatest(1, p_duration_ms / 100);

-- Whether this transaction's stamps were given by a test clock: only the owner may move the
-- clock (idempo.clock_for marks the transaction), so the mark counts for no other login.
CREATE FUNCTION idempo.test_clock_moved() RETURNS boolean LANGUAGE sql STABLE
RETURN pg_catalog.current_setting('idempo.test_clock', true) IS NOT DISTINCT FROM 'on' AND idempo.is_owner();

-- As in schema 12, and the runs table's lock taken before the claim writes its operation.
CREATE OR REPLACE FUNCTION idempo.check_run(p_namespace text, p_run_id text, p_cost_minor bigint, p_cost_currency text,
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
    -- A claim charges the run after it wrote its operation: the table's lock for that write is
    -- taken here, before the operation is written, so it cannot be waited for afterwards.
    LOCK TABLE idempo.runs IN ROW EXCLUSIVE MODE;
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


-- A run written with a stale stamp: the stamp and the times this write set to it (progress,
-- the halt, the creation) move on by the wait, so a no-progress budget counts from then.
CREATE FUNCTION idempo.stamp_run() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    stamp bigint := NEW.updated_at_ms;
    waited bigint := idempo.now_ms() - NEW.updated_at_ms;
BEGIN
    IF NOT idempo.past_tolerance(waited, NEW.no_progress_ms) OR idempo.test_clock_moved() THEN
        RETURN NEW;
    END IF;
    NEW.updated_at_ms := stamp + waited;
    IF NEW.last_progress_at_ms = stamp AND (TG_OP = 'INSERT' OR OLD.last_progress_at_ms <> stamp) THEN
        NEW.last_progress_at_ms := stamp + waited;
    END IF;
    IF NEW.halted_at_ms = stamp AND (TG_OP = 'INSERT' OR OLD.halted_at_ms IS DISTINCT FROM stamp) THEN
        NEW.halted_at_ms := stamp + waited;
    END IF;
    IF TG_OP = 'INSERT' AND NEW.created_at_ms = stamp THEN
        NEW.created_at_ms := stamp + waited;
    END IF;
    RETURN NEW;
END
$$;
-- Its WHEN clause is built-in arithmetic only: it is prepared again for every statement, and a
-- clause of SQL functions (inlined, planned each time) would cost more than the write it guards.
CREATE TRIGGER runs_stamp_after_locks BEFORE INSERT OR UPDATE ON idempo.runs FOR EACH ROW
    WHEN (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000 - NEW.updated_at_ms > 1)
    EXECUTE FUNCTION idempo.stamp_run();

-- Judges again, once the locks of all its writes are held, the operation `p_id` this transaction
-- wrote: when the clock has left its stamp behind past the tolerance, the stamp and every expiry
-- the record holds (each write recomputes them all from its stamp) move on by the wait, and so do
-- its newest event, which this transaction wrote under the row's lock and which carries the
-- stamp, and the creation time of a record it created. The one place the rule moves a record.
CREATE FUNCTION idempo.settle_writes(p_id bigint) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint := idempo.now_ms();
    settled bigint;
    creation boolean;
BEGIN
    IF idempo.test_clock_moved() THEN
        RETURN;
    END IF;
    UPDATE idempo.operations AS x SET
        updated_at_ms = now_ms,
        lease_expires_at_ms = x.lease_expires_at_ms + (now_ms - x.updated_at_ms),
        next_attempt_at_ms = x.next_attempt_at_ms + (now_ms - x.updated_at_ms),
        retention_expires_at_ms = x.retention_expires_at_ms + (now_ms - x.updated_at_ms)
    WHERE x.id = p_id AND x.changed_xid = pg_catalog.pg_current_xact_id()
      AND idempo.past_tolerance(now_ms - x.updated_at_ms,
                                least(x.lease_expires_at_ms, x.next_attempt_at_ms, x.retention_expires_at_ms) - x.updated_at_ms)
    RETURNING x.updated_at_ms INTO settled;
    IF FOUND THEN
        UPDATE idempo.operation_events AS e SET at_ms = settled
        WHERE e.id = (SELECT max(v.id) FROM idempo.operation_events AS v WHERE v.operation_id = p_id)
        RETURNING e.from_state IS NULL INTO creation;
        IF creation THEN
            UPDATE idempo.operations AS x SET created_at_ms = settled WHERE x.id = p_id;
        END IF;
    END IF;
END
$$;

-- Whether the operation `o` a function wrote must be judged again (idempo.settle_writes): its
-- clock has moved on past the tolerance of its shortest expiry. One clock read and a comparison,
-- so the hot path pays nothing more when nothing waited.
CREATE FUNCTION idempo.waited_past(o idempo.operations) RETURNS boolean LANGUAGE sql VOLATILE
RETURN idempo.past_tolerance(idempo.now_ms() - (o).updated_at_ms,
                             least((o).lease_expires_at_ms, (o).next_attempt_at_ms, (o).retention_expires_at_ms)
                             - (o).updated_at_ms);

-- As in schema 16; a claim that dispatched judges its record again once its writes are done
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


-- As in schema 24; likewise for a move.
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
       OR p_retry_delay_ms NOT BETWEEN 0 AND 315360000000 OR p_lease_ms NOT BETWEEN 1 AND 86400000 OR p_extra_attempts NOT BETWEEN 0 AND 100
       OR p_retention_ms NOT BETWEEN 0 AND 315360000000 OR octet_length(p_result) > 1048576 OR octet_length(p_receipt) > 1048576
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
    IF done AND idempo.waited_past(o) THEN
        PERFORM idempo.settle_writes(o.id);
        SELECT * INTO o FROM idempo.operations AS x WHERE x.id = o.id;
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


-- As in schema 12; the run's lock may be waited for after the operation was written, so the
-- operation settles once it is held (the run's own stamp is judged by runs_stamp_after_locks).
CREATE OR REPLACE FUNCTION idempo.follow_run() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
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
    IF idempo.now_ms() - NEW.at_ms > 1 THEN
        PERFORM idempo.settle_writes(NEW.operation_id);
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

-- As in schema 6, and the audit chain's locks taken first (the log's table, its head's row):
-- every guarded action calls it before it reads the clock, so the audit record it appends after
-- its writes never waits for the chain.
CREATE OR REPLACE FUNCTION idempo.acting(p_as_name text, p_as_role text, OUT who text, OUT role text)
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    LOCK TABLE idempo.audit_log IN ROW EXCLUSIVE MODE;
    PERFORM FROM idempo.audit_head AS h WHERE h.singleton FOR UPDATE;
    SELECT w.login, w.role INTO who, role FROM idempo.whoami() AS w;
    IF p_as_name IS NULL OR p_as_name = '' OR p_as_name = who THEN
        RETURN;
    END IF;
    IF role <> 'owner' THEN
        RAISE EXCEPTION 'login % may not act as %: identity is the database login', who, p_as_name
            USING ERRCODE = '42501';
    END IF;
    PERFORM idempo.check_identifier(p_as_name, 'p_as_name', true, 255);
    who := p_as_name;
    role := coalesce(nullif(p_as_role, ''), 'owner');
END
$$;

-- As in schema 7; the move judges its record again once its event is written (the events table,
-- the run's lock in idempo.follow_run) and answers it as it stands.
CREATE OR REPLACE FUNCTION idempo.move(o idempo.operations, p_from text, p_fencing_token bigint, p_to text, p_actor text,
                                       p_detail text, p_result text, p_receipt text, p_error_class text,
                                       p_error_detail text, p_retry_delay_ms bigint, p_lease_ms bigint,
                                       p_extra_attempts integer, p_retention_ms bigint, p_now_ms bigint)
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
    IF idempo.waited_past(o) THEN
        PERFORM idempo.settle_writes(o.id);
        SELECT * INTO o FROM idempo.operations AS x WHERE x.id = o.id;
    END IF;
    RETURN o;
END
$$;

-- As in schema 8; the send may wait for the queue's table after the transition was written.
CREATE OR REPLACE FUNCTION idempo.transition_and_send(
    p_namespace text, p_key text, p_from text, p_fencing_token bigint, p_to text, p_queue text, p_message text,
    p_headers text DEFAULT NULL, p_actor text DEFAULT '', p_detail text DEFAULT '', p_result text DEFAULT NULL,
    p_receipt text DEFAULT NULL, p_error_class text DEFAULT NULL, p_error_detail text DEFAULT NULL,
    p_retry_delay_ms bigint DEFAULT NULL, p_lease_ms bigint DEFAULT NULL, p_extra_attempts integer DEFAULT NULL,
    p_retention_ms bigint DEFAULT 86400000, p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0,
    OUT operation idempo.operation_answer, OUT msg_id bigint)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o idempo.operations%ROWTYPE;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    PERFORM idempo.check_message(p_message, p_headers);
    operation := idempo.transition(p_namespace, p_key, p_from, p_fencing_token, p_to, p_actor, p_detail, p_result,
                                   p_receipt, p_error_class, p_error_detail, p_retry_delay_ms, p_lease_ms,
                                   p_extra_attempts, p_retention_ms, p_clock_pinned_ms, p_clock_offset_ms);
    msg_id := idempo.enqueue(p_queue, p_message::jsonb, nullif(p_headers, '')::jsonb, (operation).updated_at_ms,
                             (operation).updated_at_ms);
    SELECT * INTO o FROM idempo.operations AS x WHERE x.id = (operation).id;
    IF idempo.waited_past(o) THEN
        PERFORM idempo.settle_writes(o.id);
        SELECT * INTO o FROM idempo.operations AS x WHERE x.id = o.id;
        operation := idempo.answer(o);
    END IF;
END
$$;

-- As in schema 24; a send with a delay that waited for the queue's table is sent, and delayed,
-- from then.
CREATE OR REPLACE FUNCTION idempo.queue_send(p_queue text, p_message text, p_headers text DEFAULT NULL,
                                             p_delay_ms bigint DEFAULT 0, p_clock_pinned_ms bigint DEFAULT NULL,
                                             p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
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
    IF p_delay_ms IS NULL OR p_delay_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_delay_ms must be 0..315360000000 ms (ten years), not ' || coalesce(p_delay_ms::text, 'NULL'));
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
    EXECUTE format('INSERT INTO pgmq.%I (enqueued_at, vt, message, headers) VALUES ($1, $2, $3, $4) RETURNING msg_id',
                   'q_' || p_queue)
        INTO id USING idempo.ms_at(now_ms), idempo.ms_at(now_ms + p_delay_ms), message, headers;
    IF p_delay_ms > 0 THEN
        waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
        IF idempo.past_tolerance(waited, p_delay_ms) THEN
            EXECUTE format('UPDATE pgmq.%I SET vt = vt + $1, enqueued_at = enqueued_at + $1 WHERE msg_id = $2',
                           'q_' || p_queue)
                USING waited * interval '1 millisecond', id;
        END IF;
    END IF;
    RETURN id;
END
$$;

-- As in schema 24; the messages a read delivers stay invisible for p_vt_ms from the clock once
-- the read holds its locks (the acks', the queue's, the dead-letter queue's): a read that waited
-- moves their read time and visibility timeout on by the wait, so they are returned after the
-- read's last write.
CREATE OR REPLACE FUNCTION idempo.queue_read(p_queue text, p_vt_ms bigint, p_quantity integer DEFAULT 1, p_ack text DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS SETOF idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
    now_ms bigint;
    waited bigint;
    after bigint := 0;
    missing integer := p_quantity;
    asked integer;
    candidates integer;
    exhausted bigint[];
    got idempo.queue_message[] := '{}';
    m record;
    acks jsonb;
    pair jsonb;
BEGIN
    SELECT * INTO info FROM idempo.queue_registry AS x WHERE x.queue_name = p_queue;
    IF NOT FOUND THEN
        info := idempo.queue_info(p_queue);
    END IF;
    IF p_vt_ms IS NULL OR p_vt_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_vt_ms (the visibility timeout) must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_vt_ms::text, 'NULL'));
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
        acks := p_ack::jsonb;
        IF jsonb_array_length(acks) > 10000 THEN
            PERFORM idempo.raise('ID004', 'p_ack holds at most 10000 pairs, not ' || jsonb_array_length(acks));
        END IF;
        -- Every pair is checked before any is acknowledged, and CASE keeps each cast behind its check.
        FOR pair IN SELECT e.v FROM jsonb_array_elements(acks) AS e (v) LOOP
            IF (CASE WHEN jsonb_typeof(pair) <> 'array' THEN true
                    WHEN jsonb_array_length(pair) <> 2 THEN true
                    WHEN jsonb_typeof(pair -> 0) <> 'number' OR jsonb_typeof(pair -> 1) <> 'number' THEN true
                    ELSE (pair -> 0)::numeric NOT BETWEEN 1 AND 9223372036854775807
                         OR (pair -> 0)::numeric <> trunc((pair -> 0)::numeric)
                         OR (pair -> 1)::numeric NOT BETWEEN 1 AND 2147483647
                         OR (pair -> 1)::numeric <> trunc((pair -> 1)::numeric) END) THEN
                PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs of whole numbers 1 or '
                                              || 'more, not ' || left(pair::text, 80));
            END IF;
        END LOOP;
        FOR pair IN SELECT e.v FROM jsonb_array_elements(acks) AS e (v) LOOP
            PERFORM idempo.acknowledge(p_queue, (pair -> 0)::numeric::bigint, (pair -> 1)::numeric::integer, now_ms);
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
                got := got || ROW(m.msg_id, m.read_ct, floor(extract(epoch FROM m.enqueued_at) * 1000)::bigint,
                                  floor(extract(epoch FROM m.last_read_at) * 1000)::bigint,
                                  floor(extract(epoch FROM m.vt) * 1000)::bigint, m.message,
                                  m.headers)::idempo.queue_message;
            ELSE
                exhausted := exhausted || m.msg_id;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(exhausted) = 0;
        PERFORM idempo.dead_letter(p_queue, info.dead_letter_queue, exhausted, now_ms);
        -- A round that found fewer candidates than it asked for has seen every visible message.
        EXIT WHEN missing = 0 OR candidates < asked;
    END LOOP;
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF idempo.past_tolerance(waited, p_vt_ms) AND cardinality(got) > 0 THEN
        EXECUTE format('UPDATE pgmq.%I SET vt = vt + $1, last_read_at = last_read_at + $1 WHERE msg_id = ANY ($2)',
                       'q_' || p_queue)
            USING waited * interval '1 millisecond', ARRAY(SELECT g.msg_id FROM unnest(got) AS g);
        RETURN QUERY SELECT g.msg_id, g.read_ct, g.enqueued_at_ms, g.last_read_at_ms + waited, g.vt_ms + waited,
                            g.message, g.headers
                     FROM unnest(got) AS g;
    ELSE
        RETURN QUERY SELECT * FROM unnest(got);
    END IF;
END
$$;

-- As in schema 24; a delay that waited for the queue's table or the message's row counts from then.
CREATE OR REPLACE FUNCTION idempo.queue_nack(p_queue text, p_msg_id bigint, p_error_class text, p_error_detail text DEFAULT '',
                                  p_retry_delay_ms bigint DEFAULT 0, p_read_ct integer DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
    m idempo.queue_message;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_error_class IS NULL OR NOT idempo.is_error_class(p_error_class) THEN
        PERFORM idempo.raise('ID004', 'p_error_class ' || coalesce(to_json(p_error_class)::text, 'NULL') || ' is not an error class');
    END IF;
    IF p_retry_delay_ms IS NULL OR p_retry_delay_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retry_delay_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_retry_delay_ms::text, 'NULL'));
    END IF;
    IF octet_length(p_error_detail) > 65536 THEN
        PERFORM idempo.raise('ID004', 'p_error_detail must hold at most 65536 bytes');
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    m := idempo.update_vt(p_queue, p_msg_id, now_ms + p_retry_delay_ms, p_read_ct);
    INSERT INTO idempo.queue_errors (queue_name, msg_id, error_class, error_detail, recorded_at_ms)
    VALUES (p_queue, p_msg_id, p_error_class, coalesce(p_error_detail, ''), now_ms)
    ON CONFLICT (queue_name, msg_id) DO UPDATE
        SET error_class = excluded.error_class, error_detail = excluded.error_detail, recorded_at_ms = excluded.recorded_at_ms;
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF idempo.past_tolerance(waited, p_retry_delay_ms) THEN
        m := idempo.update_vt(p_queue, p_msg_id, m.vt_ms + waited, m.read_ct);
    END IF;
    RETURN m;
END
$$;

-- As in schema 24; likewise.
CREATE OR REPLACE FUNCTION idempo.queue_set_vt(p_queue text, p_msg_id bigint, p_vt_offset_ms bigint,
                                    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
    m idempo.queue_message;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_vt_offset_ms IS NULL OR p_vt_offset_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_vt_offset_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_vt_offset_ms::text, 'NULL'));
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    m := idempo.update_vt(p_queue, p_msg_id, now_ms + p_vt_offset_ms, NULL);
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF idempo.past_tolerance(waited, p_vt_offset_ms) THEN
        m := idempo.update_vt(p_queue, p_msg_id, m.vt_ms + waited, NULL);
    END IF;
    RETURN m;
END
$$;

-- New functions are executable by PUBLIC until revoked; these are the ledger's own.
REVOKE ALL ON FUNCTION idempo.past_tolerance(bigint, bigint), idempo.test_clock_moved(), idempo.stamp_run(),
    idempo.settle_writes(bigint), idempo.waited_past(idempo.operations) FROM PUBLIC;
