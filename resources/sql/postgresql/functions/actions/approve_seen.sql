-- SPDX-License-Identifier: Apache-2.0

CREATE OR REPLACE FUNCTION idempo.approve_seen(p_seen_version bigint, p_namespace text, p_key text, p_approval_id text,
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

SELECT idempo.grant_execute('idempo.approve_seen(bigint,text,text,text,text,text,text,integer,bigint,text,text,bigint,bigint)', 'idempo_admin', 'idempo_approver');
