// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <utility>

#include "ledgerview.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTimer;

namespace idempo {

class AuditTableModel;
class LedgerConnection;
struct AuditFilter;

/// The audit log of guarded actions, newest first: who (and in which role) did what to which
/// target, when, why, the state before and after and the approval id. Filters by action,
/// identity, namespace, target (prefix, or whole) and time, in the ledger (auditRecords()), and
/// pages like the other lists; CSV and JSON export of every record the filters let through;
/// "Verify chain" checks the hash chain (AuditVerify) and names the first bad record. A row
/// naming an operation opens it (operationRequested()).
class AuditView final : public LedgerView
{
    Q_OBJECT
public:
    explicit AuditView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    EmptyState *emptyState() const override { return m_empty; }
    AuditTableModel *model() const { return m_model; }
    QComboBox *actionFilter() const { return m_action; }
    QLineEdit *actorFilter() const { return m_actor; }
    QLineEdit *namespaceFilter() const { return m_ns; }
    QLineEdit *targetFilter() const { return m_target; }
    /// Ticked: the target filter is the whole target, not a prefix.
    QCheckBox *wholeTarget() const { return m_whole; }
    QComboBox *timeFilter() const { return m_time; }
    QPushButton *verifyButton() const { return m_verify; }
    /// The verification's verdict as shown.
    QString verdict() const;
    /// The filters as the ledger gets them (`nowMs` for the time choice).
    AuditFilter filter(std::int64_t nowMs) const;

    /// Shows only the records of operation `ns`/`key` (every other filter cleared).
    void showOperation(const QString &ns, const QString &key);
    /// Writes every record the filters let through to `path` as CSV or JSON (by the extension),
    /// on the worker; exported() tells how it went.
    void exportTo(const QString &path);

    /// "ns/key" → {ns, key}; empty for a target that names no operation (queue:, setting:, run:).
    static std::pair<QString, QString> operationOf(const QString &target);

Q_SIGNALS:
    void loaded();
    void verified(bool ok);
    void exported(bool ok, int records);
    /// A row naming an operation was activated (double-click, Enter, "Open operation").
    void operationRequested(const QString &ns, const QString &key);

private:
    void applyFilter();
    void verify();
    void exportAs(const QString &format);
    void openCurrent();

    LedgerConnection *m_connection;
    AuditTableModel *m_model;
    QComboBox *m_action;
    QLineEdit *m_actor;
    QLineEdit *m_ns;
    QLineEdit *m_target;
    QCheckBox *m_whole;
    QComboBox *m_time;
    QPushButton *m_verify;
    QLabel *m_verdict;
    LedgerTableView *m_table;
    EmptyState *m_empty;
    QTimer *m_debounce;
};

} // namespace idempo
