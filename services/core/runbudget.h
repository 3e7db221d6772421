// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "amount.h"

namespace idempo {

/// A run's state: `active` dispatches, `halted` dispatches nothing until a person resumes it.
/// `finished` is how an active run whose operations are all final (succeeded, failed_terminal)
/// is reported: the ledger stores it as active, and its next claim simply goes on.
enum class RunState
{
    Active,
    Halted,
    Finished,
};

/// The budgets of one run (design.md "Run budgets").
enum class BudgetKind
{
    FailedDispatches, ///< dispatches that ended in a failure
    NoProgress,       ///< time without an operation of the run created, finished or moved on
    Spend,            ///< money the run's dispatches may incur, in the cap's currency
    Tokens,           ///< model tokens the run's dispatches may use
};

std::string_view runStateName(RunState state);
std::string_view budgetName(BudgetKind budget);
std::optional<RunState> parseRunState(std::string_view name);
std::optional<BudgetKind> parseBudget(std::string_view name);

/// Guard settings that give a new run its budgets ("" = no limit): failed dispatches (a count),
/// time without progress (seconds), spend cap (an amount such as "100.00 EUR"), token cap.
inline constexpr std::string_view RunFailedDispatchesSetting = "run_failed_dispatches";
inline constexpr std::string_view RunNoProgressSetting = "run_no_progress_s";
inline constexpr std::string_view RunSpendCapSetting = "run_spend_cap";
inline constexpr std::string_view RunTokenCapSetting = "run_token_cap";

/// True for the four run-budget settings above.
bool isRunBudgetSetting(std::string_view name);

/// Why `value` is not a valid value of run-budget setting `name`; empty when it is.
std::string runBudgetSettingProblem(std::string_view name, std::string_view value);

/// A run's limits; unset = no limit.
struct RunBudgets
{
    std::optional<std::int64_t> failedDispatches = 3;
    std::optional<std::int64_t> noProgressMs = 600'000;
    std::optional<Amount> spend;
    std::optional<std::int64_t> tokens;

    bool operator==(const RunBudgets &) const = default;
};

/// The budgets a new run gets from the ledger's guard settings, read through `setting`
/// (unset: the built-in default: 3 failed dispatches, 10 minutes, no spend or token cap).
RunBudgets
defaultRunBudgets(const std::function<std::optional<std::string>(std::string_view)> &setting);

/// One execution's record, per (namespace, run id), created by the first claim naming the run.
struct RunRecord
{
    std::string ns;
    std::string runId;
    RunState state = RunState::Active;
    RunBudgets budgets;
    std::int64_t failedDispatches = 0; ///< used
    std::int64_t spentMinor = 0;       ///< used, in `currency`'s minor units
    std::string currency;              ///< the spend cap's, or the first declared cost's
    std::int64_t tokensUsed = 0;
    /// The last progress: the run created or resumed, an operation of it created, final, or
    /// received again (an approval, a reconciliation).
    std::int64_t lastProgressAtMs = 0;
    std::int64_t createdAtMs = 0;
    std::int64_t updatedAtMs = 0;
    std::optional<std::int64_t> haltedAtMs;
    std::optional<BudgetKind> haltBudget;
    std::string haltDetail; ///< the figures, as a sentence
    std::int64_t version = 1;

    bool operator==(const RunRecord &) const = default;
};

/// Which budget a claim found exhausted, with the figures (for spend in minor units of
/// `currency`; for no progress in milliseconds).
struct BudgetExhaustion
{
    BudgetKind budget = BudgetKind::FailedDispatches;
    std::int64_t used = 0;
    std::int64_t limit = 0;
    std::int64_t requested = 0; ///< what the refused claim declared (spend, tokens)
    std::string currency;
    std::string detail; ///< exhaustionDetail()

    bool operator==(const BudgetExhaustion &) const = default;
};

/// "3 failed dispatches of 3", "spend 95.00 EUR + 10.00 EUR over the cap of 100.00 EUR", …
std::string exhaustionDetail(const BudgetExhaustion &e);

/// What a claim that would dispatch under `run` declares.
struct BudgetDemand
{
    std::optional<Amount> cost;
    std::int64_t tokens = 0;
    bool redispatch = false; ///< an existing operation again (no-progress applies), not a new one
};

/// The budget rule of a dispatching claim, one pure function both stores follow (PostgreSQL in
/// idempo.claim): a halted run answers its halt; else failed dispatches at their limit, no
/// progress for the limit before a redispatch, spend or tokens that the demand would take over
/// their cap exhaust the run. Unset = the claim may dispatch. Throws Error(InvalidArgument) for
/// a cost in another currency than the run's.
std::optional<BudgetExhaustion> checkRunBudget(const RunRecord &run, const BudgetDemand &demand,
                                               std::int64_t nowMs);

/// The exhaustion a halted run reports: its halt budget with today's figures.
BudgetExhaustion haltedExhaustion(const RunRecord &run, std::int64_t nowMs);

/// Filter and keyset cursor of a run listing, ordered by (namespace, run id).
struct RunFilter
{
    std::string ns; ///< empty = every namespace
    std::optional<RunState> state;
    std::string afterNs; ///< keyset cursor: the previous page's last run
    std::string afterRunId;
    int limit = 100;
};

} // namespace idempo
