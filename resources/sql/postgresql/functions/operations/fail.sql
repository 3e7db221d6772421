-- SPDX-License-Identifier: Apache-2.0

-- A worker's failed attempt, placed by the default retry policy (retrypolicy.h): validation,
-- auth and policy_denied stop (failed_terminal); unknown_outcome on a protected write goes to
-- unknown_outcome; the last allowed attempt goes to confirmation_required; otherwise
-- failed_retryable after about 1 s, 4 s, 16 s (±20 %, at most 300 s; rate_limited waits at
-- least p_retry_after_ms).
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

SELECT idempo.grant_execute('idempo.fail(text,text,bigint,text,text,bigint,text,bigint)', 'idempo_worker');
