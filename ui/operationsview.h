// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

namespace idempo {

class LedgerConnection;
class OperationDetailPane;
class OperationTableModel;

/// Every operation of the ledger, whatever its state, namespace or run (one without a run id
/// too), found by namespace, state, run, key prefix, age, customer and payload field in the
/// store's own filters, keyset
/// paged; the selected one in full beside the list with the actions its state allows.
class OperationsView final : public LedgerView
{
    Q_OBJECT
public:
    explicit OperationsView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    EmptyState *emptyState() const override { return m_empty; }
    FilterBar *filters() const override { return m_filters; }
    OperationTableModel *model() const { return m_model; }
    OperationDetailPane *detail() const { return m_detail; }

private:
    void showCurrent();

    OperationTableModel *m_model;
    FilterBar *m_filters;
    LedgerTableView *m_table;
    EmptyState *m_empty;
    OperationDetailPane *m_detail;
};

} // namespace idempo
