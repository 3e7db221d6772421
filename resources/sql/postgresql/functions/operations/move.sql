-- SPDX-License-Identifier: Apache-2.0

-- The locked record `o` moved by one compare-and-set (ledgerrules.h checkTransition and
-- applyTransition), with its history event naming `p_actor` and the login. Raises ID006 for a
-- token that is not current or a lease that is gone, ID007 for a state that moved or a pair the
-- table forbids, ID004 for a dispatch without a lease. Only for the functions of this schema.
-- The move judges its record again once its event is written (the events table,
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

SELECT idempo.grant_execute('idempo.move(operations,text,bigint,text,text,text,text,text,text,text,bigint,bigint,integer,bigint,bigint)');
