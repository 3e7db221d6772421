// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <QString>

#include "emptystate.h"
#include "filterbar.h"
#include "ledgertableview.h"
#include "ledgerview.h"

namespace idempo {

/// How a view's filtered list of the ledger starts, and the wiring such lists share (Find,
/// Leases, Confirmations, Runs, Suppressions): the columns as the view wants them, the name its
/// column choices are kept under, rows read in pages as they come into sight, an EmptyState whose
/// "clear the filters" link clears them, and the view reloaded when they change.
struct ListSetup
{
    QString settingsKey;     ///< LedgerTableView::setSettingsKey()
    int keyRole = 0;         ///< the role Copy reads (LedgerTableView::setKeyRole())
    QString copyLabel;       ///< the Copy action's words; empty: the table's own
    std::vector<int> hidden; ///< columns hidden until the person shows them
    std::vector<LedgerTableView::ColumnSample> samples; ///< default widths by sample values
    std::vector<std::pair<int, int>> widths;            ///< default widths: (column, pixels)
    std::optional<int> storeSortedBy; ///< the store orders the rows, by this column at first
    /// Clears the view's own filters, before the FilterBar clears (the link clears both).
    std::function<void()> clearOwnFilters;

    /// The operation lists' columns (Find, Confirmations): run, owner, token and lease hidden,
    /// oldest first.
    static ListSetup operations(const QString &settingsKey, int keyRole);

    /// Sets up `table` in `view`, once `model` is its model, with `filters` above it; answers the
    /// list's EmptyState. `Model` pages by setViewport() and says pageLoaded().
    template <typename Model>
    EmptyState *apply(LedgerView *view, LedgerTableView *table, Model *model,
                      FilterBar *filters) const
    {
        EmptyState *empty = applyToTable(
            table, filters, [model](int first, int count) { model->setViewport(first, count); });
        QObject::connect(model, &Model::pageLoaded, empty, &EmptyState::modelAnswered);
        QObject::connect(filters, &FilterBar::changed, view, &LedgerView::reload);
        return empty;
    }

private:
    EmptyState *applyToTable(LedgerTableView *table, FilterBar *filters,
                             std::function<void(int, int)> viewport) const;
};

} // namespace idempo
