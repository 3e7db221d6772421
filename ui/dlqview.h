// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;

namespace idempo {

class DeadLetterTableModel;
class LedgerConnection;

/// Dead-lettered messages of a queue, read-only: read count, last error, payload. Browsing
/// never counts as a read; replay comes with guarded actions.
class DlqView final : public LedgerView
{
    Q_OBJECT
public:
    explicit DlqView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    DeadLetterTableModel *model() const { return m_model; }

Q_SIGNALS:
    void queuesLoaded();

private:
    void showQueue();

    LedgerConnection *m_connection;
    DeadLetterTableModel *m_model;
    QComboBox *m_queue;
    QLineEdit *m_key;
    QLabel *m_note;
    LedgerTableView *m_table;
    QPlainTextEdit *m_payload;
    quint64 m_generation = 0;
};

} // namespace idempo
