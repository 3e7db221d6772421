// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;

namespace idempo {

class ActionController;
class DeadLetterTableModel;
class LedgerConnection;

/// Dead-lettered messages of a queue: read count, last error, payload. Browsing never counts as
/// a read. "Replay…" freezes the selected rows, or every row the key filter matches, into a set
/// of ids and hands it to the DLQ replay command (dry run, typed count, reason, bounded rate).
class DlqView final : public LedgerView
{
    Q_OBJECT
public:
    explicit DlqView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    EmptyState *emptyState() const override { return m_empty; }
    DeadLetterTableModel *model() const { return m_model; }
    /// Enables "Replay…" through `actions` (per the acting role).
    void setActions(ActionController *actions);
    QPushButton *replayButton() const { return m_replay; }
    /// Starts a replay of the selected rows, or of the current filter when none is selected.
    void replaySelectionOrFilter();

Q_SIGNALS:
    void queuesLoaded();

private:
    void showQueue();
    void updateReplay();

    LedgerConnection *m_connection;
    DeadLetterTableModel *m_model;
    QComboBox *m_queue;
    QLineEdit *m_key;
    QLabel *m_note;
    LedgerTableView *m_table;
    EmptyState *m_empty;
    QPlainTextEdit *m_payload;
    QPushButton *m_replay;
    ActionController *m_actions = nullptr;
    quint64 m_generation = 0;
};

} // namespace idempo
