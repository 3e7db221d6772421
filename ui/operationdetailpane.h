// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include <QString>
#include <QWidget>

#include "operation.h"

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableView;

namespace idempo {

class EventTableModel;
class LedgerConnection;

/// The guarded actions a person may take on one operation from its detail pane.
enum class OperationAction
{
    Redispatch,
    Confirm,
    Reject,
    Reconcile
};

/// One operation in full (the details drawer of the lists that show operations): identity and
/// customer, payload (formatted JSON), attempt history, errors and the provider's evidence, every
/// approval and the audit records whose target is the operation, with a button per guarded
/// action. A button is enabled only when the
/// operation's state allows the action and the connected role may take it; a disabled button's
/// tooltip says why. The pane changes nothing itself: it emits actionRequested(), and the
/// command re-checks everything under the ledger's locks (the server is the authority).
class OperationDetailPane final : public QWidget
{
    Q_OBJECT
public:
    /// Why the connected role may not take `action`; empty when it may.
    using RoleCheck = std::function<QString(OperationAction action)>;

    explicit OperationDetailPane(LedgerConnection *connection, QWidget *parent = nullptr);

    /// Why `op`'s state does not allow `action` at `nowMs` (ms since the epoch, for a lapsed
    /// lease); empty when it does. Follows design.md "Guarded actions": approve / reject from
    /// `awaiting_approval` or `confirmation_required`, confirm only from
    /// `confirmation_required`, reconcile from `unknown_outcome`, `confirmation_required` or a
    /// `dispatching` whose lease lapsed.
    static QString stateRefusal(OperationAction action, const Operation &op, std::int64_t nowMs);

    /// Sets who is acting; until then every action is disabled ("role not known yet").
    void setRoleCheck(RoleCheck check);
    QPushButton *actionButton(OperationAction action) const;
    /// The operation shown, if any.
    const std::optional<Operation> &operation() const { return m_operation; }

    /// Shows `op` and loads its history on the worker.
    void showOperation(const Operation &op);
    void clear();
    /// Reads the operation shown again (after an action: an approval may not change the record).
    void reload();
    const EventTableModel *history() const { return m_history; }
    /// The four-eyes trace as shown: who approved first and what waits for a second approver
    /// (empty when the operation has no pending approval).
    QString approvalsText() const;
    /// The facts line as shown (state, run, step, how long it has waited).
    QString factsText() const;
    /// The Approvals and Audit tabs as shown (one line per record).
    QString approvalListText() const;
    QString auditText() const;

Q_SIGNALS:
    void historyLoaded();
    /// An enabled action button was clicked for the operation shown.
    void actionRequested(idempo::OperationAction action, const idempo::Operation &op);

private:
    void updateActions();
    void updateFacts();

    LedgerConnection *m_connection;
    EventTableModel *m_history;
    QLabel *m_title;
    QLabel *m_facts;
    QLabel *m_approvals;
    QPlainTextEdit *m_payload;
    QPlainTextEdit *m_evidence;
    QPlainTextEdit *m_approvalList;
    QPlainTextEdit *m_audit;
    QTableView *m_historyView;
    QList<QPushButton *> m_actions; ///< indexed by OperationAction
    RoleCheck m_roleCheck;
    std::optional<Operation> m_operation;
    quint64 m_generation = 0;
    std::int64_t m_clockOffsetMs = 0; ///< the store's clock minus this machine's
};

} // namespace idempo
