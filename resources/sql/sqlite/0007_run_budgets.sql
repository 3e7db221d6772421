-- SPDX-License-Identifier: Apache-2.0
-- Run budgets, schema version 6 (runbudget.h): one record per (namespace, run id), created by
-- the first claim naming the run; requests of the guarded run actions (resume, budget). Times
-- are milliseconds since the Unix epoch (UTC); spend in minor units of `currency`. Limits that
-- are NULL do not limit. A trigger is one line: statements are split at lines ending in ';'.
CREATE TABLE runs (
    namespace TEXT NOT NULL,
    run_id TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'halted')),
    failed_dispatch_limit INTEGER,
    no_progress_ms INTEGER,
    spend_limit_minor INTEGER,
    token_limit INTEGER,
    currency TEXT NOT NULL DEFAULT '',
    failed_dispatches INTEGER NOT NULL DEFAULT 0,
    spent_minor INTEGER NOT NULL DEFAULT 0,
    tokens_used INTEGER NOT NULL DEFAULT 0,
    last_progress_at_ms INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    halted_at_ms INTEGER,
    halt_budget TEXT CHECK (halt_budget IN ('failed_dispatches', 'no_progress', 'spend', 'tokens')),
    halt_detail TEXT NOT NULL DEFAULT '',
    run_version INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (namespace, run_id)
);
CREATE INDEX runs_state ON runs (state, namespace, run_id);
CREATE INDEX operations_namespace_run ON operations (namespace, run_id, state);
CREATE TABLE run_actions (
    request_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    run_id TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('resume', 'budget')),
    proposal TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('applied', 'pending', 'seconded')),
    operator TEXT NOT NULL,
    role TEXT NOT NULL,
    reason TEXT NOT NULL CHECK (length(reason) > 0),
    audit_seq INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX run_actions_run ON run_actions (namespace, run_id, created_at_ms);
-- Every history event that ends a dispatch in failure counts against its run, and halts it at the limit; an operation received again (an approval, a reconciliation) is progress. The other progress, an operation created or final, is read from the operations themselves when it is judged, so the claim and complete of a healthy run write nothing here.
CREATE TRIGGER runs_follow_events AFTER INSERT ON operation_events WHEN NEW.from_state IS NOT NULL AND ((NEW.from_state = 'dispatching' AND NEW.to_state IN ('failed_retryable', 'failed_terminal', 'unknown_outcome', 'confirmation_required')) OR NEW.to_state = 'received') BEGIN UPDATE runs SET failed_dispatches = failed_dispatches + (NEW.to_state <> 'received'), last_progress_at_ms = CASE WHEN NEW.to_state = 'received' THEN max(last_progress_at_ms, NEW.at_ms) ELSE last_progress_at_ms END, state = CASE WHEN state = 'active' AND NEW.to_state <> 'received' AND failed_dispatch_limit IS NOT NULL AND failed_dispatches + 1 >= failed_dispatch_limit THEN 'halted' ELSE state END, halt_budget = CASE WHEN state = 'active' AND NEW.to_state <> 'received' AND failed_dispatch_limit IS NOT NULL AND failed_dispatches + 1 >= failed_dispatch_limit THEN 'failed_dispatches' ELSE halt_budget END, halted_at_ms = CASE WHEN state = 'active' AND NEW.to_state <> 'received' AND failed_dispatch_limit IS NOT NULL AND failed_dispatches + 1 >= failed_dispatch_limit THEN NEW.at_ms ELSE halted_at_ms END, halt_detail = CASE WHEN state = 'active' AND NEW.to_state <> 'received' AND failed_dispatch_limit IS NOT NULL AND failed_dispatches + 1 >= failed_dispatch_limit THEN (failed_dispatches + 1) || ' failed dispatches of ' || failed_dispatch_limit ELSE halt_detail END, updated_at_ms = NEW.at_ms, run_version = run_version + 1 WHERE (namespace, run_id) = (SELECT o.namespace, o.run_id FROM operations o WHERE o.id = NEW.operation_id AND o.run_id <> ''); END;
