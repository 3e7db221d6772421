-- SPDX-License-Identifier: Apache-2.0
-- Schema version 12: run budgets (runbudget.h, docs/run-budgets.md). One record per
-- (namespace, run id), created by the first claim naming the run with the ledger's default
-- budgets (guard settings run_*); every dispatching claim checks and charges it inside
-- idempo.claim, under the run's row lock, so no two claims pass the same last unit. Failed
-- dispatches and progress are counted by a trigger on the history every write appends to.
-- Limits that are NULL do not limit; spend is in minor units of `currency`.

CREATE TABLE idempo.runs (
    namespace text NOT NULL,
    run_id text NOT NULL,
    state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'halted')),
    failed_dispatch_limit bigint,
    no_progress_ms bigint,
    spend_limit_minor bigint,
    token_limit bigint,
    currency text NOT NULL DEFAULT '',
    failed_dispatches bigint NOT NULL DEFAULT 0,
    spent_minor bigint NOT NULL DEFAULT 0,
    tokens_used bigint NOT NULL DEFAULT 0,
    last_progress_at_ms bigint NOT NULL,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    halted_at_ms bigint,
    halt_budget text CHECK (halt_budget IN ('failed_dispatches', 'no_progress', 'spend', 'tokens')),
    halt_detail text NOT NULL DEFAULT '',
    run_version bigint NOT NULL DEFAULT 1,
    PRIMARY KEY (namespace, run_id)
);
CREATE INDEX runs_state ON idempo.runs (state, namespace, run_id);
CREATE INDEX operations_namespace_run ON idempo.operations (namespace, run_id, state);

-- Requests of the guarded run actions (resume, budget), idempotent by request id.
CREATE TABLE idempo.run_actions (
    request_id text PRIMARY KEY,
    namespace text NOT NULL,
    run_id text NOT NULL,
    action text NOT NULL CHECK (action IN ('resume', 'budget')),
    proposal text NOT NULL,
    status text NOT NULL CHECK (status IN ('applied', 'pending', 'seconded')),
    operator text NOT NULL,
    role text NOT NULL,
    login text NOT NULL DEFAULT session_user,
    reason text NOT NULL CHECK (length(reason) > 0),
    audit_seq bigint NOT NULL,
    created_at_ms bigint NOT NULL
);
CREATE INDEX run_actions_run ON idempo.run_actions (namespace, run_id, created_at_ms);

-- Which budget a claim found exhausted, with its figures (runbudget.h BudgetExhaustion).
CREATE TYPE idempo.budget_answer AS (
    budget text, used bigint, budget_limit bigint, requested bigint, currency text, detail text);

-- The claim answers which budget it found exhausted, and the claim takes what a dispatch may
-- cost. Its arguments change, so the function is made again (and granted again below).
ALTER TYPE idempo.claim_answer ADD ATTRIBUTE budget text, ADD ATTRIBUTE budget_used bigint,
    ADD ATTRIBUTE budget_limit bigint, ADD ATTRIBUTE budget_requested bigint, ADD ATTRIBUTE budget_currency text,
    ADD ATTRIBUTE budget_detail text;
DROP FUNCTION IF EXISTS idempo.claim(text, text, text, text, text, text, bigint, integer, boolean, text, text, text, text, text,
                           bigint, text, integer, bigint, bigint);

REVOKE ALL ON idempo.runs, idempo.run_actions FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT SELECT ON idempo.runs, idempo.run_actions TO %I', r);
    END LOOP;
END
$$;
