// SPDX-License-Identifier: Apache-2.0
#include "recordjson.h"

#include <QDateTime>

namespace idempo {
namespace {

nlohmann::json embedded(const std::string &canonical)
{
    return canonical.empty() ? nlohmann::json() : nlohmann::json::parse(canonical);
}

nlohmann::json text(std::string_view s)
{
    return std::string(s);
}

} // namespace

nlohmann::json timestampJson(std::optional<std::int64_t> ms)
{
    if (!ms)
        return nullptr;
    return QDateTime::fromMSecsSinceEpoch(*ms, Qt::UTC).toString(Qt::ISODateWithMs).toStdString();
}

nlohmann::json operationJson(const Operation &op)
{
    return {
        {"id", op.id},
        {"namespace", op.ns},
        {"key", op.key},
        {"run_id", op.runId},
        {"step_id", op.stepId},
        {"target", op.target},
        {"tool_kind", text(toolKindName(op.kind))},
        {"state", text(stateName(op.state))},
        {"payload", embedded(op.payload)},
        {"payload_fingerprint", op.fingerprint},
        {"fingerprint_fields", op.fingerprintFields},
        {"attempt", op.attempt},
        {"max_attempts", op.maxAttempts},
        {"lease_owner", op.leaseOwner},
        {"lease_expires_at", timestampJson(op.leaseExpiresAtMs)},
        {"fencing_token", op.fencingToken},
        {"next_attempt_at", timestampJson(op.nextAttemptAtMs)},
        {"error_class", op.errorClass ? text(errorClassName(*op.errorClass)) : nlohmann::json()},
        {"error_detail", op.errorDetail},
        {"result", embedded(op.result)},
        {"receipt", embedded(op.receipt)},
        {"created_at", timestampJson(op.createdAtMs)},
        {"updated_at", timestampJson(op.updatedAtMs)},
        {"retention_expires_at", timestampJson(op.retentionExpiresAtMs)},
        {"operation_version", op.version},
        {"schema_version", op.schemaVersion},
        {"value", op.value ? nlohmann::json(amountText(*op.value)) : nlohmann::json()},
    };
}

nlohmann::json eventJson(const OperationEvent &event)
{
    return {
        {"id", event.id},
        {"at", timestampJson(event.atMs)},
        {"from", event.fromState ? text(stateName(*event.fromState)) : nlohmann::json()},
        {"to", text(stateName(event.toState))},
        {"fencing_token", event.fencingToken},
        {"attempt", event.attempt},
        {"actor", event.actor},
        {"error_class",
         event.errorClass ? text(errorClassName(*event.errorClass)) : nlohmann::json()},
        {"detail", event.detail},
    };
}

nlohmann::json claimJson(const ClaimResult &result)
{
    const Operation &op = result.operation;
    nlohmann::json j = {
        {"outcome", text(claimOutcomeName(result.outcome))},
        {"key", op.key},
        {"namespace", op.ns},
        {"state", text(stateName(op.state))},
        {"fencing_token", op.fencingToken},
        {"attempt", op.attempt},
        {"lease_expires_at", timestampJson(op.leaseExpiresAtMs)},
    };
    if (result.outcome == ClaimOutcome::RetryLater)
        j["retry_at"] = timestampJson(op.nextAttemptAtMs);
    if (result.outcome == ClaimOutcome::Replayed) {
        j["result"] = embedded(op.result);
        j["receipt"] = embedded(op.receipt);
        if (op.state == OperationState::FailedTerminal) {
            j["error"] = {
                {"class", op.errorClass ? text(errorClassName(*op.errorClass)) : nlohmann::json()},
                {"detail", op.errorDetail}};
        }
    }
    if (result.exhausted)
        j["budget"] = exhaustionJson(*result.exhausted);
    j["operation"] = operationJson(op);
    return j;
}

nlohmann::json exhaustionJson(const BudgetExhaustion &e)
{
    nlohmann::json j = {{"budget", text(budgetName(e.budget))},
                        {"used", e.used},
                        {"limit", e.limit},
                        {"requested", e.requested},
                        {"detail", e.detail}};
    if (e.budget == BudgetKind::Spend)
        j["currency"] = e.currency;
    return j;
}

nlohmann::json runJson(const RunRecord &run)
{
    const auto orNull = [](const std::optional<std::int64_t> &v) {
        return v ? nlohmann::json(*v) : nlohmann::json();
    };
    const RunBudgets &b = run.budgets;
    const std::string currency = b.spend ? b.spend->currency : run.currency;
    return {
        {"namespace", run.ns},
        {"run_id", run.runId},
        {"state", text(runStateName(run.state))},
        {"budgets",
         {{"failed_dispatches", orNull(b.failedDispatches)},
          {"no_progress_s",
           b.noProgressMs ? nlohmann::json(*b.noProgressMs / 1000) : nlohmann::json()},
          {"spend", b.spend ? nlohmann::json(amountText(*b.spend)) : nlohmann::json()},
          {"tokens", orNull(b.tokens)}}},
        {"used",
         {{"failed_dispatches", run.failedDispatches},
          {"spend", currency.empty() ? nlohmann::json()
                                     : nlohmann::json(amountText({run.spentMinor, currency}))},
          {"tokens", run.tokensUsed}}},
        {"last_progress_at", timestampJson(run.lastProgressAtMs)},
        {"created_at", timestampJson(run.createdAtMs)},
        {"updated_at", timestampJson(run.updatedAtMs)},
        {"halted_at", timestampJson(run.haltedAtMs)},
        {"halt_budget", run.haltBudget ? text(budgetName(*run.haltBudget)) : nlohmann::json()},
        {"halt_detail", run.haltDetail},
        {"version", run.version},
    };
}

} // namespace idempo
