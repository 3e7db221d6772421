// SPDX-License-Identifier: Apache-2.0
#include "runbudget.h"

#include <array>
#include <charconv>
#include <utility>

#include "error.h"

namespace idempo {
namespace {

constexpr std::array<std::pair<RunState, std::string_view>, 3> kRunStates{{
    {RunState::Active, "active"},
    {RunState::Halted, "halted"},
    {RunState::Finished, "finished"},
}};

constexpr std::array<std::pair<BudgetKind, std::string_view>, 4> kBudgets{{
    {BudgetKind::FailedDispatches, "failed_dispatches"},
    {BudgetKind::NoProgress, "no_progress"},
    {BudgetKind::Spend, "spend"},
    {BudgetKind::Tokens, "tokens"},
}};

/// A positive whole number of at most 15 digits, or unset.
std::optional<std::int64_t> positiveCount(std::string_view text)
{
    std::int64_t value = 0;
    if (text.empty() || text.size() > 15 || text.front() == '+' || text.front() == '-')
        return std::nullopt;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 1)
        return std::nullopt;
    return value;
}

std::string seconds(std::int64_t ms)
{
    return std::to_string(ms / 1000) + " s";
}

} // namespace

std::string_view runStateName(RunState state)
{
    for (const auto &[v, name] : kRunStates)
        if (v == state)
            return name;
    return {};
}

std::string_view budgetName(BudgetKind budget)
{
    for (const auto &[v, name] : kBudgets)
        if (v == budget)
            return name;
    return {};
}

std::optional<RunState> parseRunState(std::string_view name)
{
    for (const auto &[v, n] : kRunStates)
        if (n == name)
            return v;
    return std::nullopt;
}

std::optional<BudgetKind> parseBudget(std::string_view name)
{
    for (const auto &[v, n] : kBudgets)
        if (n == name)
            return v;
    return std::nullopt;
}

bool isRunBudgetSetting(std::string_view name)
{
    return name == RunFailedDispatchesSetting || name == RunNoProgressSetting ||
           name == RunSpendCapSetting || name == RunTokenCapSetting;
}

std::string runBudgetSettingProblem(std::string_view name, std::string_view value)
{
    if (value.empty())
        return {};
    const std::string given = "'" + std::string(value) + "'";
    if (name == RunSpendCapSetting) {
        try {
            parseAmount(value);
        } catch (const Error &e) {
            return "the run spend cap must be an amount such as 100.00 EUR, not " + given + ": " +
                   e.what();
        }
        return {};
    }
    if (!positiveCount(value))
        return std::string(name) +
               " must be a positive whole number (or empty for no limit), not " + given;
    return {};
}

RunBudgets
defaultRunBudgets(const std::function<std::optional<std::string>(std::string_view)> &setting)
{
    RunBudgets b;
    const auto count = [&](std::string_view name, std::optional<std::int64_t> fallback) {
        const std::optional<std::string> v = setting(name);
        return v ? positiveCount(*v) : fallback;
    };
    b.failedDispatches = count(RunFailedDispatchesSetting, b.failedDispatches);
    const std::optional<std::int64_t> noProgressS = count(RunNoProgressSetting, 600);
    b.noProgressMs = noProgressS ? std::optional(*noProgressS * 1000) : std::nullopt;
    b.tokens = count(RunTokenCapSetting, std::nullopt);
    if (const std::optional<std::string> spend = setting(RunSpendCapSetting);
        spend && !spend->empty() && runBudgetSettingProblem(RunSpendCapSetting, *spend).empty())
        b.spend = parseAmount(*spend);
    return b;
}

std::string exhaustionDetail(const BudgetExhaustion &e)
{
    switch (e.budget) {
    case BudgetKind::FailedDispatches:
        return std::to_string(e.used) + " failed dispatches of " + std::to_string(e.limit);
    case BudgetKind::NoProgress:
        return "no progress for " + seconds(e.used) + " (limit " + seconds(e.limit) + ")";
    case BudgetKind::Spend: {
        const std::string used = formatAmount({e.used, e.currency});
        const std::string cap = formatAmount({e.limit, e.currency});
        if (e.requested == 0)
            return "spent " + used + " of " + cap;
        return "spent " + used + " + " + formatAmount({e.requested, e.currency}) +
               " would pass the cap of " + cap;
    }
    case BudgetKind::Tokens:
        if (e.requested == 0)
            return std::to_string(e.used) + " tokens of " + std::to_string(e.limit);
        return std::to_string(e.used) + " tokens + " + std::to_string(e.requested) +
               " would pass the cap of " + std::to_string(e.limit);
    }
    return {};
}

BudgetExhaustion haltedExhaustion(const RunRecord &run, std::int64_t nowMs)
{
    BudgetExhaustion e;
    e.budget = run.haltBudget.value_or(BudgetKind::FailedDispatches);
    e.currency = run.currency;
    switch (e.budget) {
    case BudgetKind::FailedDispatches:
        e.used = run.failedDispatches;
        e.limit = run.budgets.failedDispatches.value_or(0);
        break;
    case BudgetKind::NoProgress:
        e.used = nowMs - run.lastProgressAtMs;
        e.limit = run.budgets.noProgressMs.value_or(0);
        break;
    case BudgetKind::Spend:
        e.used = run.spentMinor;
        e.limit = run.budgets.spend ? run.budgets.spend->minorUnits : 0;
        break;
    case BudgetKind::Tokens:
        e.used = run.tokensUsed;
        e.limit = run.budgets.tokens.value_or(0);
        break;
    }
    e.detail = run.haltDetail.empty() ? exhaustionDetail(e) : run.haltDetail;
    return e;
}

std::optional<BudgetExhaustion> checkRunBudget(const RunRecord &run, const BudgetDemand &demand,
                                               std::int64_t nowMs)
{
    if (demand.cost && !run.currency.empty() && demand.cost->currency != run.currency)
        throw Error(ErrorCode::InvalidArgument, "the claim's cost is in " + demand.cost->currency +
                                                    " but run '" + run.runId +
                                                    "' counts its spend in " + run.currency);
    if (run.state == RunState::Halted)
        return haltedExhaustion(run, nowMs);
    std::optional<BudgetExhaustion> e;
    const RunBudgets &b = run.budgets;
    const std::int64_t cost = demand.cost ? demand.cost->minorUnits : 0;
    if (b.failedDispatches && run.failedDispatches >= *b.failedDispatches)
        e = BudgetExhaustion{BudgetKind::FailedDispatches, run.failedDispatches,
                             *b.failedDispatches};
    else if (demand.redispatch && b.noProgressMs && nowMs - run.lastProgressAtMs >= *b.noProgressMs)
        e = BudgetExhaustion{BudgetKind::NoProgress, nowMs - run.lastProgressAtMs, *b.noProgressMs};
    else if (b.spend && run.spentMinor + cost > b.spend->minorUnits)
        e = BudgetExhaustion{BudgetKind::Spend, run.spentMinor, b.spend->minorUnits, cost,
                             run.currency};
    else if (b.tokens && run.tokensUsed + demand.tokens > *b.tokens)
        e = BudgetExhaustion{BudgetKind::Tokens, run.tokensUsed, *b.tokens, demand.tokens};
    if (e)
        e->detail = exhaustionDetail(*e);
    return e;
}

} // namespace idempo
