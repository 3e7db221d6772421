-- SPDX-License-Identifier: Apache-2.0
-- Schema version 20: an approval applies to the operation as its approver saw it. A client
-- decides on what it read (the console's dialog, a bulk set frozen at each operation's version);
-- by the time idempo.approve runs, the operation may have left the state and come back to it
-- (approved, dispatched, failed, awaiting approval again), which the state check alone cannot
-- tell. idempo.approve_seen takes the operation_version the decision was made on and refuses
-- (ID007, nothing written) when the operation has moved since; under the row lock it holds,
-- idempo.approve then decides as before. A replayed approval id answers as it did, whatever
-- the version now.
CREATE FUNCTION idempo.approve_seen(p_seen_version bigint, p_namespace text, p_key text, p_approval_id text,
                                    p_decision text, p_reason text, p_external_reference text DEFAULT '',
                                    p_extra_attempts integer DEFAULT 3, p_retention_ms bigint DEFAULT 86400000,
                                    p_as_name text DEFAULT NULL, p_as_role text DEFAULT NULL,
                                    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.approval_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o idempo.operations%ROWTYPE;
BEGIN
    IF p_seen_version IS NULL OR p_seen_version < 1 THEN
        PERFORM idempo.raise('ID004', 'p_seen_version must be the operation_version the decision was made on, not '
                                      || coalesce(p_seen_version::text, 'NULL'));
    END IF;
    PERFORM idempo.check_namespace(p_namespace);
    PERFORM idempo.check_identifier(p_key, 'p_key', true, 255);
    PERFORM idempo.check_identifier(p_approval_id, 'p_approval_id', true, 255);
    SELECT * INTO o FROM idempo.operations AS x WHERE x.namespace = p_namespace AND x.operation_key = p_key FOR UPDATE;
    IF o.id IS NOT NULL AND o.operation_version <> p_seen_version
       AND NOT EXISTS (SELECT FROM idempo.approvals AS x WHERE x.approval_id = p_approval_id) THEN
        PERFORM idempo.raise('ID007', 'the operation changed since it was seen (version ' || p_seen_version || ', now '
                                      || o.operation_version || ', ' || o.state || ')');
    END IF;
    RETURN idempo.approve(p_namespace, p_key, p_approval_id, p_decision, p_reason, p_external_reference,
                          p_extra_attempts, p_retention_ms, p_as_name, p_as_role, p_clock_pinned_ms, p_clock_offset_ms);
END
$$;

REVOKE ALL ON FUNCTION idempo.approve_seen(bigint, text, text, text, text, text, text, integer, bigint, text, text,
                                           bigint, bigint) FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles WHERE rolname IN ('idempo_approver', 'idempo_admin') LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION idempo.approve_seen(bigint, text, text, text, text, text, text, '
                       'integer, bigint, text, text, bigint, bigint) TO %I', r);
    END LOOP;
END
$$;
