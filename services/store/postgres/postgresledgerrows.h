// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "actionrecords.h"
#include "operation.h"
#include "pgconnection.h"

namespace idempo {

// Rows of the shared ledger's tables as the PostgreSQL store reads them (postgresledgerstore.cpp,
// postgresledgeractions.cpp).

/// The columns of an operation in readOperation() order: those of idempo.operation_answer
/// (0007_ledger_functions.sql), which every function that answers an operation returns.
inline constexpr const char *kOperationColumns =
    "id, namespace, operation_key, run_id, step_id, target, tool_kind, state, payload, "
    "payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner, "
    "lease_expires_at_ms, fencing_token, next_attempt_at_ms, error_class, error_detail, result, "
    "receipt, created_at_ms, updated_at_ms, retention_expires_at_ms, operation_version, "
    "schema_version, value_minor, value_currency";
inline constexpr int kOperationColumnCount = 28;

/// The operation in columns column0 … column0 + 27 of `row`.
Operation readOperation(const PgResult &r, int row, int column0);

/// How a listing follows `filter.order`: the keyset clause that continues after the previous page
/// (its values appended to `params`, whose $1 is filter.afterId) and the ORDER BY.
struct ListingOrder
{
    std::string cursor;
    std::string orderBy;
};
ListingOrder listingOrder(const ListFilter &filter, PgParams &params);

/// The budget_exhausted figures in columns column0 … column0 + 5 of `row` (budget, used, limit,
/// requested, currency, detail: idempo.budget_answer), unset when the budget column is NULL.
std::optional<BudgetExhaustion> readExhaustion(const PgResult &r, int row, int column0);

/// The state of run `r` as reported: an active run with operations, all of them final, is
/// `finished` (runbudget.h). Only reads show it; the functions that write runs never see it.
inline const std::string kReportedRunState =
    "CASE WHEN r.state = 'active' AND EXISTS (SELECT 1 FROM idempo.operations AS o WHERE "
    "o.namespace = r.namespace AND o.run_id = r.run_id) AND NOT EXISTS (SELECT 1 FROM "
    "idempo.operations AS o WHERE o.namespace = r.namespace AND o.run_id = r.run_id AND o.state "
    "NOT IN ('succeeded', 'failed_terminal')) THEN 'finished' ELSE r.state END";

/// The columns of a run `r` of idempo.runs in readRun() order (0012_run_budgets.sql), its last
/// progress judged by idempo.run_progress().
inline const std::string kRunColumns =
    "r.namespace, r.run_id, " + kReportedRunState +
    ", r.failed_dispatch_limit, r.no_progress_ms, "
    "r.spend_limit_minor, r.token_limit, r.currency, r.failed_dispatches, r.spent_minor, "
    "r.tokens_used, idempo.run_progress(r), r.created_at_ms, r.updated_at_ms, r.halted_at_ms, "
    "r.halt_budget, r.halt_detail, r.run_version";

/// The run in columns 0 … 17 of `row`.
RunRecord readRun(const PgResult &r, int row);

/// The requests of guarded run actions of (ns, runId), oldest first; the one under `requestId`.
std::vector<RunActionRecord> selectRunRequests(PgConnection &c, const std::string &ns,
                                               const std::string &runId);
std::optional<RunActionRecord> selectRunRequest(PgConnection &c, const std::string &requestId);

/// The history of (ns, key) on `c`, oldest first.
std::vector<OperationEvent> readHistory(PgConnection &c, const std::string &ns,
                                        const std::string &key);

} // namespace idempo
