// SPDX-License-Identifier: Apache-2.0
#include "operationdetailpane.h"

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

#include "displayformat.h"
#include "eventtablemodel.h"
#include "ledgerconnection.h"

namespace idempo {

namespace {

/// What an enabled action does, for its tooltip.
QString purpose(OperationAction action)
{
    switch (action) {
    case OperationAction::Redispatch:
        return OperationDetailPane::tr("Dispatch it (again), with a fresh attempt budget.");
    case OperationAction::Confirm:
        return OperationDetailPane::tr(
            "It happened: record the provider's reference and mark it succeeded.");
    case OperationAction::Reject:
        return OperationDetailPane::tr("It must not happen: mark it failed (policy denied).");
    case OperationAction::Reconcile:
        return OperationDetailPane::tr(
            "Ask the provider by key and move the operation by its answer.");
    }
    return {};
}

} // namespace

OperationDetailPane::OperationDetailPane(LedgerConnection *connection, QWidget *parent)
    : QWidget(parent), m_connection(connection), m_history(new EventTableModel(this)),
      m_title(new QLabel(this)), m_facts(new QLabel(this)), m_payload(new QPlainTextEdit(this)),
      m_evidence(new QPlainTextEdit(this)), m_historyView(new QTableView(this))
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
    const std::pair<OperationAction, QString> labels[] = {
        {OperationAction::Redispatch, tr("&Approve re-dispatch…")},
        {OperationAction::Confirm, tr("Confirm with re&ference…")},
        {OperationAction::Reject, tr("Re&ject…")},
        {OperationAction::Reconcile, tr("Reconc&ile…")},
    };
    for (const auto &[action, label] : labels) {
        auto *button = new QPushButton(label, this);
        connect(button, &QPushButton::clicked, this, [this, action] {
            if (m_operation)
                Q_EMIT actionRequested(action, *m_operation);
        });
        actions->addWidget(button);
        m_actions << button;
    }
    actions->addStretch(1);

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
    m_operation.reset();
    updateActions();
}

QString OperationDetailPane::stateRefusal(OperationAction action, const Operation &op,
                                          std::int64_t nowMs)
{
    const QString state = QString::fromLatin1(stateName(op.state).data());
    switch (action) {
    case OperationAction::Redispatch:
    case OperationAction::Reject:
        if (op.state == OperationState::AwaitingApproval ||
            op.state == OperationState::ConfirmationRequired)
            return {};
        return tr("Only an operation awaiting approval or needing confirmation can be decided; "
                  "this one is %1.")
            .arg(state);
    case OperationAction::Confirm:
        if (op.state == OperationState::ConfirmationRequired)
            return {};
        if (op.state == OperationState::AwaitingApproval)
            return tr(
                "It was never dispatched, so there is no effect to confirm: approve or reject it.");
        return tr("Only an operation needing confirmation can be confirmed; this one is %1.")
            .arg(state);
    case OperationAction::Reconcile:
        if (op.state == OperationState::UnknownOutcome ||
            op.state == OperationState::ConfirmationRequired)
            return {};
        if (op.state == OperationState::Dispatching && op.leaseExpiresAtMs &&
            *op.leaseExpiresAtMs < nowMs)
            return {};
        if (op.state == OperationState::AwaitingApproval)
            return tr("It was never dispatched, so the provider has nothing to look up.");
        if (op.state == OperationState::Dispatching)
            return tr("A worker holds a live lease: reconcile once it lapses.");
        return tr("Its outcome is known (%1): there is nothing to reconcile.").arg(state);
    }
    return {};
}

void OperationDetailPane::setRoleCheck(RoleCheck check)
{
    m_roleCheck = std::move(check);
    updateActions();
}

QPushButton *OperationDetailPane::actionButton(OperationAction action) const
{
    return m_actions.at(static_cast<int>(action));
}

void OperationDetailPane::updateActions()
{
    const std::int64_t now = QDateTime::currentMSecsSinceEpoch();
    for (int i = 0; i < m_actions.size(); ++i) {
        const auto action = static_cast<OperationAction>(i);
        QString why;
        if (!m_operation)
            why = tr("Select an operation.");
        else if (!m_roleCheck)
            why = tr("Your role on this ledger is not known yet.");
        else
            why = m_roleCheck(action);
        if (why.isEmpty())
            why = stateRefusal(action, *m_operation, now);
        m_actions[i]->setEnabled(why.isEmpty());
        m_actions[i]->setToolTip(why.isEmpty() ? purpose(action) : why);
    }
}

void OperationDetailPane::showOperation(const Operation &op)
{
    ++m_generation;
    m_operation = op;
    updateActions();
    m_title->setText(displayText(op.key));
    const std::int64_t ageMs = QDateTime::currentMSecsSinceEpoch() - op.createdAtMs;
    m_facts->setText(
        tr("<b style='color:%1'>%2</b> · run %3 · step %4 · %5 · attempt %6 of %7 · token %8 · "
           "waiting %9")
            .arg(stateColor(op.state).name(), stateText(op.state),
                 displayText(op.runId).toHtmlEscaped(), displayText(op.stepId).toHtmlEscaped(),
                 QString::fromLatin1(toolKindName(op.kind).data()))
            .arg(op.attempt)
            .arg(op.maxAttempts)
            .arg(op.fencingToken)
            .arg(durationText(std::max<std::int64_t>(0, ageMs))));
    m_payload->setPlainText(prettyJson(op.payload));
    QString evidence;
    if (op.errorClass)
        evidence += tr("Last error: %1\n%2\n\n")
                        .arg(QString::fromLatin1(errorClassName(*op.errorClass).data()),
                             displayText(op.errorDetail));
    evidence += tr("Provider receipt:\n%1\n\nResult:\n%2\n")
                    .arg(op.receipt.empty() ? tr("(none recorded)") : prettyJson(op.receipt),
                         op.result.empty() ? tr("(none recorded)") : prettyJson(op.result));
    evidence += tr("\nPayload fingerprint: %1").arg(displayText(op.fingerprint));
    m_evidence->setPlainText(evidence);
    const quint64 generation = m_generation;
    m_connection->query(
        this,
        [ns = op.ns, key = op.key](LedgerStore &s, MessageQueue *) { return s.history(ns, key); },
        [this, generation](std::vector<OperationEvent> events) {
            if (generation != m_generation)
                return;
            m_history->setEvents(std::move(events));
            m_historyView->resizeColumnsToContents();
            Q_EMIT historyLoaded();
        });
}

} // namespace idempo
