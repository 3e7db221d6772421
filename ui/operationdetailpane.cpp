// SPDX-License-Identifier: Apache-2.0
#include "operationdetailpane.h"

#include "displayformat.h"
#include "eventtablemodel.h"
#include "ledgerconnection.h"

#include <QDateTime>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace idempo {

OperationDetailPane::OperationDetailPane(LedgerConnection *connection, QWidget *parent)
    : QWidget(parent)
    , m_connection(connection)
    , m_history(new EventTableModel(this))
    , m_title(new QLabel(this))
    , m_facts(new QLabel(this))
    , m_payload(new QPlainTextEdit(this))
    , m_evidence(new QPlainTextEdit(this))
    , m_historyView(new QTableView(this))
{
    auto *layout = new QVBoxLayout(this);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_title->setWordWrap(true);
    QFont big = m_title->font();
    big.setPointSizeF(big.pointSizeF() * 1.25);
    big.setBold(true);
    m_title->setFont(big);
    m_facts->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_facts->setWordWrap(true);
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    for (QPlainTextEdit *edit : {m_payload, m_evidence}) {
        edit->setReadOnly(true);
        edit->setFont(mono);
    }
    m_historyView->setModel(m_history);
    m_historyView->verticalHeader()->setVisible(false);
    m_historyView->horizontalHeader()->setStretchLastSection(true);
    m_historyView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_historyView->setAlternatingRowColors(true);

    auto *tabs = new QTabWidget(this);
    tabs->addTab(m_payload, tr("&Payload"));
    tabs->addTab(m_historyView, tr("&History"));
    tabs->addTab(m_evidence, tr("&Errors and evidence"));

    auto *actions = new QHBoxLayout;
    for (const QString &label : {tr("Approve…"), tr("Reject…"), tr("Reconcile…")}) {
        auto *button = new QPushButton(label, this);
        button->setEnabled(false);
        button->setToolTip(tr("coming with guarded actions"));
        actions->addWidget(button);
        m_actions << button;
    }
    actions->addStretch(1);
    auto *note = new QLabel(tr("Read-only: decisions are recorded through guarded actions."), this);
    note->setEnabled(false);
    actions->addWidget(note);

    layout->addWidget(m_title);
    layout->addWidget(m_facts);
    layout->addWidget(tabs, 1);
    layout->addLayout(actions);
    clear();
}

void OperationDetailPane::clear()
{
    ++m_generation;
    m_title->setText(tr("Select an operation"));
    m_facts->clear();
    m_payload->clear();
    m_evidence->clear();
    m_history->setEvents({});
}

void OperationDetailPane::showOperation(const Operation &op)
{
    ++m_generation;
    m_title->setText(displayText(op.key));
    const std::int64_t ageMs = QDateTime::currentMSecsSinceEpoch() - op.createdAtMs;
    m_facts->setText(tr("<b style='color:%1'>%2</b> · run %3 · step %4 · %5 · attempt %6 of %7 · token %8 · "
                        "waiting %9")
                         .arg(stateColor(op.state).name(), stateText(op.state), displayText(op.runId).toHtmlEscaped(),
                              displayText(op.stepId).toHtmlEscaped(),
                              QString::fromLatin1(toolKindName(op.kind).data()))
                         .arg(op.attempt)
                         .arg(op.maxAttempts)
                         .arg(op.fencingToken)
                         .arg(durationText(std::max<std::int64_t>(0, ageMs))));
    m_payload->setPlainText(prettyJson(op.payload));
    QString evidence;
    if (op.errorClass)
        evidence += tr("Last error: %1\n%2\n\n").arg(QString::fromLatin1(errorClassName(*op.errorClass).data()),
                                                      displayText(op.errorDetail));
    evidence += tr("Provider receipt:\n%1\n\nResult:\n%2\n")
                    .arg(op.receipt.empty() ? tr("(none recorded)") : prettyJson(op.receipt),
                         op.result.empty() ? tr("(none recorded)") : prettyJson(op.result));
    evidence += tr("\nPayload fingerprint: %1").arg(displayText(op.fingerprint));
    m_evidence->setPlainText(evidence);
    const quint64 generation = m_generation;
    m_connection->query(
        this, [ns = op.ns, key = op.key](LedgerStore &s, MessageQueue *) { return s.history(ns, key); },
        [this, generation](std::vector<OperationEvent> events) {
            if (generation != m_generation)
                return;
            m_history->setEvents(std::move(events));
            m_historyView->resizeColumnsToContents();
            Q_EMIT historyLoaded();
        });
}

} // namespace idempo
