// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QComboBox;

namespace idempo {

class LedgerConnection;
class SuppressionTableModel;

/// Every duplicate the ledger answered without executing: when, key, kind and source.
class SuppressionsView final : public LedgerView
{
    Q_OBJECT
public:
    explicit SuppressionsView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    EmptyState *emptyState() const override { return m_empty; }
    FilterBar *filters() const override { return m_filters; }
    SuppressionTableModel *model() const { return m_model; }

private:
    SuppressionTableModel *m_model;
    FilterBar *m_filters;
    QComboBox *m_kind;
    LedgerTableView *m_table;
    EmptyState *m_empty;
};

} // namespace idempo
