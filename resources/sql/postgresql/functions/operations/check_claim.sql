-- SPDX-License-Identifier: Apache-2.0

-- Raises the precise error for a claim's bad argument (the claim's fast check found one).
CREATE OR REPLACE FUNCTION idempo.check_claim(p_namespace text, p_key text, p_payload text, p_payload_sha256 text, p_owner text,
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

SELECT idempo.grant_execute('idempo.check_claim(text,text,text,text,text,text,bigint,integer,boolean,text,text,text,text,text,bigint,text,integer)');
