// SPDX-License-Identifier: Apache-2.0
#include "bulkactioncontroller.h"

#include <atomic>
#include <memory>
#include <thread>

#include <QHeaderView>
#include <QProgressDialog>
#include <QTableWidget>

#include "actioncontroller.h"
#include "guardedactiondialog.h"
#include "journallookup.h"
#include "ledgerconnection.h"

namespace idempo {
namespace {

/// What the worker answered: the frozen set described, a run's outcome, or the error.
struct BulkAnswer
{
    bool ok = true;
    QString error;
    std::vector<BulkTarget> targets;
    std::optional<ActionPreview> preview;
    std::optional<BulkOutcome> outcome;
};

Capability capabilityOf(BulkAction action)
{
    return action == BulkAction::Reconcile ? Capability::Reconcile : Capability::Approve;
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

QTableWidget *tableOf(const QStringList &headers, const std::vector<QStringList> &rows)
{
    auto *table = new QTableWidget(int(rows.size()), int(headers.size()));
    table->setHorizontalHeaderLabels(headers);
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->horizontalHeader()->setStretchLastSection(true);
    for (int r = 0; r < int(rows.size()); ++r)
        for (int c = 0; c < rows[r].size(); ++c)
            table->setItem(r, c, new QTableWidgetItem(rows[r].at(c)));
    table->resizeColumnsToContents();
    return table;
}

QString str(const std::string &s)
{
    return QString::fromStdString(s);
}

} // namespace

BulkActionController::BulkActionController(LedgerConnection *connection, ActionController *actions,
                                           QWidget *dialogParent)
    : QObject(dialogParent), m_connection(connection), m_actions(actions),
      m_dialogParent(dialogParent)
{
}

GuardedActionDialog *BulkActionController::dialog() const
{
    return m_dialog;
}

QProgressDialog *BulkActionController::progressDialog() const
{
    return m_progress;
}

QString BulkActionController::refusal(BulkAction action) const
{
    return m_actions->refusal(capabilityOf(action));
}

void BulkActionController::start(BulkAction action, const std::vector<BulkTarget> &targets)
{
    describe(action, targets, std::nullopt);
}

void BulkActionController::startFiltered(BulkAction action, const OperationQuery &query)
{
    describe(action, std::nullopt, query);
}

void BulkActionController::describe(BulkAction action,
                                    std::optional<std::vector<BulkTarget>> targets,
                                    std::optional<OperationQuery> query)
{
    if (!m_actions->actor() || !refusal(action).isEmpty()) {
        Q_EMIT refused(refusal(action));
        return;
    }
    const ActorIdentity actor = *m_actions->actor();
    BulkCommand::Request request;
    request.action = action;
    request.ratePerSecond = m_rate;
    m_connection->query(
        this,
        [actor, request, targets, query](LedgerStore &store, MessageQueue *) {
            BulkAnswer a;
            try {
                BulkCommand::Request r = request;
                if (targets) {
                    r.targets = *targets;
                } else {
                    // Every page of every state the view reads, before anything is acted on.
                    for (const ListFilter &f :
                         query->filters(store.nowMs(), KeysetPosition::start(), 1000))
                        for (BulkTarget &t : BulkCommand::freeze(store, f, r.action))
                            if (!query->hideSandbox || !isSandboxNamespace(t.ns))
                                r.targets.push_back(std::move(t));
                }
                BulkCommand command(store, actor, r, {});
                a.targets = command.targets();
                a.preview = command.describe();
            } catch (const std::exception &e) {
                a.ok = false;
                a.error = QString::fromStdString(e.what());
            }
            return a;
        },
        [this, request](const BulkAnswer &a) {
            if (!a.ok) {
                Q_EMIT refused(a.error);
                return;
            }
            if (a.targets.empty()) {
                Q_EMIT refused(tr("Nothing to %1: no operation of the set is in a state the "
                                  "action takes.")
                                   .arg(verbOf(request.action).toLower()));
                return;
            }
            const ActionPreview &p = *a.preview;
            const qint64 count = qint64(a.targets.size());
            if (m_dialog)
                m_dialog->close();
            m_dialog = new GuardedActionDialog(
                tr("Bulk %1").arg(verbOf(request.action).toLower()), str(p.sentence),
                (count == 1 ? tr("%1 %2 operation") : tr("%1 %2 operations"))
                    .arg(verbOf(request.action))
                    .arg(count),
                m_dialogParent);
            m_dialog->setAttribute(Qt::WA_DeleteOnClose);
            m_dialog->setSubject(tr("A frozen set of %1 operation%2: rows that arrive or change "
                                    "after now are not acted on.")
                                     .arg(count)
                                     .arg(count == 1 ? QString() : QStringLiteral("s")));
            m_dialog->setNote(
                tr("Each operation is its own guarded action, with the same rules (four-eyes, "
                   "the requester may not approve) and its own audit record. At most %1 per "
                   "second; Stop ends the run between operations.")
                    .arg(request.ratePerSecond));
            std::vector<QStringList> rows;
            for (const auto &t : p.details.at("targets"))
                rows.push_back({str(t.at("namespace").get<std::string>()),
                                str(t.at("key").get<std::string>()),
                                QString::number(t.at("version").get<std::int64_t>()),
                                str(t.at("state").get<std::string>())});
            m_dialog->addDetailWidget(
                tr("Set (%1)").arg(count),
                tableOf({tr("Namespace"), tr("Operation key"), tr("Version"), tr("State")}, rows));
            m_dialog->requireTypedCount(count);
            connect(m_dialog, &GuardedActionDialog::submitted, this,
                    [this, request, targets = a.targets](const GuardedActionDialog::Submission &s) {
                        BulkCommand::Request r = request;
                        r.targets = targets;
                        r.reason = s.reason.toStdString();
                        r.confirmCount = s.typedCount;
                        run(r);
                    });
            m_dialog->open();
            Q_EMIT dialogOpened(m_dialog);
        });
}

void BulkActionController::run(const BulkCommand::Request &request)
{
    const ActorIdentity actor = *m_actions->actor();
    auto cancelled = std::make_shared<std::atomic_bool>(false);
    auto *progress = new QProgressDialog(tr("%1: starting…").arg(verbOf(request.action)),
                                         tr("&Stop"), 0, int(request.targets.size()), m_dialog);
    progress->setWindowTitle(tr("Bulk %1").arg(verbOf(request.action).toLower()));
    progress->setAttribute(Qt::WA_DeleteOnClose);
    progress->setMinimumDuration(0);
    progress->setAutoClose(false);
    progress->setAutoReset(false);
    connect(progress, &QProgressDialog::canceled, this, [cancelled] { *cancelled = true; });
    m_progress = progress;
    QPointer<BulkActionController> self(this);
    const auto finish = [this](const BulkAnswer &a) {
        if (m_progress)
            m_progress->close();
        const QString text = a.ok ? str(a.outcome->text()) : a.error;
        if (m_dialog) {
            m_dialog->finish(a.ok, text);
            if (a.outcome) {
                std::vector<QStringList> rows;
                for (const BulkItem &item : a.outcome->items)
                    rows.push_back({str(item.target.ns), str(item.target.key),
                                    str(std::string(bulkResultName(item.result))), str(item.state),
                                    str(item.detail)});
                m_dialog->addDetailWidget(tr("Outcome (%1)").arg(rows.size()),
                                          tableOf({tr("Namespace"), tr("Operation key"),
                                                   tr("Outcome"), tr("State"), tr("Detail")},
                                                  rows));
            }
        }
        Q_EMIT executed(a.ok, text);
    };
    m_connection->runAlone(
        this,
        [self, actor, request, cancelled](LedgerStore &store, MessageQueue *) {
            BulkAnswer a;
            try {
                const auto lookup =
                    request.action == BulkAction::Reconcile ? openProviderLookup(store) : nullptr;
                BulkCommand::Options options;
                options.lookup = lookup.get();
                options.pacing.sleep = [](std::chrono::milliseconds ms) {
                    std::this_thread::sleep_for(ms);
                };
                options.pacing.cancelled = [cancelled] { return cancelled->load(); };
                options.pacing.progress = [self](std::int64_t done, std::int64_t total) {
                    QMetaObject::invokeMethod(
                        self,
                        [self, done, total] {
                            if (self)
                                self->reportProgress(done, total);
                        },
                        Qt::QueuedConnection);
                };
                BulkCommand command(store, actor, request, options);
                a.outcome = command.execute();
            } catch (const std::exception &e) {
                a.ok = false;
                a.error = QString::fromStdString(e.what());
            }
            return a;
        },
        finish,
        [finish](const QString &error) {
            BulkAnswer a;
            a.ok = false;
            a.error = error;
            finish(a);
        });
}

void BulkActionController::reportProgress(qint64 done, qint64 total)
{
    if (m_progress) {
        m_progress->setMaximum(int(total));
        m_progress->setValue(int(done));
        m_progress->setLabelText(tr("%1 of %2 operations done").arg(done).arg(total));
    }
    Q_EMIT progress(done, total);
}

} // namespace idempo
