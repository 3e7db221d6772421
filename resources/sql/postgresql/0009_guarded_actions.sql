-- SPDX-License-Identifier: Apache-2.0
-- Schema version 9: guarded actions as functions (docs/sql-api.md): approve / reject,
-- reconcile, DLQ replay (begin, finish; the requeue is idempo.queue_requeue_dead_letter) and
-- guard settings. Each checks its rules under the operation's row lock (four-eyes by login,
-- approval idempotency by approval id, state and lease), writes its change and appends its
-- audit record in one transaction; the audit log grows only through them.

-- RFC 8785 text of a jsonb value. Object members are ordered by code point ("C"), which is
-- UTF-16 order except between supplementary characters and U+E000..U+FFFF; numbers are written
-- as ECMAScript does, from the shortest text that round-trips the double (float8out).
CREATE FUNCTION idempo.canonical_json(v jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    parts text[];
    digits text;
    point integer;
    n integer;
    k integer;
BEGIN
    CASE jsonb_typeof(v)
    WHEN 'object' THEN
        RETURN '{' || coalesce((SELECT string_agg(to_json(e.key)::text || ':' || idempo.canonical_json(e.value), ','
                                                  ORDER BY e.key COLLATE "C")
                                FROM jsonb_each(v) AS e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((SELECT string_agg(idempo.canonical_json(e.value), ',' ORDER BY e.ordinality)
                                FROM jsonb_array_elements(v) WITH ORDINALITY AS e (value, ordinality)), '') || ']';
    WHEN 'string' THEN
        RETURN to_json(v #>> '{}')::text;
    WHEN 'number' THEN
        parts := regexp_match((v #>> '{}')::float8::text, '^(-?)([0-9]+)(?:\.([0-9]+))?(?:e([-+][0-9]+))?$');
        digits := parts[2] || coalesce(parts[3], '');
        point := length(parts[2]) + coalesce(parts[4]::integer, 0);
        point := point - (length(digits) - length(ltrim(digits, '0')));
        digits := rtrim(ltrim(digits, '0'), '0');
        IF digits = '' THEN
            RETURN '0';
        END IF;
        k := length(digits);
        n := point;
        RETURN parts[1] || CASE
            WHEN k <= n AND n <= 21 THEN digits || repeat('0', n - k)
            WHEN 0 < n AND n <= 21 THEN substr(digits, 1, n) || '.' || substr(digits, n + 1)
            WHEN -6 < n AND n <= 0 THEN '0.' || repeat('0', -n) || digits
            ELSE substr(digits, 1, 1) || CASE WHEN k > 1 THEN '.' || substr(digits, 2) ELSE '' END
                 || 'e' || CASE WHEN n - 1 >= 0 THEN '+' ELSE '-' END || abs(n - 1)::text
        END;
    ELSE
        RETURN v::text;
    END CASE;
END
$$;

-- ISO 4217 exponent (amount.cpp currencyExponent).
CREATE FUNCTION idempo.currency_exponent(p_currency text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN p_currency IN ('BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI',
                                'VND', 'VUV', 'XAF', 'XOF') THEN 0
            WHEN p_currency IN ('BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND') THEN 3
            ELSE 2 END;

-- A non-negative decimal amount in major units ("1250", "1,250.00") in minor units of
-- `p_currency`; NULL for anything else (money.h parseMajorAmount).
CREATE FUNCTION idempo.major_to_minor(p_text text, p_currency text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    whole text;
    fraction text;
    exponent integer := idempo.currency_exponent(p_currency);
BEGIN
    IF p_text IS NULL OR p_text !~ '^[0-9,]*(\.[0-9]*)?$' THEN
        RETURN NULL;
    END IF;
    whole := replace(split_part(p_text, '.', 1), ',', '');
    fraction := CASE WHEN strpos(p_text, '.') > 0 THEN split_part(p_text, '.', 2) ELSE '' END;
    IF whole || fraction = '' OR length(whole || fraction) > 15 OR length(fraction) > exponent THEN
        RETURN NULL;
    END IF;
    RETURN (whole || fraction)::bigint * (10::bigint ^ (exponent - length(fraction)))::bigint;
END
$$;

-- What an operation moves (money.h operationValue): its declared value, else its payload's
-- /amount (a number, or a decimal string in major units) in /currency.
CREATE FUNCTION idempo.operation_value(o idempo.operations, OUT minor bigint, OUT currency text)
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    payload jsonb;
    scaled numeric;
BEGIN
    IF o.value_minor IS NOT NULL THEN
        minor := o.value_minor;
        currency := o.value_currency;
        RETURN;
    END IF;
    IF NOT idempo.is_json(o.payload) THEN
        RETURN;
    END IF;
    payload := o.payload::jsonb;
    IF jsonb_typeof(payload) <> 'object' OR NOT payload ? 'amount' THEN
        RETURN;
    END IF;
    currency := CASE WHEN jsonb_typeof(payload -> 'currency') = 'string' THEN payload ->> 'currency' ELSE '' END;
    IF jsonb_typeof(payload -> 'amount') = 'string' THEN
        minor := idempo.major_to_minor(payload ->> 'amount', currency);
    ELSIF jsonb_typeof(payload -> 'amount') = 'number' THEN
        scaled := (payload ->> 'amount')::numeric * 10 ^ idempo.currency_exponent(currency);
        IF scaled >= 0 AND scaled <= 9e15 THEN
            minor := round(scaled)::bigint;
        END IF;
    END IF;
    IF minor IS NULL THEN
        currency := NULL;
    END IF;
END
$$;

-- Appends an audit record; the chain trigger gives it its seq, prev_hash and hash.
CREATE FUNCTION idempo.append_audit(p_at_ms bigint, p_who text, p_role text, p_action text, p_target text, p_reason text,
                                    p_before_state text, p_after_state text, p_approval_id text, p_detail text)
    RETURNS idempo.audit_log LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    appended idempo.audit_log%ROWTYPE;
BEGIN
    INSERT INTO idempo.audit_log (at_ms, who, role, action, target, reason, before_state, after_state, approval_id, detail)
    VALUES (p_at_ms, p_who, p_role, p_action, p_target, p_reason, p_before_state, p_after_state, p_approval_id, p_detail)
    RETURNING * INTO appended;
    RETURN appended;
END
$$;

-- Raises 42501 unless the acting role is one of `p_roles`; ID008 unless a reason is given.
CREATE FUNCTION idempo.require_role(p_role text, p_roles text[], p_what text, p_groups text, p_reason text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT p_role = ANY (p_roles) THEN
        PERFORM idempo.raise('ID008', 'role ''' || p_role || ''' may not ' || p_what || ': that needs ' || p_groups);
    END IF;
    IF p_reason IS NULL OR p_reason = '' THEN
        PERFORM idempo.raise('ID008', 'a reason is required');
    END IF;
    IF octet_length(p_reason) > 65536 THEN
        PERFORM idempo.raise('ID003', 'p_reason holds at most 65536 bytes');
    END IF;
END
$$;

CREATE TYPE idempo.approval_answer AS (
    status text, approval_id text, namespace text, operation_key text, revision integer, decision text, reason text,
    operator text, role text, external_reference text, proposal text, approval_status text, operation_version bigint,
    created_at_ms bigint, audit_seq bigint);

-- Approve (redispatch, confirm) or reject an operation in awaiting_approval or
-- confirmation_required (approvecommand.h). Refused (ID008) without a reason, to the login (or
-- the owner's named identity) that requested or last touched the operation, to a second
-- approval of the same proposal by the same identity, and for an approval id already used for
-- another decision or operation; the same approval id again answers `replayed` with the first
-- decision. Above the guard setting four_eyes_above a redispatch or confirm needs two
-- identities: the first is `pending`, the second `applied`.
CREATE FUNCTION idempo.approve(p_namespace text, p_key text, p_approval_id text, p_decision text, p_reason text,
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
    threshold bigint;
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
    threshold := idempo.major_to_minor((SELECT s.value FROM idempo.guard_settings AS s WHERE s.name = 'four_eyes_above'),
                                       coalesce(value.currency, ''));
    four_eyes := p_decision <> 'reject' AND value.minor IS NOT NULL AND threshold IS NOT NULL AND value.minor > threshold;

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

CREATE TYPE idempo.action_answer AS (from_state text, to_state text, audit_seq bigint);

-- Settles an operation by what its provider says (reconcilecommand.h): `p_evidence` is the
-- JSON object {"status": found | not_found | pending | unsupported, "provider", "reference",
-- "answer"} a lookup by key returned. Only unknown_outcome, confirmation_required and a
-- protected write whose lease lapsed are reconciled (a live lease is refused, ID007); found
-- moves to succeeded with the reference as receipt, not_found back to received (through
-- unknown_outcome from dispatching), anything else to confirmation_required for a person. The
-- evidence is kept in the audit record. `p_expected_version`: refused (ID007) if the operation
-- changed since it was looked up.
CREATE FUNCTION idempo.reconcile(p_namespace text, p_key text, p_evidence text, p_reason text,
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
    IF p_retention_ms IS NULL OR p_retention_ms < 0 THEN
        PERFORM idempo.raise('ID004', 'p_retention_ms must not be negative');
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
        PERFORM idempo.raise('ID007', 'the operation no longer needs reconciling (it is ' || o.state
                                      || CASE WHEN o.state = 'dispatching' THEN ' under a live lease or not a protected write' ELSE '' END
                                      || ')');
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

-- Opens a DLQ replay of `p_msg_ids` (dead letters of `<p_queue>_dlq`) under `p_replay_id`, with
-- its `dlq_replay` audit record; `p_detail` (a JSON object: counts, classes, rate) goes into
-- the record. Opening the same replay id again by the same login reopens it with the new set.
CREATE FUNCTION idempo.dlq_replay_begin(p_queue text, p_replay_id text, p_msg_ids bigint[], p_reason text,
                                        p_detail text DEFAULT '{}', p_as_name text DEFAULT NULL,
                                        p_as_role text DEFAULT NULL, p_clock_pinned_ms bigint DEFAULT NULL,
                                        p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    info idempo.queue_registry%ROWTYPE := idempo.queue_info(p_queue);
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.check_identifier(p_replay_id, 'p_replay_id', true, 255);
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin', 'operator'], 'replay dead letters',
                                'idempo_operator or idempo_admin', p_reason);
    IF info.dead_letter_queue IS NULL THEN
        PERFORM idempo.raise('ID004', '''' || p_queue || ''' is a dead-letter queue: name its source queue');
    END IF;
    IF p_msg_ids IS NULL OR array_position(p_msg_ids, NULL) IS NOT NULL THEN
        PERFORM idempo.raise('ID004', 'p_msg_ids must be an array of msg_ids without NULLs');
    END IF;
    PERFORM idempo.check_json(p_detail, 'p_detail', 1048576);
    IF jsonb_typeof(p_detail::jsonb) <> 'object' THEN
        PERFORM idempo.raise('ID004', 'p_detail must be a JSON object');
    END IF;
    IF EXISTS (SELECT FROM idempo.dlq_replays AS r WHERE r.replay_id = p_replay_id
               AND (r.login <> session_user OR r.queue_name <> p_queue)) THEN
        PERFORM idempo.raise('ID008', 'replay id ''' || p_replay_id || ''' belongs to another login or queue');
    END IF;
    audit := idempo.append_audit(now_ms, me.who, me.role, 'dlq_replay', 'queue:' || p_queue, p_reason, '', '', '',
                                 idempo.canonical_json(p_detail::jsonb || jsonb_build_object('login', session_user::text,
                                                                                             'replay_id', p_replay_id)));
    INSERT INTO idempo.dlq_replays AS r (replay_id, queue_name, who, login, msg_ids, begun_seq, created_at_ms)
    VALUES (p_replay_id, p_queue, me.who, session_user, p_msg_ids, audit.seq, now_ms)
    ON CONFLICT (replay_id) DO UPDATE SET msg_ids = excluded.msg_ids, begun_seq = excluded.begun_seq, who = excluded.who,
                                          finished_seq = NULL;
    RETURN audit.seq;
END
$$;

-- Closes a replay with its `dlq_replay_finished` record (the counts in `p_detail`); its dead
-- letters can no longer be requeued under it.
CREATE FUNCTION idempo.dlq_replay_finish(p_queue text, p_replay_id text, p_reason text, p_detail text DEFAULT '{}',
                                         p_as_name text DEFAULT NULL, p_as_role text DEFAULT NULL,
                                         p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin', 'operator'], 'replay dead letters',
                                'idempo_operator or idempo_admin', p_reason);
    PERFORM idempo.check_json(p_detail, 'p_detail', 1048576);
    IF jsonb_typeof(p_detail::jsonb) <> 'object' THEN
        PERFORM idempo.raise('ID004', 'p_detail must be a JSON object');
    END IF;
    PERFORM FROM idempo.dlq_replays AS r
    WHERE r.replay_id = p_replay_id AND r.queue_name = p_queue AND r.login = session_user AND r.finished_seq IS NULL
    FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM idempo.raise('ID005', 'no open replay ''' || coalesce(p_replay_id, '') || ''' of queue ''' || p_queue
                                      || ''' by login ' || session_user);
    END IF;
    audit := idempo.append_audit(now_ms, me.who, me.role, 'dlq_replay_finished', 'queue:' || p_queue, p_reason, '', '', '',
                                 idempo.canonical_json(p_detail::jsonb || jsonb_build_object('login', session_user::text,
                                                                                             'replay_id', p_replay_id)));
    UPDATE idempo.dlq_replays AS r SET finished_seq = audit.seq WHERE r.replay_id = p_replay_id;
    RETURN audit.seq;
END
$$;

-- Stores a guard setting with its audit record. The one setting is four_eyes_above: a
-- non-negative amount in major units ("1000.00"), or '' for none.
CREATE FUNCTION idempo.set_guard_setting(p_name text, p_value text, p_reason text, p_as_name text DEFAULT NULL,
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
    IF p_name IS DISTINCT FROM 'four_eyes_above' THEN
        PERFORM idempo.raise('ID004', 'unknown guard setting ' || coalesce(to_json(p_name)::text, 'NULL'));
    END IF;
    IF p_value IS NULL OR (p_value <> '' AND idempo.major_to_minor(p_value, '') IS NULL) THEN
        PERFORM idempo.raise('ID004', 'the four-eyes threshold must be a non-negative amount such as 1000.00, not '
                                      || coalesce(to_json(p_value)::text, 'NULL'));
    END IF;
    SELECT s.value INTO previous FROM idempo.guard_settings AS s WHERE s.name = p_name FOR UPDATE;
    INSERT INTO idempo.guard_settings (name, value) VALUES (p_name, p_value)
    ON CONFLICT (name) DO UPDATE SET value = excluded.value;
    audit := idempo.append_audit(now_ms, me.who, me.role, 'setting', 'setting:' || p_name, p_reason,
                                 coalesce(to_json(previous)::text, 'null'), to_json(p_value)::text, '', '');
    RETURN audit.seq;
END
$$;

-- New functions are executable by PUBLIC until revoked; the roles get what their role allows.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA idempo FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles WHERE rolname IN ('idempo_approver', 'idempo_admin') LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION idempo.approve(text, text, text, text, text, text, integer, bigint, '
                       'text, text, bigint, bigint) TO %I', r);
    END LOOP;
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles WHERE rolname IN ('idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION idempo.reconcile(text, text, text, text, bigint, bigint, text, text, '
                       'bigint, bigint), idempo.dlq_replay_begin(text, text, bigint[], text, text, text, text, bigint, '
                       'bigint), idempo.dlq_replay_finish(text, text, text, text, text, text, bigint, bigint) TO %I', r);
    END LOOP;
    IF EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'idempo_admin') THEN
        GRANT EXECUTE ON FUNCTION idempo.set_guard_setting(text, text, text, text, text, bigint, bigint) TO idempo_admin;
    END IF;
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION idempo.canonical_json(jsonb) TO %I', r);
    END LOOP;
END
$$;
