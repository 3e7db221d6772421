// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QLabel;

namespace idempo {

class LedgerConnection;
class OperationTableModel;

/// Operations in `dispatching`: owner, fencing token, attempt and a live lease countdown;
/// lapsed leases are bold red and counted in the header line.
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

private:
    void updateSummary();

    OperationTableModel *m_model;
    FilterBar *m_filters;
    LedgerTableView *m_table;
    QLabel *m_summary;
    EmptyState *m_empty;
};

} // namespace idempo
