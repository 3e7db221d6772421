// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QLabel;
class QPushButton;

namespace idempo {

class ActionController;
class BulkActionBar;
class LedgerConnection;
class OperationTableModel;

/// Operations in `dispatching`: owner, fencing token, attempt and a live lease countdown;
/// lapsed leases are bold red and counted in the header line. "Reconcile…" settles the selected
/// protected write whose lease lapsed (its outcome is unknown) through the guarded action.
class LeasesView final : public LedgerView
{
    Q_OBJECT
public:
    explicit LeasesView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    FilterBar *filters() const override { return m_filters; }
    EmptyState *emptyState() const override { return m_empty; }
    OperationTableModel *model() const { return m_model; }
    /// Enables "Reconcile…" through `actions` (per the acting role and the selected row).
    void setActions(ActionController *actions);
    QPushButton *reconcileButton() const { return m_reconcile; }
    /// Reconciles the selected rows, or every lapsed protected write the filter matches.
    BulkActionBar *bulkBar() const { return m_bulk; }

private:
    void updateSummary();
    void updateReconcile();

    OperationTableModel *m_model;
    FilterBar *m_filters;
    LedgerTableView *m_table;
    QLabel *m_summary;
    QPushButton *m_reconcile;
    ActionController *m_actions = nullptr;
    BulkActionBar *m_bulk;
    EmptyState *m_empty;
};

} // namespace idempo
