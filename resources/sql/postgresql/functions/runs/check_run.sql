-- SPDX-License-Identifier: Apache-2.0

-- The budget step of a dispatching claim, before its write: the run's record, created with
-- the default budgets on its first claim, checked (a re-dispatch on its progress too), and
-- halted when exhausted. A claim that declares no cost or tokens reads the run unlocked while
-- it passes; one that does locks it, so no two claims pass the same last unit. NULL: the claim
-- may dispatch, and then charges with idempo.spend_run under the same lock.
-- The runs table's lock is taken before the claim writes its operation.
CREATE OR REPLACE FUNCTION idempo.check_run(p_namespace text, p_run_id text, p_cost_minor bigint, p_cost_currency text,
                                 p_tokens bigint, p_redispatch boolean, p_now_ms bigint)
    RETURNS idempo.budget_answer LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r idempo.runs%ROWTYPE;
    e idempo.budget_answer;
    cost bigint := coalesce(p_cost_minor, 0);
    tokens bigint := coalesce(p_tokens, 0);
    defaults record;
BEGIN
    IF cost = 0 AND tokens = 0 THEN
        SELECT * INTO r FROM idempo.runs AS x WHERE x.namespace = p_namespace AND x.run_id = p_run_id;
        IF FOUND THEN
            IF p_redispatch THEN
                r.last_progress_at_ms := idempo.run_progress(r);
            END IF;
            e := idempo.run_exhaustion(r, 0, 0, p_redispatch, p_now_ms);
            IF e.budget IS NULL OR r.state = 'halted' THEN
                RETURN e;
            END IF;
        END IF;
    END IF;
    -- A claim charges the run after it wrote its operation: the table's lock for that write is
    -- taken here, before the operation is written, so it cannot be waited for afterwards.
    LOCK TABLE idempo.runs IN ROW EXCLUSIVE MODE;
    SELECT * INTO r FROM idempo.runs AS x WHERE x.namespace = p_namespace AND x.run_id = p_run_id FOR UPDATE;
    IF NOT FOUND THEN
        SELECT max(s.value) FILTER (WHERE s.name = 'run_failed_dispatches') AS failed,
               max(s.value) FILTER (WHERE s.name = 'run_no_progress_s') AS no_progress,
               max(s.value) FILTER (WHERE s.name = 'run_spend_cap') AS spend,
               max(s.value) FILTER (WHERE s.name = 'run_token_cap') AS tokens,
               coalesce(bool_or(s.name = 'run_failed_dispatches'), false) AS failed_set,
               coalesce(bool_or(s.name = 'run_no_progress_s'), false) AS no_progress_set
        INTO defaults FROM idempo.guard_settings AS s
        WHERE s.name IN ('run_failed_dispatches', 'run_no_progress_s', 'run_spend_cap', 'run_token_cap');
        INSERT INTO idempo.runs AS x (namespace, run_id, failed_dispatch_limit, no_progress_ms, spend_limit_minor,
                                      token_limit, currency, last_progress_at_ms, created_at_ms, updated_at_ms)
        VALUES (p_namespace, p_run_id,
                CASE WHEN defaults.failed_set THEN nullif(defaults.failed, '')::bigint ELSE 3 END,
                CASE WHEN defaults.no_progress_set THEN nullif(defaults.no_progress, '')::bigint * 1000 ELSE 600000 END,
                idempo.major_to_minor(split_part(nullif(defaults.spend, ''), ' ', 1),
                                      split_part(nullif(defaults.spend, ''), ' ', 2)),
                nullif(defaults.tokens, '')::bigint, coalesce(split_part(nullif(defaults.spend, ''), ' ', 2), ''),
                p_now_ms, p_now_ms, p_now_ms)
        ON CONFLICT (namespace, run_id) DO NOTHING;
        SELECT * INTO r FROM idempo.runs AS x WHERE x.namespace = p_namespace AND x.run_id = p_run_id FOR UPDATE;
    END IF;
    IF p_cost_currency IS NOT NULL AND r.currency <> '' AND p_cost_currency <> r.currency THEN
        PERFORM idempo.raise('ID004', 'the claim''s cost is in ' || p_cost_currency || ' but run ''' || p_run_id
                                      || ''' counts its spend in ' || r.currency);
    END IF;
    IF p_redispatch THEN
        r.last_progress_at_ms := idempo.run_progress(r);
    END IF;
    e := idempo.run_exhaustion(r, cost, tokens, p_redispatch, p_now_ms);
    IF e.budget IS NOT NULL AND r.state = 'active' THEN
        UPDATE idempo.runs AS x SET state = 'halted', halt_budget = e.budget, halted_at_ms = p_now_ms,
                                    halt_detail = e.detail, updated_at_ms = p_now_ms, run_version = x.run_version + 1
        WHERE x.namespace = p_namespace AND x.run_id = p_run_id;
    END IF;
    RETURN e;
END
$$;

SELECT idempo.grant_execute('idempo.check_run(text,text,bigint,text,bigint,boolean,bigint)');
