// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QComboBox;

namespace idempo {

class LedgerConnection;
class OperationDetailPane;
class OperationTableModel;

/// Operations a person must settle (`confirmation_required`, `awaiting_approval`), oldest
/// first or highest value first (ordered by the store), with the selected one in full beside
/// the list.
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
    /// The order selector: index 0 oldest first (the default), 1 highest value first.
    QComboBox *order() const { return m_order; }

private:
    void showCurrent();

    OperationTableModel *m_model;
    FilterBar *m_filters;
    QComboBox *m_order;
    LedgerTableView *m_table;
    EmptyState *m_empty;
    OperationDetailPane *m_detail;
};

} // namespace idempo
