// SPDX-License-Identifier: Apache-2.0
#include "postgresledgerrows.h"

#include <nlohmann/json.hpp>

namespace idempo {
namespace {

std::optional<ErrorClass> optionalErrorClass(const PgResult &r, int row, int column)
{
    if (r.isNull(row, column))
        return std::nullopt;
    return parseErrorClass(r.text(row, column));
}

/// valueRank() in SQL, its factors appended to `params`: without factors the expression
/// `operations_value` indexes; with them a CASE over the bound factors, which no index serves.
std::string valueRankSql(const std::vector<ValueFactor> &factors, PgParams &params)
{
    const std::string none = std::to_string(ListFilter::NoValue);
    if (factors.empty())
        return "coalesce(value_minor, " + none + ")";
    std::string sql = "(CASE WHEN value_minor IS NULL THEN " + none;
    for (const ValueFactor &f : factors) {
        params.text(f.currency);
        const std::string currency = "$" + std::to_string(params.size());
        params.real(f.factor);
        sql += " WHEN value_currency = " + currency + " THEN trunc(least(value_minor::float8 * $" +
               std::to_string(params.size()) + "::float8, " + std::to_string(PricedRankCeiling) +
               "::float8))::bigint";
    }
    return sql + " ELSE " + std::to_string(UnpricedRank) + " END)";
}

} // namespace

ListingOrder listingOrder(const ListFilter &filter, PgParams &params)
{
    const bool byValue =
        filter.order == ListOrder::ValueDescending || filter.order == ListOrder::ValueAscending;
    const std::string value = byValue ? valueRankSql(filter.valueFactors, params) : std::string();
    // (column, id) > (x, $1) in the column's direction, spelled so that the column's own bound
    // (`column >= x`) is an index condition; ties go by id ascending.
    const auto after = [&params](const std::string &column, const char *beyond) {
        const std::string x = "$" + std::to_string(params.size());
        return column + " " + beyond + "= " + x + " AND (" + column + " " + beyond + " " + x +
               " OR id > $1::bigint)";
    };
    std::string first = "id > $1::bigint";
    switch (filter.order) {
    case ListOrder::Id:
        return {first, "id"};
    case ListOrder::IdDescending:
        return {filter.afterId > 0 ? "id < $1::bigint" : first, "id DESC"};
    case ListOrder::ValueDescending:
    case ListOrder::ValueAscending: {
        const bool down = filter.order == ListOrder::ValueDescending;
        if (filter.afterValueMinor) {
            params.integer(*filter.afterValueMinor);
            first = after(value, down ? "<" : ">");
        }
        return {first, value + (down ? " DESC, id" : ", id")};
    }
    case ListOrder::UpdatedAscending:
    case ListOrder::UpdatedDescending: {
        const bool down = filter.order == ListOrder::UpdatedDescending;
        if (filter.afterUpdatedMs) {
            params.integer(*filter.afterUpdatedMs);
            first = after("updated_at_ms", down ? "<" : ">");
        }
        return {first, down ? "updated_at_ms DESC, id" : "updated_at_ms, id"};
    }
    case ListOrder::KeyAscending:
        if (filter.afterKey) {
            params.text(*filter.afterKey);
            first = after("operation_key", ">");
        }
        return {first, "operation_key, id"};
    }
    return {first, "id"};
}

Operation readOperation(const PgResult &r, int row, int column0)
{
    const auto at = [column0](int i) { return column0 + i; };
    Operation op;
    op.id = r.integer(row, at(0));
    op.ns = r.text(row, at(1));
    op.key = r.text(row, at(2));
    op.runId = r.text(row, at(3));
    op.stepId = r.text(row, at(4));
    op.target = r.text(row, at(5));
    op.kind = parseToolKind(r.text(row, at(6))).value_or(ToolKind::ProtectedWrite);
    op.state = parseState(r.text(row, at(7))).value_or(OperationState::Received);
    op.payload = r.text(row, at(8));
    op.fingerprint = r.text(row, at(9));
    op.fingerprintFields =
        nlohmann::json::parse(r.text(row, at(10))).get<std::vector<std::string>>();
    op.attempt = static_cast<int>(r.integer(row, at(11)));
    op.maxAttempts = static_cast<int>(r.integer(row, at(12)));
    op.leaseOwner = r.text(row, at(13));
    op.leaseExpiresAtMs = r.optionalInteger(row, at(14));
    op.fencingToken = r.integer(row, at(15));
    op.nextAttemptAtMs = r.optionalInteger(row, at(16));
    op.errorClass = optionalErrorClass(r, row, at(17));
    op.errorDetail = r.text(row, at(18));
    op.result = r.text(row, at(19));
    op.receipt = r.text(row, at(20));
    op.createdAtMs = r.integer(row, at(21));
    op.updatedAtMs = r.integer(row, at(22));
    op.retentionExpiresAtMs = r.optionalInteger(row, at(23));
    op.version = r.integer(row, at(24));
    op.schemaVersion = static_cast<int>(r.integer(row, at(25)));
    if (!r.isNull(row, at(26)))
        op.value = Amount{r.integer(row, at(26)), r.text(row, at(27))};
    return op;
}

std::optional<BudgetExhaustion> readExhaustion(const PgResult &r, int row, int column0)
{
    if (r.isNull(row, column0))
        return std::nullopt;
    BudgetExhaustion e;
    e.budget = parseBudget(r.text(row, column0)).value_or(BudgetKind::FailedDispatches);
    e.used = r.integer(row, column0 + 1);
    e.limit = r.integer(row, column0 + 2);
    e.requested = r.integer(row, column0 + 3);
    e.currency = r.text(row, column0 + 4);
    e.detail = r.text(row, column0 + 5);
    return e;
}

RunRecord readRun(const PgResult &r, int row)
{
    RunRecord run;
    run.ns = r.text(row, 0);
    run.runId = r.text(row, 1);
    run.state = parseRunState(r.text(row, 2)).value_or(RunState::Active);
    run.budgets.failedDispatches = r.optionalInteger(row, 3);
    run.budgets.noProgressMs = r.optionalInteger(row, 4);
    run.currency = r.text(row, 7);
    if (const auto spend = r.optionalInteger(row, 5))
        run.budgets.spend = Amount{*spend, run.currency};
    run.budgets.tokens = r.optionalInteger(row, 6);
    run.failedDispatches = r.integer(row, 8);
    run.spentMinor = r.integer(row, 9);
    run.tokensUsed = r.integer(row, 10);
    run.lastProgressAtMs = r.integer(row, 11);
    run.createdAtMs = r.integer(row, 12);
    run.updatedAtMs = r.integer(row, 13);
    run.haltedAtMs = r.optionalInteger(row, 14);
    if (!r.isNull(row, 15))
        run.haltBudget = parseBudget(r.text(row, 15));
    run.haltDetail = r.text(row, 16);
    run.version = r.integer(row, 17);
    return run;
}

namespace {

constexpr const char *kRequestColumns =
    "SELECT request_id, namespace, run_id, action, proposal, status, operator, role, reason, "
    "audit_seq, created_at_ms FROM idempo.run_actions ";

std::vector<RunActionRecord> readRequests(const PgResult &r)
{
    std::vector<RunActionRecord> rows;
    for (int row = 0; row < r.rows(); ++row) {
        RunActionRecord q;
        q.requestId = r.text(row, 0);
        q.ns = r.text(row, 1);
        q.runId = r.text(row, 2);
        q.action = r.text(row, 3);
        q.proposal = r.text(row, 4);
        q.status = r.text(row, 5);
        q.operatorName = r.text(row, 6);
        q.role = r.text(row, 7);
        q.reason = r.text(row, 8);
        q.auditSeq = r.integer(row, 9);
        q.createdAtMs = r.integer(row, 10);
        rows.push_back(std::move(q));
    }
    return rows;
}

} // namespace

std::vector<RunActionRecord> selectRunRequests(PgConnection &c, const std::string &ns,
                                               const std::string &runId)
{
    return readRequests(c.execPrepared(
        "read run requests", "idempo_run_requests",
        std::string(kRequestColumns) +
            "WHERE namespace = $1 AND run_id = $2 ORDER BY created_at_ms, request_id",
        PgParams().text(ns).text(runId)));
}

std::optional<RunActionRecord> selectRunRequest(PgConnection &c, const std::string &requestId)
{
    std::vector<RunActionRecord> rows = readRequests(c.execPrepared(
        "read run request", "idempo_run_request",
        std::string(kRequestColumns) + "WHERE request_id = $1", PgParams().text(requestId)));
    if (rows.empty())
        return std::nullopt;
    return std::move(rows.front());
}

std::vector<OperationEvent> readHistory(PgConnection &c, const std::string &ns,
                                        const std::string &key)
{
    const PgResult r = c.execPrepared(
        "read history", "idempo_history",
        "SELECT e.id, e.at_ms, e.from_state, e.to_state, e.fencing_token, e.attempt, e.actor, "
        "e.error_class, e.detail "
        "FROM idempo.operation_events AS e JOIN idempo.operations AS o ON o.id = e.operation_id "
        "WHERE o.namespace = $1 AND o.operation_key = $2 ORDER BY e.id",
        PgParams().text(ns).text(key));
    std::vector<OperationEvent> events;
    events.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row) {
        OperationEvent e;
        e.id = r.integer(row, 0);
        e.ns = ns;
        e.key = key;
        e.atMs = r.integer(row, 1);
        if (!r.isNull(row, 2))
            e.fromState = parseState(r.text(row, 2));
        e.toState = parseState(r.text(row, 3)).value_or(OperationState::Received);
        e.fencingToken = r.integer(row, 4);
        e.attempt = static_cast<int>(r.integer(row, 5));
        e.actor = r.text(row, 6);
        e.errorClass = optionalErrorClass(r, row, 7);
        e.detail = r.text(row, 8);
        events.push_back(std::move(e));
    }
    return events;
}

} // namespace idempo
