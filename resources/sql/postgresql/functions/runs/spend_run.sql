-- SPDX-License-Identifier: Apache-2.0

-- Charges a claim that passed idempo.check_run (under its lock) with its cost and tokens.
CREATE OR REPLACE FUNCTION idempo.spend_run(p_namespace text, p_run_id text, p_cost_minor bigint, p_cost_currency text,
                                 p_tokens bigint, p_now_ms bigint)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF coalesce(p_cost_minor, 0) > 0 OR coalesce(p_tokens, 0) > 0 OR p_cost_currency IS NOT NULL THEN
        UPDATE idempo.runs AS x SET
            spent_minor = x.spent_minor + coalesce(p_cost_minor, 0),
            tokens_used = x.tokens_used + coalesce(p_tokens, 0),
            currency = coalesce(p_cost_currency, x.currency),
            updated_at_ms = p_now_ms, run_version = x.run_version + 1
        WHERE x.namespace = p_namespace AND x.run_id = p_run_id;
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.spend_run(text,text,bigint,text,bigint,bigint)');
