// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>

#include "engine.h"

namespace idempo::cli {

struct BenchOptions
{
    int cycles = 2000; ///< claim → complete → duplicate-claim cycles per measured round
    int workers = 1;   ///< concurrent threads, each with its own connection
};

/// Which run a benchmark's claims name (run budgets, runbudget.h).
enum class BenchRun
{
    PerCycle, ///< a run of its own per cycle (each claim creates its run)
    None,     ///< no run id: no budget is checked
    Budgeted, ///< one run per worker with the default budgets, checked on every claim
    Charged,  ///< as Budgeted, each claim declaring a cost and tokens that are charged
};

/// The claim of cycle `i` by `worker` with payload and key (the namespace and owner are the
/// caller's): key "run-I:provision_account", in the run `run` names.
ClaimInput benchClaimInput(int i, BenchRun run, int worker);

/// The claim cycle's rate without a run, in a budgeted run, and in a run that charges each claim.
struct BudgetRates
{
    double noRun = 0;
    double budgeted = 0;
    double charged = 0;

    void keepBest(const BudgetRates &round);
    /// {"no_run_cycles_per_s", "budgeted_run_cycles_per_s", "charged_run_cycles_per_s",
    /// "budgeted_ratio", "charged_ratio"} (ratios to the cycle without a run).
    nlohmann::json toJson() const;
};

/// `idempo bench claim`: runs claim → complete → duplicate claim (replayed) cycles through the
/// engine, and the same SQL statements raw (no validation, fingerprinting or policy) on a fresh
/// ledger of the same kind, alternating rounds and keeping each side's best; and the engine's
/// cycle without a run, in a budgeted run and charged (BudgetRates), in the same rounds.
/// Report JSON: {"ledger", "workers", "cycles", "engine_cycles_per_s", "raw_cycles_per_s",
/// "ratio", "budget", "rounds"}.
nlohmann::json benchClaim(Engine &engine, const BenchOptions &options);

/// The report as a few lines of text.
std::string benchReportText(const nlohmann::json &report);

} // namespace idempo::cli
