// SPDX-License-Identifier: Apache-2.0
#include "actioncontroller.h"

#include <algorithm>
#include <atomic>
#include <limits>
#include <memory>
#include <thread>

#include <QHeaderView>
#include <QLineEdit>
#include <QProgressDialog>
#include <QSpinBox>
#include <QTableWidget>
#include <QUuid>

#include "approvecommand.h"
#include "displayformat.h"
#include "dlqreplaycommand.h"
#include "error.h"
#include "guardedactiondialog.h"
#include "journallookup.h"
#include "ledgerconnection.h"
#include "ownapprovals.h"
#include "reconcilecommand.h"
#include "runactioncommand.h"
#include "runbudgetuse.h"

namespace idempo {

namespace {

/// What a job on the worker answered: a preview, an outcome in words, or the error it threw.
struct Answer
{
    bool ok = true;
    QString error;
    std::optional<ActionPreview> preview;
    QString outcome;
};

QString joined(const std::vector<std::string> &problems)
{
    QStringList lines;
    for (const std::string &p : problems)
        lines << QString::fromStdString(p);
    return lines.join(QLatin1String("; "));
}

/// validate() with the operator's input, then execute(); problems refuse without writing.
template <typename Command> Answer validateAndExecute(Command &action)
{
    Answer a;
    try {
        if (const auto problems = action.validate(); !problems.empty()) {
            a.ok = false;
            a.error = QObject::tr("Refused: %1").arg(joined(problems));
            return a;
        }
        a.outcome = QString::fromStdString(action.execute().text());
    } catch (const Error &e) {
        a.ok = false;
        // Another holder does this work now (an open replay of the same dead letters): say that
        // nothing happened, before the store's words on who holds it and since when.
        a.error = e.code() == ErrorCode::InProgress
                      ? QObject::tr("Not started, nothing was written: %1")
                            .arg(QString::fromStdString(e.what()))
                      : QString::fromStdString(e.what());
    } catch (const std::exception &e) {
        a.ok = false;
        a.error = QString::fromStdString(e.what());
    }
    return a;
}

Answer describeOnly(GuardedAction &action)
{
    Answer a;
    try {
        a.preview = action.describe();
    } catch (const std::exception &e) {
        a.ok = false;
        a.error = QString::fromStdString(e.what());
    }
    return a;
}

QString historyText(const nlohmann::json &history)
{
    QStringList lines;
    for (const nlohmann::json &e : history) {
        const auto str = [&e](const char *k) {
            return e.contains(k) && e[k].is_string()
                       ? QString::fromStdString(e[k].get<std::string>())
                       : QString();
        };
        QString line =
            QStringLiteral("%1  %2 → %3  attempt %4  by %5")
                .arg(isoTimestampText(str("at").toStdString()),
                     str("from").isEmpty() ? QStringLiteral("·") : str("from"), str("to"))
                .arg(e.value("attempt", 0))
                .arg(str("actor"));
        if (!str("error_class").isEmpty())
            line += QStringLiteral("  [%1]").arg(str("error_class"));
        if (!str("detail").isEmpty())
            line += QStringLiteral("  %1").arg(str("detail"));
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

QString jsonText(const nlohmann::json &value)
{
    if (value.is_null() || (value.is_string() && value.get<std::string>().empty()))
        return QObject::tr("(none recorded)");
    if (value.is_string())
        return prettyJson(value.get<std::string>());
    return QString::fromStdString(value.dump(2));
}

/// Why a second approver must confirm, in the terms the ledger gates by.
QString fourEyesNote(const nlohmann::json &details)
{
    const auto rates = details.find("reference_rates");
    if (rates == details.end() || !rates->is_string())
        return QObject::tr(" · above the four-eyes threshold (no reference rates are "
                           "set, so it applies as written in every currency): a second "
                           "approver must confirm");
    const QString text = QString::fromStdString(rates->get<std::string>());
    return QObject::tr(" · above the four-eyes threshold in %1 at the ledger's rates "
                       "(%2), or in a currency without a rate: a second approver must "
                       "confirm")
        .arg(text.left(3), text);
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

ActionController::ActionController(LedgerConnection *connection, QWidget *dialogParent)
    : QObject(dialogParent), m_connection(connection), m_dialogParent(dialogParent),
      m_ownApprovals(new OwnApprovals(connection, this))
{
    connect(m_ownApprovals, &OwnApprovals::changed, this, &ActionController::enablementChanged);
    const auto forget = [this] {
        m_actor.reset();
        m_ownApprovals->setActorName({});
        Q_EMIT actorChanged();
    };
    connect(m_connection, &LedgerConnection::closed, this, forget);
    connect(m_connection, &LedgerConnection::openFailed, this, forget);
    connect(m_connection, &LedgerConnection::opened, this, [this] {
        m_actor.reset();
        m_ownApprovals->setActorName({});
        Q_EMIT actorChanged();
        m_connection->query(
            this, [](LedgerStore &s, MessageQueue *) { return s.actor(); },
            [this](const ActorIdentity &actor) { setActor(actor); });
    });
}

void ActionController::setActor(const ActorIdentity &actor)
{
    m_actor = actor;
    m_ownApprovals->setActorName(actor.name);
    Q_EMIT actorChanged();
}

QString ActionController::refusal(Capability capability) const
{
    if (!m_connection->isOpen())
        return m_connection->lastError().isEmpty()
                   ? tr("No ledger is open yet.")
                   : tr("No ledger is open: %1").arg(m_connection->lastError());
    if (!m_actor)
        return tr("Your role on this ledger is not known yet.");
    if (roleMay(m_actor->role, capability))
        return {};
    return tr("You are %1: %2. The ledger refuses it too.")
        .arg(QString::fromStdString(m_actor->name),
             QString::fromStdString(roleRefusal(m_actor->role, capability)));
}

OperationDetailPane::RoleCheck ActionController::roleCheck(const OperationDetailPane *pane) const
{
    return [this, pane = QPointer<const OperationDetailPane>(pane)](OperationAction action) {
        const QString why = refusal(action == OperationAction::Reconcile ? Capability::Reconcile
                                                                         : Capability::Approve);
        if (!why.isEmpty() || !pane || !pane->operation())
            return why;
        return m_ownApprovals->refusal(action, *pane->operation());
    };
}

void ActionController::openDialog(const QString &title, const QString &okText,
                                  const ActionPreview &preview)
{
    if (m_dialog)
        m_dialog->close();
    auto *d = new GuardedActionDialog(title, QString::fromStdString(preview.sentence), okText,
                                      m_dialogParent);
    d->setAttribute(Qt::WA_DeleteOnClose);
    m_dialog = d;
}

void ActionController::finishExecute(bool ok, const QString &outcome)
{
    if (m_dialog)
        m_dialog->finish(ok, outcome);
    Q_EMIT executed(ok, outcome);
}

void ActionController::start(OperationAction action, const Operation &op)
{
    if (!m_actor)
        return;
    const ActorIdentity actor = *m_actor;
    const QString submissionId = QStringLiteral("ap-") + QUuid::createUuid().toString(QUuid::Id128);
    if (action == OperationAction::Reconcile) {
        ReconcileCommand::Request req;
        req.ns = op.ns;
        req.key = op.key;
        m_connection->query(
            this,
            [actor, req](LedgerStore &s, MessageQueue *) {
                auto lookup = openProviderLookup(s);
                ReconcileCommand cmd(s, *lookup, actor, req);
                return describeOnly(cmd);
            },
            [this, actor, req, subject = subjectOf(op)](const Answer &a) {
                if (!a.ok) {
                    Q_EMIT refused(a.error);
                    return;
                }
                openDialog(tr("Reconcile"),
                           consequenceButtonText(QString::fromStdString(a.preview->sentence)),
                           *a.preview);
                m_dialog->setSubject(subject);
                const auto &ops = a.preview->details["operations"];
                m_dialog->addDetail(
                    tr("What the provider says"),
                    ops.empty() ? tr("(nothing)")
                                : jsonText(ops.front().value("evidence", nlohmann::json())));
                connect(m_dialog, &GuardedActionDialog::submitted, this,
                        [this, actor, req](const GuardedActionDialog::Submission &sub) {
                            ReconcileCommand::Request r = req;
                            r.reason = sub.reason.toStdString();
                            m_connection->query(
                                this,
                                [actor, r](LedgerStore &s, MessageQueue *) {
                                    auto lookup = openProviderLookup(s);
                                    ReconcileCommand cmd(s, *lookup, actor, r);
                                    return validateAndExecute(cmd);
                                },
                                [this](const Answer &done) {
                                    finishExecute(done.ok, done.ok ? done.outcome : done.error);
                                });
                        });
                m_dialog->open();
                Q_EMIT dialogOpened(m_dialog);
            });
        return;
    }

    ApproveCommand::Request req;
    req.ns = op.ns;
    req.key = op.key;
    req.decision = action == OperationAction::Confirm  ? ApprovalDecision::Confirm
                   : action == OperationAction::Reject ? ApprovalDecision::Reject
                                                       : ApprovalDecision::Redispatch;
    req.approvalId = submissionId.toStdString();
    ApproveCommand::Request preview = req;
    if (action == OperationAction::Confirm)
        preview.externalReference = tr("the reference entered below").toStdString();
    m_connection->query(
        this,
        [actor, preview](LedgerStore &s, MessageQueue *) {
            ApproveCommand cmd(s, actor, preview);
            return describeOnly(cmd);
        },
        [this, actor, req, action, submissionId, subject = subjectOf(op)](const Answer &a) {
            if (!a.ok) {
                Q_EMIT refused(a.error);
                return;
            }
            const ActionPreview &p = *a.preview;
            const QString title = action == OperationAction::Reject ? tr("Reject operation")
                                  : action == OperationAction::Confirm
                                      ? tr("Confirm operation as succeeded")
                                      : tr("Approve operation");
            openDialog(title, consequenceButtonText(QString::fromStdString(p.sentence)), p);
            m_dialog->setSubject(subject);
            m_dialog->setSubmissionId(submissionId);
            m_dialog->setNote(tr("%1 → %2 · approval id %3%4")
                                  .arg(QString::fromStdString(p.details.value("from", "")),
                                       QString::fromStdString(p.details.value("to", "")),
                                       submissionId,
                                       p.details.value("four_eyes", false) ? fourEyesNote(p.details)
                                                                           : QString()));
            m_dialog->addDetail(tr("Evidence"),
                                jsonText(p.details.value("evidence", nlohmann::json())));
            m_dialog->addDetail(tr("Attempt history"),
                                historyText(p.details.value("history", nlohmann::json::array())));
            if (p.details.contains("operation"))
                m_dialog->addDetail(tr("Payload"), jsonText(p.details["operation"].value(
                                                       "payload", nlohmann::json())));
            if (action == OperationAction::Confirm)
                m_dialog->requireReference(tr("External &reference"));
            connect(m_dialog, &GuardedActionDialog::submitted, this,
                    [this, actor, req](const GuardedActionDialog::Submission &sub) {
                        ApproveCommand::Request r = req;
                        r.reason = sub.reason.toStdString();
                        r.externalReference = sub.externalReference.toStdString();
                        r.approvalId = sub.submissionId.toStdString();
                        m_connection->query(
                            this,
                            [actor, r](LedgerStore &s, MessageQueue *) {
                                ApproveCommand cmd(s, actor, r);
                                return validateAndExecute(cmd);
                            },
                            [this](const Answer &done) {
                                finishExecute(done.ok, done.ok ? done.outcome : done.error);
                            });
                    });
            m_dialog->open();
            Q_EMIT dialogOpened(m_dialog);
        });
}

void ActionController::resumeRun(const RunSummary &run)
{
    if (!m_actor || !run.record)
        return;
    const ActorIdentity actor = *m_actor;
    const RunRecord &record = *run.record;
    RunActionCommand::Request req;
    req.kind = RunActionCommand::Kind::Resume;
    req.ns = run.ns;
    req.runId = run.runId;
    if (record.haltBudget == BudgetKind::FailedDispatches && record.budgets.failedDispatches)
        req.addFailed = std::max<std::int64_t>(1, *record.budgets.failedDispatches);
    m_connection->query(
        this,
        [actor, req](LedgerStore &s, MessageQueue *) {
            RunActionCommand cmd(s, actor, req);
            return describeOnly(cmd);
        },
        [this, actor, req, record](const Answer &a) {
            if (!a.ok) {
                Q_EMIT refused(a.error);
                return;
            }
            openDialog(tr("Resume run"), tr("Resume run"), *a.preview);
            m_dialog->setSubject(
                tr("Run %1 · namespace %2 · %3")
                    .arg(displayText(record.runId), displayText(record.ns), runStateText(record)));
            m_dialog->setNote(
                tr("Resuming lets the run dispatch again: the budget that halted it needs room "
                   "afterwards. Raising the spend cap above the four-eyes threshold needs a "
                   "second identity."));
            m_dialog->addDetail(tr("Run"),
                                jsonText(a.preview->details.value("run", nlohmann::json())));
            QSpinBox *failed = nullptr;
            QLineEdit *spend = nullptr;
            QSpinBox *tokens = nullptr;
            if (record.budgets.failedDispatches) {
                failed = new QSpinBox;
                failed->setObjectName(QStringLiteral("addFailedDispatches"));
                failed->setRange(0, 1'000'000);
                failed->setValue(static_cast<int>(req.addFailed));
                m_dialog->addField(tr("Add &failed dispatches"), failed);
            }
            if (record.budgets.spend) {
                spend = new QLineEdit;
                spend->setObjectName(QStringLiteral("addSpend"));
                spend->setPlaceholderText(
                    tr("e.g. 50.00 %1 (empty: none)")
                        .arg(QString::fromStdString(record.budgets.spend->currency)));
                m_dialog->addField(tr("Add &spend"), spend);
            }
            if (record.budgets.tokens) {
                tokens = new QSpinBox;
                tokens->setObjectName(QStringLiteral("addTokens"));
                tokens->setRange(0, std::numeric_limits<int>::max());
                tokens->setSingleStep(1000);
                m_dialog->addField(tr("Add &tokens"), tokens);
            }
            connect(m_dialog, &GuardedActionDialog::submitted, this,
                    [this, actor, req, failed, spend,
                     tokens](const GuardedActionDialog::Submission &sub) {
                        RunActionCommand::Request r = req;
                        r.reason = sub.reason.toStdString();
                        r.addFailed = failed ? failed->value() : 0;
                        r.addTokens = tokens ? tokens->value() : 0;
                        try {
                            const QString text = spend ? spend->text().trimmed() : QString();
                            if (!text.isEmpty())
                                r.addSpend = parseAmount(text.toStdString());
                        } catch (const std::exception &e) {
                            finishExecute(false,
                                          tr("Add spend: %1").arg(QString::fromUtf8(e.what())));
                            return;
                        }
                        m_connection->query(
                            this,
                            [actor, r](LedgerStore &s, MessageQueue *) {
                                RunActionCommand cmd(s, actor, r);
                                return validateAndExecute(cmd);
                            },
                            [this](const Answer &done) {
                                finishExecute(done.ok, done.ok ? done.outcome : done.error);
                            });
                    });
            m_dialog->open();
            Q_EMIT dialogOpened(m_dialog);
        });
}

void ActionController::replay(const std::string &queue, const std::vector<std::int64_t> &ids)
{
    if (!m_actor)
        return;
    const ActorIdentity actor = *m_actor;
    const QString replayId = QStringLiteral("rp-") + QUuid::createUuid().toString(QUuid::Id128);
    DlqReplayCommand::Request req;
    req.queue = queue;
    req.ids = ids;
    // A queue may carry several namespaces' messages: each is judged in its own.
    req.ns.clear();
    req.ratePerSecond = m_replayRate;
    req.replayId = replayId.toStdString();
    m_connection->query(
        this,
        [actor, req](LedgerStore &s, MessageQueue *q) {
            Answer a;
            if (!q) {
                a.ok = false;
                a.error = QObject::tr("This ledger has no message queues.");
                return a;
            }
            DlqReplayCommand cmd(s, *q, actor, req, {});
            return describeOnly(cmd);
        },
        [this, actor, req, replayId](const Answer &a) {
            if (!a.ok) {
                Q_EMIT refused(a.error);
                return;
            }
            const ActionPreview &p = *a.preview;
            const qint64 count = p.details.value("count", std::int64_t{0});
            openDialog(tr("Replay dead letters"), tr("Replay %n message(s)", nullptr, int(count)),
                       p);
            m_dialog->setSubmissionId(replayId);
            QStringList classes;
            for (const auto &[name, n] : p.details["by_class"].items())
                classes << QStringLiteral("%1: %2")
                               .arg(QString::fromStdString(name))
                               .arg(n.get<std::int64_t>());
            m_dialog->setNote(
                tr("Dry run over a frozen set of %1 message(s) — %2. At most %3 per second; "
                   "every message keeps its idempotency key.")
                    .arg(p.details.value("set", std::int64_t{0}))
                    .arg(classes.join(QLatin1String(", ")))
                    .arg(m_replayRate));
            const auto &items = p.details["items"];
            auto *table = new QTableWidget(int(items.size()), 5);
            table->setHorizontalHeaderLabels(
                {tr("Message"), tr("Namespace"), tr("Operation key"), tr("Dry run"), tr("Detail")});
            table->verticalHeader()->setVisible(false);
            table->setEditTriggers(QAbstractItemView::NoEditTriggers);
            table->horizontalHeader()->setStretchLastSection(true);
            int row = 0;
            for (const auto &item : items) {
                const auto cell = [&](int c, const QString &text) {
                    table->setItem(row, c, new QTableWidgetItem(text));
                };
                cell(0, QString::number(item.value("msg_id", std::int64_t{0})));
                cell(1, QString::fromStdString(item.value("namespace", "")));
                cell(2, QString::fromStdString(item.value("key", "")));
                cell(3, QString::fromStdString(item.value("class", "")));
                cell(4, QString::fromStdString(item.value("detail", "")));
                ++row;
            }
            table->resizeColumnsToContents();
            m_dialog->addDetailWidget(tr("Dry run (%1)").arg(items.size()), table);
            m_dialog->requireTypedCount(count);
            connect(m_dialog, &GuardedActionDialog::submitted, this,
                    [this, actor, req](const GuardedActionDialog::Submission &sub) {
                        DlqReplayCommand::Request r = req;
                        r.reason = sub.reason.toStdString();
                        r.confirmCount = sub.typedCount;
                        r.replayId = sub.submissionId.toStdString();
                        runReplay(actor, r);
                    });
            m_dialog->open();
            Q_EMIT dialogOpened(m_dialog);
        });
}

void ActionController::runReplay(const ActorIdentity &actor,
                                 const DlqReplayCommand::Request &request)
{
    // The replay waits between messages to keep its rate: it runs alone, on its own thread and
    // connection, so the views keep answering meanwhile.
    auto cancelled = std::make_shared<std::atomic_bool>(false);
    auto *progress =
        new QProgressDialog(tr("Replaying dead letters…"), tr("&Stop replay"), 0, 0, m_dialog);
    progress->setAttribute(Qt::WA_DeleteOnClose);
    progress->setMinimumDuration(0);
    connect(progress, &QProgressDialog::canceled, this, [cancelled] { *cancelled = true; });
    m_progress = progress;
    QPointer<ActionController> self(this);
    const auto finish = [this](bool ok, const QString &outcome) {
        if (m_progress)
            m_progress->close();
        finishExecute(ok, outcome);
    };
    m_connection->runAlone(
        this,
        [self, actor, request, cancelled](LedgerStore &store, MessageQueue *queues) {
            Answer a;
            if (!queues) {
                a.ok = false;
                a.error = QObject::tr("This ledger has no message queues.");
                return a;
            }
            DlqReplayCommand::Options options;
            options.sleep = [](std::chrono::milliseconds ms) { std::this_thread::sleep_for(ms); };
            options.cancelled = [cancelled] { return cancelled->load(); };
            options.progress = [self](std::int64_t done, std::int64_t total) {
                QMetaObject::invokeMethod(
                    self,
                    [self, done, total] {
                        if (self)
                            self->reportProgress(done, total);
                    },
                    Qt::QueuedConnection);
            };
            DlqReplayCommand cmd(store, *queues, actor, request, options);
            return validateAndExecute(cmd);
        },
        [finish](const Answer &a) { finish(a.ok, a.ok ? a.outcome : a.error); },
        [finish](const QString &error) { finish(false, error); });
}

void ActionController::reportProgress(qint64 done, qint64 total)
{
    if (m_progress) {
        m_progress->setMaximum(int(total));
        m_progress->setValue(int(done));
        m_progress->setLabelText(tr("Replaying dead letters: %1 of %2").arg(done).arg(total));
    }
    Q_EMIT replayProgress(done, total);
}

} // namespace idempo
