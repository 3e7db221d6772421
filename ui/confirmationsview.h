// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

namespace idempo {

class BulkActionBar;
class LedgerConnection;
class OperationDetailPane;
class OperationTableModel;

/// Operations a person must settle (`confirmation_required`, `awaiting_approval`,
/// `unknown_outcome`), oldest first or as a header click orders them (in the store), with the
/// selected one in full beside the list. When the selected operation leaves the list (a decision
/// moved it on), the pane stays on it, refreshed, and no other row is selected in its place.
/// Rows select several at once: the bulk row under the list approves, rejects or reconciles
/// them, or everything the filter matches (BulkActionBar).
class ConfirmationsView final : public LedgerView
{
    Q_OBJECT
public:
    explicit ConfirmationsView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    EmptyState *emptyState() const override { return m_empty; }
    FilterBar *filters() const override { return m_filters; }
    OperationTableModel *model() const { return m_model; }
    OperationDetailPane *detail() const { return m_detail; }
    BulkActionBar *bulkBar() const { return m_bulk; }

private:
    void showCurrent();
    /// Re-reads the operation the pane shows after it left the list.
    void followPinned();
    void pinLeavingRow();

    OperationTableModel *m_model;
    FilterBar *m_filters;
    LedgerTableView *m_table;
    EmptyState *m_empty;
    OperationDetailPane *m_detail;
    BulkActionBar *m_bulk;
    LedgerConnection *m_connection;
    bool m_currentLeaving = false; ///< the selected row is being removed
    bool m_pinned = false;         ///< the pane shows an operation no longer selected
    quint64 m_pinGeneration = 0;
};

} // namespace idempo
