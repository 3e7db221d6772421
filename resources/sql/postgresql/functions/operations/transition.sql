-- SPDX-License-Identifier: Apache-2.0

-- One compare-and-set on (state, fencing token), appended to the history (ledgerrules.h). A
-- login that is not the owner may only write from dispatching, under the lease it holds: moving
-- an operation out of any other state is an approval (idempo.approve) or a reconciliation
-- (idempo.reconcile). Final records are kept at least an hour unless the owner says otherwise.
-- A transition that waited for its locks is judged again once its event is written (idempo.move).
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

SELECT idempo.grant_execute('idempo.transition(text,text,text,bigint,text,text,text,text,text,text,text,bigint,bigint,integer,bigint,bigint,bigint)', 'idempo_worker');
