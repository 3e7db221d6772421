// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "operation.h"

#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTableView;

namespace idempo {

class EventTableModel;
class LedgerConnection;

/// One operation in full: identity, payload (formatted JSON), attempt history, errors and the
/// provider's evidence. The guarded actions are visible but disabled until they exist as
/// command objects, so nothing here can change the ledger.
class OperationDetailPane final : public QWidget
{
    Q_OBJECT
public:
    explicit OperationDetailPane(LedgerConnection *connection, QWidget *parent = nullptr);

    /// Shows `op` and loads its history on the worker.
    void showOperation(const Operation &op);
    void clear();
    const EventTableModel *history() const { return m_history; }

Q_SIGNALS:
    void historyLoaded();

private:
    LedgerConnection *m_connection;
    EventTableModel *m_history;
    QLabel *m_title;
    QLabel *m_facts;
    QPlainTextEdit *m_payload;
    QPlainTextEdit *m_evidence;
    QTableView *m_historyView;
    QList<QPushButton *> m_actions;
    quint64 m_generation = 0;
};

} // namespace idempo
