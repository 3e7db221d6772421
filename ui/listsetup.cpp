// SPDX-License-Identifier: Apache-2.0
#include "listsetup.h"

#include <QHeaderView>

#include "operationtablemodel.h"

namespace idempo {

ListSetup ListSetup::operations(const QString &settingsKey, int keyRole)
{
    ListSetup s;
    s.settingsKey = settingsKey;
    s.keyRole = keyRole;
    s.hidden = {OperationTableModel::Run, OperationTableModel::Owner, OperationTableModel::Token,
                OperationTableModel::LeaseExpiry};
    s.samples = {{OperationTableModel::Key, QStringLiteral("run-7004:send_invoice")},
                 {OperationTableModel::Namespace, QStringLiteral("default")},
                 {OperationTableModel::Step, QStringLiteral("provision_account")},
                 {OperationTableModel::State, QStringLiteral("confirmation_required"), true},
                 {OperationTableModel::Value, QStringLiteral("125,000.00 EUR")},
                 {OperationTableModel::Attempt, QStringLiteral("3 / 3")},
                 {OperationTableModel::Created, QStringLiteral("59 min ago")},
                 {OperationTableModel::Updated, QStringLiteral("59 min ago")}};
    s.storeSortedBy = OperationTableModel::Created;
    return s;
}

EmptyState *ListSetup::applyToTable(LedgerTableView *table, FilterBar *filters,
                                    std::function<void(int, int)> viewport) const
{
    table->setKeyRole(keyRole, copyLabel);
    for (int c : hidden)
        table->setColumnHidden(c, true);
    if (!samples.empty())
        table->setColumnSamples(samples);
    for (const auto &[column, width] : widths)
        table->horizontalHeader()->resizeSection(column, width);
    table->setSettingsKey(settingsKey);
    if (storeSortedBy)
        table->setStoreSorting(*storeSortedBy, Qt::AscendingOrder);
    table->setViewportListener(std::move(viewport));
    auto *empty = new EmptyState(table);
    QObject::connect(empty, &EmptyState::linkActivated, filters,
                     [filters, clearOwn = clearOwnFilters](const QString &link) {
                         if (link != QLatin1String(EmptyState::ClearFiltersLink))
                             return;
                         if (clearOwn)
                             clearOwn();
                         filters->clear();
                     });
    return empty;
}

} // namespace idempo
