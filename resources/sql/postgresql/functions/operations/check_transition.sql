-- SPDX-License-Identifier: Apache-2.0

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

SELECT idempo.grant_execute('idempo.check_transition(text,text,text,bigint,text,text,text,text,text,text,text,bigint,bigint,integer,bigint)');
