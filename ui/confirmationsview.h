// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

namespace idempo {

class LedgerConnection;
class OperationDetailPane;
class OperationTableModel;

/// Operations a person must settle (`confirmation_required`, `awaiting_approval`), oldest
/// first, with the selected one in full beside the list.
class ConfirmationsView final : public LedgerView
{
    Q_OBJECT
public:
    explicit ConfirmationsView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    FilterBar *filters() const override { return m_filters; }
    OperationTableModel *model() const { return m_model; }
    OperationDetailPane *detail() const { return m_detail; }

private:
    void showCurrent();

    OperationTableModel *m_model;
    FilterBar *m_filters;
    LedgerTableView *m_table;
    OperationDetailPane *m_detail;
};

} // namespace idempo
