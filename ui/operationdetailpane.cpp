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
#include <QTimer>
#include <QVBoxLayout>

#include "audittablemodel.h"
#include "displayformat.h"
#include "eventtablemodel.h"
#include "ledgerconnection.h"

namespace idempo {

namespace {

/// The drawer lists this many audit records of an operation; the Audit view has the rest.
constexpr int AuditShown = 200;

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

QString approvalLines(const std::vector<ApprovalRecord> &approvals)
{
    if (approvals.empty())
        return OperationDetailPane::tr("No approval recorded for this operation.");
    QStringList lines;
    for (const ApprovalRecord &a : approvals) {
        QString line = OperationDetailPane::tr("%1  %2 (%3) %4, %5, revision %6: “%7”")
                           .arg(timestampText(a.createdAtMs), displayText(a.operatorName),
                                displayText(a.role), displayText(a.decision), displayText(a.status))
                           .arg(a.revision)
                           .arg(displayText(a.reason));
        if (!a.externalReference.empty())
            line +=
                OperationDetailPane::tr(" · reference %1").arg(displayText(a.externalReference));
        lines << line + OperationDetailPane::tr(" · approval %1").arg(displayText(a.approvalId));
    }
    return lines.join(QLatin1Char('\n'));
}

QString auditLines(const std::vector<AuditRecord> &records, bool more)
{
    if (records.empty())
        return OperationDetailPane::tr("No audit record names this operation.");
    QStringList lines;
    for (const AuditRecord &r : records) {
        const auto cell = [&r](int column) {
            return AuditTableModel::cell(r, column, Qt::DisplayRole).toString();
        };
        QString line = OperationDetailPane::tr("#%1  %2  %3 (%4) %5: %6: “%7”")
                           .arg(cell(AuditTableModel::Seq), cell(AuditTableModel::When),
                                cell(AuditTableModel::Who), cell(AuditTableModel::Role),
                                cell(AuditTableModel::Action), cell(AuditTableModel::Change),
                                cell(AuditTableModel::Reason));
        if (!r.entry.approvalId.empty())
            line +=
                OperationDetailPane::tr(" · approval %1").arg(cell(AuditTableModel::ApprovalId));
        lines << line;
    }
    if (more)
        lines << OperationDetailPane::tr("… the first %1 records; the Audit view lists them all "
                                         "(Ctrl+Shift+A).")
                     .arg(records.size());
    return lines.join(QLatin1Char('\n'));
}

} // namespace

OperationDetailPane::OperationDetailPane(LedgerConnection *connection, QWidget *parent)
    : QWidget(parent), m_connection(connection), m_history(new EventTableModel(this)),
      m_title(new QLabel(this)), m_facts(new QLabel(this)), m_approvals(new QLabel(this)),
      m_payload(new QPlainTextEdit(this)), m_evidence(new QPlainTextEdit(this)),
      m_approvalList(new QPlainTextEdit(this)), m_audit(new QPlainTextEdit(this)),
      m_historyView(new QTableView(this))
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
    m_approvals->setWordWrap(true);
    m_approvals->setTextFormat(Qt::RichText);
    m_approvals->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_approvals->setFrameShape(QFrame::StyledPanel);
    m_approvals->setMargin(6);
    m_approvals->hide();
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    m_payload->setObjectName(QStringLiteral("payload"));
    m_approvalList->setObjectName(QStringLiteral("approvals"));
    m_audit->setObjectName(QStringLiteral("audit"));
    for (QPlainTextEdit *edit : {m_payload, m_evidence, m_approvalList, m_audit}) {
        edit->setReadOnly(true);
        edit->setFont(mono);
    }
    m_historyView->setModel(m_history);
    m_historyView->verticalHeader()->setVisible(false);
    m_historyView->horizontalHeader()->setStretchLastSection(true);
    m_historyView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_historyView->setAlternatingRowColors(true);
    // Tab leaves the table for the next control instead of walking its cells.
    m_historyView->setTabKeyNavigation(false);

    auto *tabs = new QTabWidget(this);
    tabs->addTab(m_payload, tr("&Payload"));
    tabs->addTab(m_historyView, tr("&History"));
    tabs->addTab(m_evidence, tr("&Errors and evidence"));
    tabs->addTab(m_approvalList, tr("Appro&vals"));
    tabs->addTab(m_audit, tr("Audi&t"));

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
    layout->addWidget(m_approvals);
    layout->addWidget(tabs, 1);
    layout->addLayout(actions);
    // The "waiting" figure is an age: it moves while the pane shows the operation.
    auto *tick = new QTimer(this);
    tick->setInterval(1000);
    connect(tick, &QTimer::timeout, this, &OperationDetailPane::updateFacts);
    tick->start();
    // A ledger switch empties the drawer at once: it never shows another ledger's operation.
    connect(m_connection, &LedgerConnection::closed, this, &OperationDetailPane::clear);
    clear();
}

QString OperationDetailPane::approvalsText() const
{
    return m_approvals->text();
}

QString OperationDetailPane::factsText() const
{
    return m_facts->text();
}

QString OperationDetailPane::approvalListText() const
{
    return m_approvalList->toPlainText();
}

QString OperationDetailPane::auditText() const
{
    return m_audit->toPlainText();
}

void OperationDetailPane::reload()
{
    if (!m_operation)
        return;
    const quint64 generation = m_generation;
    m_connection->query(
        this,
        [ns = m_operation->ns, key = m_operation->key](LedgerStore &s, MessageQueue *) {
            return s.find(ns, key);
        },
        [this, generation](const std::optional<Operation> &op) {
            if (generation == m_generation && op)
                showOperation(*op);
        });
}

void OperationDetailPane::updateFacts()
{
    if (!m_operation)
        return;
    const Operation &op = *m_operation;
    const std::int64_t ageMs =
        QDateTime::currentMSecsSinceEpoch() + m_clockOffsetMs - op.updatedAtMs;
    const QString customer = customerText(op.payload);
    m_facts->setText(
        (customer.isEmpty() ? QString()
                            : tr("customer <b>%1</b> · ").arg(customer.toHtmlEscaped())) +
        tr("<b style='color:%1'>%2</b> · namespace %3 · run %4 · step %5 · %6 · attempt %7 of %8 "
           "· token %9 · in this state for %10")
            .arg(stateColor(op.state).name(), stateText(op.state),
                 displayText(op.ns).toHtmlEscaped(),
                 op.runId.empty() ? tr("(none)") : displayText(op.runId).toHtmlEscaped(),
                 displayText(op.stepId).toHtmlEscaped(),
                 QString::fromLatin1(toolKindName(op.kind).data()))
            .arg(op.attempt)
            .arg(op.maxAttempts)
            .arg(op.fencingToken)
            .arg(durationText(std::max<std::int64_t>(0, ageMs))));
}

void OperationDetailPane::clear()
{
    ++m_generation;
    m_title->setText(tr("Select an operation"));
    m_facts->clear();
    m_approvals->clear();
    m_approvals->hide();
    m_payload->clear();
    m_evidence->clear();
    m_approvalList->clear();
    m_audit->clear();
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
            return op.kind == ToolKind::ProtectedWrite
                       ? QString()
                       : tr("A lapsed lease on a %1 is taken over by the next claim: there is "
                            "nothing to reconcile.")
                             .arg(QString::fromLatin1(toolKindName(op.kind).data()));
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
        // Whether anyone may act on this ledger comes first: no ledger open says so, not "select".
        QString why =
            m_roleCheck ? m_roleCheck(action) : tr("Your role on this ledger is not known yet.");
        if (why.isEmpty() && !m_operation)
            why = tr("Select an operation.");
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
    updateFacts();
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
    struct Loaded
    {
        std::vector<OperationEvent> events;
        std::vector<ApprovalRecord> approvals;
        std::vector<AuditRecord> audit;
        bool moreAudit = false;
        std::int64_t nowMs = 0;
    };
    m_connection->query(
        this,
        [ns = op.ns, key = op.key](LedgerStore &s, MessageQueue *) {
            // The audit records of exactly this target, oldest first, from the log's index.
            AuditFilter mine;
            mine.target = ns + "/" + key;
            mine.limit = AuditShown + 1;
            Loaded loaded{s.history(ns, key), s.approvals(ns, key), s.auditRecords(mine), false,
                          s.nowMs()};
            loaded.moreAudit = loaded.audit.size() > static_cast<std::size_t>(AuditShown);
            if (loaded.moreAudit)
                loaded.audit.pop_back();
            return loaded;
        },
        [this, generation](Loaded loaded) {
            if (generation != m_generation)
                return;
            m_clockOffsetMs = loaded.nowMs - QDateTime::currentMSecsSinceEpoch();
            updateFacts();
            QStringList pending;
            for (const ApprovalRecord &a : loaded.approvals)
                if (a.status == "pending")
                    pending << tr("<b>%1</b> (%2) approved %3 first, %4: “%5”")
                                   .arg(displayText(a.operatorName).toHtmlEscaped(),
                                        displayText(a.role).toHtmlEscaped(),
                                        displayText(a.decision).toHtmlEscaped(),
                                        timestampText(a.createdAtMs),
                                        displayText(a.reason).toHtmlEscaped());
            m_approvals->setText(
                pending.isEmpty()
                    ? QString()
                    : tr("⚑ Waits for a second approver (four-eyes): %1. Another person must "
                         "approve the same decision.")
                          .arg(pending.join(QStringLiteral("; "))));
            m_approvals->setVisible(!pending.isEmpty());
            m_approvalList->setPlainText(approvalLines(loaded.approvals));
            m_audit->setPlainText(auditLines(loaded.audit, loaded.moreAudit));
            m_history->setEvents(std::move(loaded.events));
            m_historyView->resizeColumnsToContents();
            Q_EMIT historyLoaded();
        });
}

} // namespace idempo
