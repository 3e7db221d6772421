-- SPDX-License-Identifier: Apache-2.0

-- The sentence of an exhaustion (runbudget.h exhaustionDetail).
CREATE OR REPLACE FUNCTION idempo.budget_detail(e idempo.budget_answer) RETURNS text
    LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
RETURN CASE e.budget
    WHEN 'failed_dispatches' THEN e.used || ' failed dispatches of ' || e.budget_limit
    WHEN 'no_progress' THEN 'no progress for ' || (e.used / 1000) || ' s (limit ' || (e.budget_limit / 1000) || ' s)'
    WHEN 'spend' THEN CASE WHEN e.requested = 0
                           THEN 'spent ' || idempo.format_minor(e.used, e.currency) || ' of '
                                || idempo.format_minor(e.budget_limit, e.currency)
                           ELSE 'spent ' || idempo.format_minor(e.used, e.currency) || ' + '
                                || idempo.format_minor(e.requested, e.currency) || ' would pass the cap of '
                                || idempo.format_minor(e.budget_limit, e.currency) END
    ELSE CASE WHEN e.requested = 0 THEN e.used || ' tokens of ' || e.budget_limit
              ELSE e.used || ' tokens + ' || e.requested || ' would pass the cap of ' || e.budget_limit END
    END;

SELECT idempo.grant_execute('idempo.budget_detail(budget_answer)');
