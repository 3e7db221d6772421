-- SPDX-License-Identifier: Apache-2.0

-- The budget rule of a dispatching claim (runbudget.h checkRunBudget): NULL when it may dispatch.
CREATE OR REPLACE FUNCTION idempo.run_exhaustion(r idempo.runs, p_cost bigint, p_tokens bigint, p_redispatch boolean,
                                      p_now_ms bigint)
    RETURNS idempo.budget_answer LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    e idempo.budget_answer;
BEGIN
    IF r.state = 'halted' THEN
        e := ROW(coalesce(r.halt_budget, 'failed_dispatches'), NULL, NULL, 0, r.currency, r.halt_detail);
        e.used := CASE e.budget WHEN 'failed_dispatches' THEN r.failed_dispatches
                                WHEN 'no_progress' THEN p_now_ms - r.last_progress_at_ms
                                WHEN 'spend' THEN r.spent_minor ELSE r.tokens_used END;
        e.budget_limit := coalesce(CASE e.budget WHEN 'failed_dispatches' THEN r.failed_dispatch_limit
                                                 WHEN 'no_progress' THEN r.no_progress_ms
                                                 WHEN 'spend' THEN r.spend_limit_minor ELSE r.token_limit END, 0);
        IF e.detail = '' THEN
            e.detail := idempo.budget_detail(e);
        END IF;
        RETURN e;
    ELSIF r.failed_dispatch_limit IS NOT NULL AND r.failed_dispatches >= r.failed_dispatch_limit THEN
        e := ROW('failed_dispatches', r.failed_dispatches, r.failed_dispatch_limit, 0, '', NULL);
    ELSIF p_redispatch AND r.no_progress_ms IS NOT NULL AND p_now_ms - r.last_progress_at_ms >= r.no_progress_ms THEN
        e := ROW('no_progress', p_now_ms - r.last_progress_at_ms, r.no_progress_ms, 0, '', NULL);
    ELSIF r.spend_limit_minor IS NOT NULL AND r.spent_minor + p_cost > r.spend_limit_minor THEN
        e := ROW('spend', r.spent_minor, r.spend_limit_minor, p_cost, r.currency, NULL);
    ELSIF r.token_limit IS NOT NULL AND r.tokens_used + p_tokens > r.token_limit THEN
        e := ROW('tokens', r.tokens_used, r.token_limit, p_tokens, '', NULL);
    ELSE
        RETURN NULL;
    END IF;
    e.detail := idempo.budget_detail(e);
    RETURN e;
END
$$;

SELECT idempo.grant_execute('idempo.run_exhaustion(runs,bigint,bigint,boolean,bigint)');
