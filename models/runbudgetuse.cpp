// SPDX-License-Identifier: Apache-2.0
#include "runbudgetuse.h"

#include <algorithm>

#include <QCoreApplication>
#include <QLocale>

#include "amount.h"
#include "displayformat.h"

namespace idempo {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("idempo::RunBudgetUse", text);
}

double share(std::int64_t used, std::int64_t limit)
{
    if (limit <= 0)
        return used > 0 ? 1.0 : 0.0;
    return std::clamp(static_cast<double>(used) / static_cast<double>(limit), 0.0, 1.0);
}

QString count(std::int64_t n)
{
    return QLocale().toString(static_cast<qlonglong>(n));
}

} // namespace

QString budgetText(BudgetKind kind)
{
    switch (kind) {
    case BudgetKind::FailedDispatches:
        return tr("failed dispatches");
    case BudgetKind::NoProgress:
        return tr("time without progress");
    case BudgetKind::Spend:
        return tr("spend");
    case BudgetKind::Tokens:
        return tr("tokens");
    }
    return {};
}

std::vector<BudgetUse> budgetUses(const RunRecord &run, int open, std::int64_t nowMs)
{
    std::vector<BudgetUse> uses;
    const auto add = [&](BudgetKind kind, double fraction, const QString &label,
                         const QString &brief) {
        uses.push_back({kind, fraction, label, brief,
                        run.state == RunState::Halted && run.haltBudget == kind});
    };
    const RunBudgets &b = run.budgets;
    if (b.failedDispatches)
        add(BudgetKind::FailedDispatches, share(run.failedDispatches, *b.failedDispatches),
            tr("%1 of %2 failed dispatches")
                .arg(count(run.failedDispatches), count(*b.failedDispatches)),
            tr("%1/%2 failed").arg(count(run.failedDispatches), count(*b.failedDispatches)));
    if (b.noProgressMs && open > 0) {
        // A halted run waits for a person, not for progress: its clock stops at the halt.
        const std::int64_t until =
            run.state == RunState::Halted ? run.haltedAtMs.value_or(nowMs) : nowMs;
        const std::int64_t idle = std::max<std::int64_t>(0, until - run.lastProgressAtMs);
        add(BudgetKind::NoProgress, share(idle, *b.noProgressMs),
            tr("%1 of %2 without progress").arg(durationText(idle), durationText(*b.noProgressMs)),
            tr("idle %1/%2").arg(durationText(idle), durationText(*b.noProgressMs)));
    }
    if (b.spend)
        add(BudgetKind::Spend, share(run.spentMinor, b.spend->minorUnits),
            tr("%1 of %2 spent")
                .arg(
                    QString::fromStdString(formatAmount(Amount{run.spentMinor, b.spend->currency})),
                    QString::fromStdString(formatAmount(*b.spend))),
            tr("%1/%2").arg(
                QString::fromStdString(formatAmount(Amount{run.spentMinor, b.spend->currency})),
                QString::fromStdString(formatAmount(*b.spend))));
    if (b.tokens)
        add(BudgetKind::Tokens, share(run.tokensUsed, *b.tokens),
            tr("%1 of %2 tokens").arg(count(run.tokensUsed), count(*b.tokens)),
            tr("%1/%2 tokens").arg(count(run.tokensUsed), count(*b.tokens)));
    return uses;
}

QString runStateText(const RunRecord &run)
{
    if (run.state != RunState::Halted)
        return tr("Active");
    return run.haltDetail.empty() ? tr("Halted")
                                  : tr("Halted: %1").arg(displayText(run.haltDetail));
}

} // namespace idempo
