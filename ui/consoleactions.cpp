// SPDX-License-Identifier: Apache-2.0
#include "consoleactions.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include <QHeaderView>
#include <QLineEdit>
#include <QProgressDialog>
#include <QSpinBox>
#include <QStringList>
#include <QTableWidget>
#include <QUuid>

#include "displayformat.h"
#include "error.h"
#include "journallookup.h"
#include "money.h"
#include "runbudgetuse.h"

namespace idempo {

namespace {

QString joined(const std::vector<std::string> &problems)
{
    QStringList lines;
    for (const std::string &p : problems)
        lines << QString::fromStdString(p);
    return lines.join(QLatin1String("; "));
}

/// validate() with the operator's input, then execute(): its outcome in words; problems refuse
/// without writing.
template <typename Command> ExecuteAnswer validatedExecute(Command &command)
{
    ExecuteAnswer a;
    try {
        if (const auto problems = command.validate(); !problems.empty()) {
            a.ok = false;
            a.text = QObject::tr("Refused: %1").arg(joined(problems));
            return a;
        }
        a.text = QString::fromStdString(command.execute().text());
    } catch (const Error &e) {
        a.ok = false;
        // Another holder does this work now (an open replay of the same dead letters): say that
        // nothing happened, before the store's words on who holds it and since when.
        a.text = e.code() == ErrorCode::InProgress
                     ? QObject::tr("Not started, nothing was written: %1")
                           .arg(QString::fromStdString(e.what()))
                     : QString::fromStdString(e.what());
    } catch (const std::exception &e) {
        a.ok = false;
        a.text = QString::fromStdString(e.what());
    }
    return a;
}

QString historyText(const std::vector<ApprovalPreview::Event> &history)
{
    QStringList lines;
    for (const ApprovalPreview::Event &e : history) {
        const QString from = QString::fromStdString(e.from);
        QString line = QStringLiteral("%1  %2 → %3  attempt %4  by %5")
                           .arg(isoTimestampText(e.at), from.isEmpty() ? QStringLiteral("·") : from,
                                QString::fromStdString(e.to))
                           .arg(e.attempt)
                           .arg(QString::fromStdString(e.actor));
        if (!e.errorClass.empty())
            line += QStringLiteral("  [%1]").arg(QString::fromStdString(e.errorClass));
        if (!e.detail.empty())
            line += QStringLiteral("  %1").arg(QString::fromStdString(e.detail));
        lines << line;
    }
    return lines.isEmpty() ? QObject::tr("(no events)") : lines.join(QLatin1Char('\n'));
}

/// What an operation's dialog is about: its key, namespace and customer.
QString subjectOf(const Operation &op)
{
    const QString customer = customerText(op.payload);
    return QObject::tr("Operation %1 · namespace %2 · %3")
        .arg(displayText(op.key), displayText(op.ns),
             customer.isEmpty() ? QObject::tr("no customer named in the payload")
                                : QObject::tr("customer %1").arg(customer));
}

/// A JSON document of a preview, indented (a text value is read as the JSON it holds).
QString jsonText(const nlohmann::json &value)
{
    if (value.is_null() || (value.is_string() && value.get<std::string>().empty()))
        return QObject::tr("(none recorded)");
    if (value.is_string())
        return prettyJson(value.get<std::string>());
    return QString::fromStdString(value.dump(2));
}

/// Evidence as recorded: JSON text indented, words as they are.
QString recordedText(const std::string &text)
{
    return text.empty() ? QObject::tr("(none recorded)") : prettyJson(text);
}

/// Why a second approver must confirm, in the terms the ledger gates by.
QString fourEyesNote(const std::optional<std::string> &referenceRates)
{
    if (!referenceRates)
        return QObject::tr(" · above the four-eyes threshold (no reference rates are "
                           "set, so it applies as written in every currency): a second "
                           "approver must confirm");
    const QString text = QString::fromStdString(*referenceRates);
    return QObject::tr(" · above the four-eyes threshold in %1 at the ledger's rates "
                       "(%2), or in a currency without a rate: a second approver must "
                       "confirm")
        .arg(text.left(3), text);
}

QString freshId(const char *prefix)
{
    return QLatin1String(prefix) + QUuid::createUuid().toString(QUuid::Id128);
}

QString verbOf(BulkAction action)
{
    switch (action) {
    case BulkAction::Approve:
        return QObject::tr("Approve");
    case BulkAction::Reject:
        return QObject::tr("Reject");
    case BulkAction::Reconcile:
        return QObject::tr("Reconcile");
    }
    return {};
}

QString str(const std::string &s)
{
    return QString::fromStdString(s);
}

} // namespace

QString consequenceButtonText(const QString &sentence)
{
    QString text = sentence;
    for (const QLatin1String cut :
         {QLatin1String(": "), QLatin1String(", evidence"), QLatin1String(" (needs")})
        if (const int at = text.indexOf(cut); at > 0)
            text.truncate(at);
    if (text.size() > 48)
        if (const int at = text.indexOf(QLatin1String(" to ")); at > 0)
            text.truncate(at);
    return text;
}

QTableWidget *detailTable(const QStringList &headers, const std::vector<QStringList> &rows)
{
    auto *table = new QTableWidget(int(rows.size()), int(headers.size()));
    table->setHorizontalHeaderLabels(headers);
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->horizontalHeader()->setStretchLastSection(true);
    for (int r = 0; r < int(rows.size()); ++r)
        for (int c = 0; c < rows[std::size_t(r)].size(); ++c)
            table->setItem(r, c, new QTableWidgetItem(rows[std::size_t(r)].at(c)));
    table->resizeColumnsToContents();
    return table;
}

// ApprovalAction

ApprovalAction::ApprovalAction(ActorIdentity actor, GuardedActionBuilder builder,
                               OperationAction action, const Operation &op)
    : m_actor(std::move(actor)), m_builder(std::move(builder)), m_action(action),
      m_subject(subjectOf(op))
{
    m_request.ns = op.ns;
    m_request.key = op.key;
    m_request.decision = action == OperationAction::Confirm  ? ApprovalDecision::Confirm
                         : action == OperationAction::Reject ? ApprovalDecision::Reject
                                                             : ApprovalDecision::Redispatch;
    m_request.approvalId = freshId("ap-").toStdString();
}

ApprovalPreview ApprovalAction::describe(LedgerStore &store, MessageQueue *) const
{
    ApproveCommand::Request request = m_request;
    if (m_action == OperationAction::Confirm)
        request.externalReference = tr("the reference entered below").toStdString();
    ApproveCommand command = m_builder.approve(store, m_actor, request);
    return ApprovalPreview::read(command.describe());
}

DialogHeading ApprovalAction::heading(const ApprovalPreview &preview) const
{
    const QString sentence = QString::fromStdString(preview.sentence);
    const QString title = m_action == OperationAction::Reject ? tr("Reject operation")
                          : m_action == OperationAction::Confirm
                              ? tr("Confirm operation as succeeded")
                              : tr("Approve operation");
    return {title, sentence, consequenceButtonText(sentence)};
}

void ApprovalAction::present(GuardedActionDialog &dialog, const ApprovalPreview &p) const
{
    const QString approvalId = QString::fromStdString(m_request.approvalId);
    dialog.setSubject(m_subject);
    dialog.setSubmissionId(approvalId);
    dialog.setNote(tr("%1 → %2 · approval id %3%4")
                       .arg(QString::fromStdString(p.from), QString::fromStdString(p.to),
                            approvalId, p.fourEyes ? fourEyesNote(p.referenceRates) : QString()));
    dialog.addDetail(tr("Evidence"), recordedText(p.evidence));
    dialog.addDetail(tr("Attempt history"), historyText(p.history));
    if (p.payload)
        dialog.addDetail(tr("Payload"), jsonText(*p.payload));
    if (m_action == OperationAction::Confirm)
        dialog.requireReference(tr("External &reference"));
}

QString ApprovalAction::submit(const GuardedActionDialog::Submission &submission)
{
    m_request.reason = submission.reason.toStdString();
    m_request.externalReference = submission.externalReference.toStdString();
    m_request.approvalId = submission.submissionId.toStdString();
    return {};
}

ExecuteAnswer ApprovalAction::execute(LedgerStore &store, MessageQueue *,
                                      const PacedRun::Hooks &) const
{
    ApproveCommand command = m_builder.approve(store, m_actor, m_request);
    return validatedExecute(command);
}

// ReconcileAction

ReconcileAction::ReconcileAction(ActorIdentity actor, GuardedActionBuilder builder,
                                 const Operation &op)
    : m_actor(std::move(actor)), m_builder(std::move(builder)), m_subject(subjectOf(op))
{
    m_request.ns = op.ns;
    m_request.key = op.key;
}

ReconcilePreview ReconcileAction::describe(LedgerStore &store, MessageQueue *) const
{
    const auto lookup = openProviderLookup(store);
    ReconcileCommand command = m_builder.reconcile(store, *lookup, m_actor, m_request);
    return ReconcilePreview::read(command.describe());
}

DialogHeading ReconcileAction::heading(const ReconcilePreview &preview) const
{
    const QString sentence = QString::fromStdString(preview.sentence);
    return {tr("Reconcile"), sentence, consequenceButtonText(sentence)};
}

void ReconcileAction::present(GuardedActionDialog &dialog, const ReconcilePreview &p) const
{
    dialog.setSubject(m_subject);
    dialog.addDetail(tr("What the provider says"), p.operations.empty()
                                                       ? tr("(nothing)")
                                                       : jsonText(p.operations.front().evidence));
}

QString ReconcileAction::submit(const GuardedActionDialog::Submission &submission)
{
    m_request.reason = submission.reason.toStdString();
    return {};
}

ExecuteAnswer ReconcileAction::execute(LedgerStore &store, MessageQueue *,
                                       const PacedRun::Hooks &) const
{
    const auto lookup = openProviderLookup(store);
    ReconcileCommand command = m_builder.reconcile(store, *lookup, m_actor, m_request);
    return validatedExecute(command);
}

// ResumeAction

ResumeAction::ResumeAction(ActorIdentity actor, GuardedActionBuilder builder, const RunSummary &run)
    : m_actor(std::move(actor)), m_builder(std::move(builder)), m_run(*run.record)
{
    m_request.kind = RunActionCommand::Kind::Resume;
    m_request.ns = run.ns;
    m_request.runId = run.runId;
    if (m_run.haltBudget == BudgetKind::FailedDispatches && m_run.budgets.failedDispatches)
        m_request.addFailed = std::max<std::int64_t>(1, *m_run.budgets.failedDispatches);
}

RunActionPreview ResumeAction::describe(LedgerStore &store, MessageQueue *) const
{
    RunActionCommand command = m_builder.runAction(store, m_actor, m_request);
    return RunActionPreview::read(command.describe());
}

DialogHeading ResumeAction::heading(const RunActionPreview &preview) const
{
    return {tr("Resume run"), QString::fromStdString(preview.sentence), tr("Resume run")};
}

void ResumeAction::present(GuardedActionDialog &dialog, const RunActionPreview &p)
{
    dialog.setSubject(
        tr("Run %1 · namespace %2 · %3")
            .arg(displayText(m_run.runId), displayText(m_run.ns), runStateText(m_run)));
    dialog.setNote(tr("Resuming lets the run dispatch again: the budget that halted it needs room "
                      "afterwards. Raising the spend cap above the four-eyes threshold needs a "
                      "second identity."));
    dialog.addDetail(tr("Run"), jsonText(p.run));
    if (m_run.budgets.failedDispatches) {
        m_failed = new QSpinBox;
        m_failed->setObjectName(QStringLiteral("addFailedDispatches"));
        m_failed->setRange(0, 1'000'000);
        m_failed->setValue(static_cast<int>(m_request.addFailed));
        dialog.addField(tr("Add &failed dispatches"), m_failed);
    }
    if (m_run.budgets.spend) {
        m_spend = new QLineEdit;
        m_spend->setObjectName(QStringLiteral("addSpend"));
        m_spend->setPlaceholderText(
            tr("e.g. 50.00 %1 (empty: none)")
                .arg(QString::fromStdString(m_run.budgets.spend->currency)));
        dialog.addField(tr("Add &spend"), m_spend);
    }
    if (m_run.budgets.tokens) {
        m_tokens = new QSpinBox;
        m_tokens->setObjectName(QStringLiteral("addTokens"));
        m_tokens->setRange(0, std::numeric_limits<int>::max());
        m_tokens->setSingleStep(1000);
        dialog.addField(tr("Add &tokens"), m_tokens);
    }
}

QString ResumeAction::submit(const GuardedActionDialog::Submission &submission)
{
    m_request.reason = submission.reason.toStdString();
    m_request.addFailed = m_failed ? m_failed->value() : 0;
    m_request.addTokens = m_tokens ? m_tokens->value() : 0;
    m_request.addSpend.reset();
    try {
        const QString text = m_spend ? m_spend->text().trimmed() : QString();
        if (!text.isEmpty())
            m_request.addSpend = parseAmount(text.toStdString());
    } catch (const std::exception &e) {
        return tr("Add spend: %1").arg(QString::fromUtf8(e.what()));
    }
    return {};
}

ExecuteAnswer ResumeAction::execute(LedgerStore &store, MessageQueue *,
                                    const PacedRun::Hooks &) const
{
    RunActionCommand command = m_builder.runAction(store, m_actor, m_request);
    return validatedExecute(command);
}

// ReplayAction

ReplayAction::ReplayAction(ActorIdentity actor, GuardedActionBuilder builder,
                           const std::string &queue, const std::vector<std::int64_t> &ids,
                           double ratePerSecond)
    : m_actor(std::move(actor)), m_builder(std::move(builder))
{
    m_request.queue = queue;
    m_request.ids = ids;
    // A queue may carry several namespaces' messages: each is judged in its own.
    m_request.ns.clear();
    m_request.ratePerSecond = ratePerSecond;
    m_request.replayId = freshId("rp-").toStdString();
}

ReplayPreview ReplayAction::describe(LedgerStore &store, MessageQueue *queues) const
{
    if (!queues)
        throw std::runtime_error(QObject::tr("This ledger has no message queues.").toStdString());
    DlqReplayCommand command = m_builder.replay(store, *queues, m_actor, m_request);
    return ReplayPreview::read(command.describe());
}

DialogHeading ReplayAction::heading(const ReplayPreview &preview) const
{
    return {tr("Replay dead letters"), QString::fromStdString(preview.sentence),
            tr("Replay %n message(s)", nullptr, int(preview.count))};
}

void ReplayAction::present(GuardedActionDialog &dialog, const ReplayPreview &p) const
{
    dialog.setSubmissionId(QString::fromStdString(m_request.replayId));
    QStringList classes;
    for (const auto &[name, n] : p.byClass)
        classes << QStringLiteral("%1: %2").arg(QString::fromStdString(name)).arg(n);
    dialog.setNote(tr("Dry run over a frozen set of %1 message(s) — %2. At most %3 per second; "
                      "every message keeps its idempotency key.")
                       .arg(p.set)
                       .arg(classes.join(QLatin1String(", ")))
                       .arg(m_request.ratePerSecond));
    std::vector<QStringList> rows;
    for (const ReplayPreview::Item &item : p.items)
        rows.push_back({QString::number(item.msgId), QString::fromStdString(item.ns),
                        QString::fromStdString(item.key), QString::fromStdString(item.replayClass),
                        QString::fromStdString(item.detail)});
    dialog.addDetailWidget(tr("Dry run (%1)").arg(p.items.size()),
                           detailTable({tr("Message"), tr("Namespace"), tr("Operation key"),
                                        tr("Dry run"), tr("Detail")},
                                       rows));
    dialog.requireTypedCount(p.count);
}

QString ReplayAction::submit(const GuardedActionDialog::Submission &submission)
{
    m_request.reason = submission.reason.toStdString();
    m_request.confirmCount = submission.typedCount;
    m_request.replayId = submission.submissionId.toStdString();
    return {};
}

ExecuteAnswer ReplayAction::execute(LedgerStore &store, MessageQueue *queues,
                                    const PacedRun::Hooks &hooks) const
{
    if (!queues)
        return {false, QObject::tr("This ledger has no message queues.")};
    DlqReplayCommand command = m_builder.replay(store, *queues, m_actor, m_request, hooks);
    return validatedExecute(command);
}

QProgressDialog *ReplayAction::progressDialog(QWidget *parent) const
{
    return new QProgressDialog(tr("Replaying dead letters…"), tr("&Stop replay"), 0, 0, parent);
}

QString ReplayAction::progressText(qint64 done, qint64 total) const
{
    return tr("Replaying dead letters: %1 of %2").arg(done).arg(total);
}

// BulkRun

BulkRun::BulkRun(ActorIdentity actor, GuardedActionBuilder builder, BulkAction action,
                 double ratePerSecond, std::optional<std::vector<BulkTarget>> targets,
                 std::optional<OperationQuery> query)
    : m_actor(std::move(actor)), m_builder(std::move(builder)), m_query(std::move(query))
{
    m_request.action = action;
    m_request.ratePerSecond = ratePerSecond;
    if (targets)
        m_request.targets = std::move(*targets);
}

BulkRun::Preview BulkRun::describe(LedgerStore &store, MessageQueue *) const
{
    BulkCommand::Request request = m_request;
    if (m_query) {
        // Every page of every state the view reads, before anything is acted on.
        for (const ListFilter &f : m_query->filters(store.nowMs(), KeysetPosition::start(), 1000))
            for (BulkTarget &t : BulkCommand::freeze(store, f, request.action))
                if (!m_query->hideSandbox || !isSandboxNamespace(t.ns))
                    request.targets.push_back(std::move(t));
    }
    BulkCommand command = m_builder.bulk(store, m_actor, request);
    Preview p;
    p.targets = command.targets();
    p.preview = BulkPreview::read(command.describe());
    if (p.targets.empty())
        throw std::runtime_error(tr("Nothing to %1: no operation of the set is in a state the "
                                    "action takes.")
                                     .arg(verbOf(request.action).toLower())
                                     .toStdString());
    return p;
}

DialogHeading BulkRun::heading(const Preview &p) const
{
    const qint64 count = qint64(p.targets.size());
    return {tr("Bulk %1").arg(verbOf(m_request.action).toLower()), str(p.preview.sentence),
            (count == 1 ? tr("%1 %2 operation") : tr("%1 %2 operations"))
                .arg(verbOf(m_request.action))
                .arg(count)};
}

void BulkRun::present(GuardedActionDialog &dialog, const Preview &p)
{
    m_request.targets = p.targets;
    const qint64 count = qint64(p.targets.size());
    dialog.setSubject(tr("A frozen set of %1 operation%2: rows that arrive or change "
                         "after now are not acted on.")
                          .arg(count)
                          .arg(count == 1 ? QString() : QStringLiteral("s")));
    dialog.setNote(tr("Each operation is its own guarded action, with the same rules (four-eyes, "
                      "the requester may not approve) and its own audit record. At most %1 per "
                      "second; Stop ends the run between operations.")
                       .arg(m_request.ratePerSecond));
    std::vector<QStringList> rows;
    for (const BulkPreview::Target &t : p.preview.targets)
        rows.push_back({str(t.ns), str(t.key), QString::number(t.version), str(t.state)});
    dialog.addDetailWidget(
        tr("Set (%1)").arg(count),
        detailTable({tr("Namespace"), tr("Operation key"), tr("Version"), tr("State")}, rows));
    dialog.requireTypedCount(count);
}

QString BulkRun::submit(const GuardedActionDialog::Submission &submission)
{
    m_request.reason = submission.reason.toStdString();
    m_request.confirmCount = submission.typedCount;
    return {};
}

BulkRun::Done BulkRun::execute(LedgerStore &store, MessageQueue *,
                               const PacedRun::Hooks &hooks) const
{
    Done done;
    try {
        const auto lookup =
            m_request.action == BulkAction::Reconcile ? openProviderLookup(store) : nullptr;
        BulkCommand command = m_builder.bulk(store, m_actor, m_request, lookup.get(), hooks);
        done.outcome = command.execute();
        done.text = str(done.outcome->text());
    } catch (const std::exception &e) {
        done.ok = false;
        done.text = QString::fromStdString(e.what());
    }
    return done;
}

QProgressDialog *BulkRun::progressDialog(QWidget *parent) const
{
    auto *progress = new QProgressDialog(tr("%1: starting…").arg(verbOf(m_request.action)),
                                         tr("&Stop"), 0, int(m_request.targets.size()), parent);
    progress->setWindowTitle(tr("Bulk %1").arg(verbOf(m_request.action).toLower()));
    progress->setAutoClose(false);
    progress->setAutoReset(false);
    return progress;
}

QString BulkRun::progressText(qint64 done, qint64 total) const
{
    return tr("%1 of %2 operations done").arg(done).arg(total);
}

void BulkRun::finished(GuardedActionDialog &dialog, const Done &done) const
{
    if (!done.outcome)
        return;
    std::vector<QStringList> rows;
    for (const BulkItem &item : done.outcome->items)
        rows.push_back({str(item.target.ns), str(item.target.key),
                        str(std::string(bulkResultName(item.result))), str(item.state),
                        str(item.detail)});
    dialog.addDetailWidget(tr("Outcome (%1)").arg(rows.size()),
                           detailTable({tr("Namespace"), tr("Operation key"), tr("Outcome"),
                                        tr("State"), tr("Detail")},
                                       rows));
}

} // namespace idempo
