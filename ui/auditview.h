// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;

namespace idempo {

class AuditTableModel;
class LedgerConnection;

/// The audit log of guarded actions: who (and in which role) did what to which target, when,
/// why, the state before and after and the approval id; filters by action, actor and target
/// prefix; CSV and JSON export of what the filters show; "Verify chain" checks the hash chain
/// (AuditVerify) and names the first bad record.
class AuditView final : public LedgerView
{
    Q_OBJECT
public:
    explicit AuditView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    EmptyState *emptyState() const override { return m_empty; }
    AuditTableModel *model() const { return m_model; }
    QComboBox *actionFilter() const { return m_action; }
    QLineEdit *actorFilter() const { return m_actor; }
    QLineEdit *targetFilter() const { return m_target; }
    QPushButton *verifyButton() const { return m_verify; }
    /// The verification's verdict as shown.
    QString verdict() const;

    /// Writes what the filters show to `path` as CSV or JSON (by the extension); false on error.
    bool exportTo(const QString &path) const;

Q_SIGNALS:
    void loaded();
    void verified(bool ok);

private:
    void applyFilter();
    void verify();
    void exportAs(const QString &format);

    LedgerConnection *m_connection;
    AuditTableModel *m_model;
    QComboBox *m_action;
    QLineEdit *m_actor;
    QLineEdit *m_target;
    QPushButton *m_verify;
    QLabel *m_verdict;
    QTableView *m_table;
    EmptyState *m_empty;
    quint64 m_generation = 0;
};

} // namespace idempo
