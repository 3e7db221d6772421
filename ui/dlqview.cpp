// SPDX-License-Identifier: Apache-2.0
#include "dlqview.h"

#include <algorithm>

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QVBoxLayout>

#include "actioncontroller.h"
#include "deadlettertablemodel.h"
#include "displayformat.h"
#include "dlqreplaycommand.h"
#include "emptystate.h"
#include "guardedactiondialog.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"

namespace idempo {

DlqView::DlqView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_connection(connection),
      m_model(new DeadLetterTableModel(connection, this)), m_queue(new QComboBox(this)),
      m_key(new QLineEdit(this)), m_note(new QLabel(this)), m_table(new LedgerTableView(this)),
      m_payload(new QPlainTextEdit(this)), m_replay(new QPushButton(tr("&Replay…"), this))
{
    auto *layout = new QVBoxLayout(this);
    auto *top = new QHBoxLayout;
    auto *queueLabel = new QLabel(tr("&Queue"), this);
    queueLabel->setBuddy(m_queue);
    auto *keyLabel = new QLabel(tr("&Key"), this);
    keyLabel->setBuddy(m_key);
    m_key->setPlaceholderText(tr("operation key prefix"));
    m_key->setClearButtonEnabled(true);
    top->addWidget(queueLabel);
    top->addWidget(m_queue, 1);
    top->addWidget(keyLabel);
    top->addWidget(m_key, 2);
    top->addWidget(m_replay);
    layout->addLayout(top);
    layout->addWidget(m_note);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_table);
    split->addWidget(m_payload);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);
    m_payload->setReadOnly(true);
    m_payload->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_payload->setPlaceholderText(tr("Select a dead letter to see its payload and provenance"));
    m_table->setModel(m_model);
    m_table->setKeyRole(DeadLetterTableModel::KeyRole);
    m_table->horizontalHeader()->resizeSection(DeadLetterTableModel::DeadLetteredAt, 160);
    m_table->horizontalHeader()->resizeSection(DeadLetterTableModel::LastError, 300);
    m_table->horizontalHeader()->resizeSection(DeadLetterTableModel::Key, 260);
    m_table->setSettingsKey(QStringLiteral("dlq"));
    m_table->setViewportListener(
        [this](int first, int count) { m_model->setViewport(first, count); });
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_empty = new EmptyState(m_table);
    connect(m_empty, &EmptyState::linkActivated, m_key, [this](const QString &link) {
        if (link == QLatin1String(EmptyState::ClearFiltersLink))
            m_key->clear();
    });
    connect(m_model, &DeadLetterTableModel::pageLoaded, m_empty, &EmptyState::modelAnswered);
    connect(m_replay, &QPushButton::clicked, this, &DlqView::replaySelectionOrFilter);
    connect(m_model, &QAbstractItemModel::modelReset, this, &DlqView::updateReplay);
    connect(m_model, &QAbstractItemModel::rowsInserted, this, &DlqView::updateReplay);
    connect(m_model, &QAbstractItemModel::rowsRemoved, this, &DlqView::updateReplay);
    updateReplay();
    connect(m_queue, &QComboBox::currentIndexChanged, this, &DlqView::showQueue);
    connect(m_key, &QLineEdit::textChanged, this, &DlqView::showQueue);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex &current) {
                if (!current.isValid()) {
                    m_payload->clear();
                    return;
                }
                const DeadLetter &d = m_model->deadLetterAt(current);
                m_payload->setPlainText(
                    tr("From %1, message %2, read %3 times, dead-lettered %4\n\n%5")
                        .arg(displayText(d.provenance.sourceQueue))
                        .arg(d.provenance.sourceMsgId)
                        .arg(d.provenance.readCount)
                        .arg(timestampText(d.provenance.deadLetteredAtMs),
                             prettyJson(d.message.message)));
            });
}

void DlqView::reload()
{
    const quint64 generation = ++m_generation;
    if (!m_connection->isOpen()) {
        const QSignalBlocker block(m_queue);
        m_queue->clear();
        m_note->clear();
        m_payload->clear();
        m_model->setQueue({});
        return;
    }
    if (!m_connection->hasQueues()) {
        m_queue->clear();
        m_note->setText(
            tr("This ledger has no message queues (the PostgreSQL store has none yet)."));
        m_model->setQueue({});
        return;
    }
    m_connection->query(
        this,
        [](LedgerStore &, MessageQueue *queues) {
            std::vector<std::string> names;
            if (queues)
                for (const QueueInfo &q : queues->listQueues())
                    if (q.maxReads)
                        names.push_back(q.name);
            return names;
        },
        [this, generation](std::vector<std::string> names) {
            if (generation != m_generation)
                return;
            const QString previous = m_queue->currentText();
            const QSignalBlocker block(m_queue);
            m_queue->clear();
            for (const std::string &n : names)
                m_queue->addItem(displayText(n));
            const int again = m_queue->findText(previous);
            m_queue->setCurrentIndex(again >= 0 ? again : 0);
            m_note->setText(names.empty() ? tr("No queues in this ledger.") : QString());
            showQueue();
            Q_EMIT queuesLoaded();
        });
}

void DlqView::showQueue()
{
    m_empty->setMessage(!m_key->text().isEmpty()
                            ? EmptyState::filteredMessage()
                            : tr("<b>No dead letters.</b><br>A message that was read more "
                                 "often than its queue allows lands here, to be replayed."));
    m_payload->clear();
    m_model->setQueue(m_queue->currentText().toStdString(), m_key->text().toStdString());
}

void DlqView::setActions(ActionController *actions)
{
    m_actions = actions;
    connect(actions, &ActionController::actorChanged, this, &DlqView::updateReplay);
    updateReplay();
}

void DlqView::updateReplay()
{
    QString why;
    if (!m_actions)
        why = tr("Your role on this ledger is not known yet.");
    else
        why = m_actions->refusal(Capability::Replay);
    if (why.isEmpty() && m_model->rowCount() == 0)
        why = tr("No dead letters to replay in this queue.");
    m_replay->setEnabled(why.isEmpty());
    m_replay->setToolTip(why.isEmpty()
                             ? tr("Dry run first over the selected rows, or over every row the key "
                                  "filter matches when none is selected.")
                             : why);
}

void DlqView::replaySelectionOrFilter()
{
    if (!m_actions || !m_replay->isEnabled())
        return;
    const std::string queue = m_queue->currentText().toStdString();
    std::vector<std::int64_t> ids;
    for (const QModelIndex &row : m_table->selectionModel()->selectedRows())
        ids.push_back(m_model->deadLetterAt(row).message.msgId);
    if (!ids.empty()) {
        std::sort(ids.begin(), ids.end());
        m_actions->replay(queue, ids);
        return;
    }
    // No selection: the filter, resolved to ids once, is the frozen set.
    const std::string prefix = m_key->text().toStdString();
    const std::string filter = prefix.empty() ? std::string("all") : "key_prefix=" + prefix;
    m_connection->query(
        this,
        [queue, filter](LedgerStore &, MessageQueue *queues) {
            return queues ? DlqReplayCommand::resolveFilter(*queues, queue, filter)
                          : std::vector<std::int64_t>{};
        },
        [this, queue](const std::vector<std::int64_t> &resolved) {
            if (m_actions)
                m_actions->replay(queue, resolved);
        });
}

void DlqView::refresh()
{
    m_model->refresh();
}

} // namespace idempo
