// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "ledgerview.h"

class QCheckBox;
class QLabel;

namespace idempo {

class FourEyesModel;
class LedgerConnection;
class OperationDetailPane;

/// "Awaiting my second approval": first approvals above the four-eyes threshold, with who
/// approved first and why, and the operation in full beside the list, where the second approval
/// is given through the same guarded dialog as any approval (the pane's buttons).
class FourEyesView final : public LedgerView
{
    Q_OBJECT
public:
    explicit FourEyesView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    EmptyState *emptyState() const override { return m_empty; }
    FourEyesModel *model() const { return m_model; }
    OperationDetailPane *detail() const { return m_detail; }
    QCheckBox *includeMine() const { return m_includeMine; }

    /// The person at the console (their own first approvals are not theirs to second).
    void setActor(const QString &name, const QString &role);

Q_SIGNALS:
    /// How many first approvals the person at the console may second.
    void waitingChanged(int count);

private:
    void showCurrent();
    void updateSummary();

    FourEyesModel *m_model;
    QLabel *m_summary;
    QCheckBox *m_includeMine;
    QCheckBox *m_showSandbox;
    LedgerTableView *m_table;
    EmptyState *m_empty;
    OperationDetailPane *m_detail;
    QString m_actor;
    QString m_role;
    std::string m_selected; ///< approval id of the selected row across a reset
};

} // namespace idempo
