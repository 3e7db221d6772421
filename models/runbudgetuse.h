// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <vector>

#include <QString>

#include "runbudget.h"

namespace idempo {

/// One limited budget of a run as the console draws it: a bar and its figures.
struct BudgetUse
{
    BudgetKind kind = BudgetKind::FailedDispatches;
    double fraction = 0;   ///< used / limit, in [0, 1]
    QString label;         ///< "2 of 3 failed dispatches"
    QString brief;         ///< "2/3 failed", for a bar in a table cell
    bool haltedIt = false; ///< the budget the run halted on

    bool operator==(const BudgetUse &) const = default;
};

/// The budgets of `run` that have a limit, in BudgetKind order, at `nowMs` on the ledger's clock.
/// Time without progress has a bar only while `open` operations wait: a run whose steps are all
/// final makes no progress and needs none.
std::vector<BudgetUse> budgetUses(const RunRecord &run, int open, std::int64_t nowMs);

/// "failed dispatches", "time without progress", "spend", "tokens".
QString budgetText(BudgetKind kind);

/// "Halted: 3 failed dispatches of 3", "Active", for the run's state line.
QString runStateText(const RunRecord &run);

} // namespace idempo
