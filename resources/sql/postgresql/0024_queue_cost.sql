-- SPDX-License-Identifier: Apache-2.0
-- Schema version 24: the queue's cycle cheaper (docs/benchmarks.md), rules and refusals unchanged.
--
-- idempo.ms_at was declared IMMUTABLE over timestamptz + interval, which is STABLE, so the
-- planner never inlined it: each of its four calls in a send, read and ack cycle ran through the
-- SQL function machinery (about 17 µs a call). Declared as what it is, it is inlined.
ALTER FUNCTION idempo.ms_at(bigint) STABLE;

-- The queue's durations are bounded, as the stores bound them (MaxQueueDurationMs, ten years):
-- a larger one overflowed the clock's arithmetic with a bare 22003 or 22008 that named no
-- argument. A read's carried acks (at most 10,000 pairs) must each be two whole numbers of 1 or
-- more in range, all checked before any is acknowledged, or the read names the pair: a fraction
-- or a huge number was a bare cast error, and a bad last pair came after every other's work.
-- Otherwise as in schemas 16 and 8.
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
    RETURN id;
END
$$;

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

CREATE OR REPLACE FUNCTION idempo.queue_nack(p_queue text, p_msg_id bigint, p_error_class text, p_error_detail text DEFAULT '',
                                  p_retry_delay_ms bigint DEFAULT 0, p_read_ct integer DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
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
    RETURN m;
END
$$;

CREATE OR REPLACE FUNCTION idempo.queue_set_vt(p_queue text, p_msg_id bigint, p_vt_offset_ms bigint,
                                    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_vt_offset_ms IS NULL OR p_vt_offset_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_vt_offset_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_vt_offset_ms::text, 'NULL'));
    END IF;
    RETURN idempo.update_vt(p_queue, p_msg_id, idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms) + p_vt_offset_ms, NULL);
END
$$;

-- The ledger's durations likewise: a retry delay or a retention beyond ten years overflowed
-- now + the duration with a bare 22003 (fail passes its p_retry_after_ms on as the retry
-- delay, and now names it). Otherwise as in schemas 7, 16, 19 and 9.
CREATE OR REPLACE FUNCTION idempo.check_transition(p_namespace text, p_key text, p_from text, p_fencing_token bigint, p_to text,
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
    IF p_retry_delay_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retry_delay_ms must be 0..315360000000 ms (ten years), not ' || p_retry_delay_ms);
    END IF;
    IF p_retention_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retention_ms must be 0..315360000000 ms (ten years), not ' || p_retention_ms);
    END IF;
    IF p_lease_ms NOT BETWEEN 1 AND 86400000 OR p_extra_attempts NOT BETWEEN 0 AND 100 THEN
        PERFORM idempo.raise('ID004', 'p_lease_ms must be 1 ms..24 h and p_extra_attempts 0..100');
    END IF;
END
$$;

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

CREATE OR REPLACE FUNCTION idempo.reconcile(p_namespace text, p_key text, p_evidence text, p_reason text,
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
    IF p_retention_ms IS NULL OR p_retention_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retention_ms must be 0..315360000000 ms (ten years), not ' || coalesce(p_retention_ms::text, 'NULL'));
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

CREATE OR REPLACE FUNCTION idempo.fail(p_namespace text, p_key text, p_fencing_token bigint, p_error_class text,
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
    IF p_retry_after_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retry_after_ms must be 0..315360000000 ms (ten years), not ' || p_retry_after_ms);
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
