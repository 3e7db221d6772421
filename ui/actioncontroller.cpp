// SPDX-License-Identifier: Apache-2.0
#include "actioncontroller.h"

#include <QPointer>

#include "consoleactions.h"
#include "guardedactionrunner.h"
#include "ledgerconnection.h"
#include "ownapprovals.h"

namespace idempo {

ActionController::ActionController(LedgerConnection *connection, QWidget *dialogParent)
    : QObject(dialogParent), m_connection(connection),
      m_ownApprovals(new OwnApprovals(connection, this)),
      m_runner(new GuardedActionRunner(connection, dialogParent, this))
{
    connect(m_ownApprovals, &OwnApprovals::changed, this, &ActionController::enablementChanged);
    connect(m_connection, &LedgerConnection::closed, this, &ActionController::forgetActor);
    connect(m_connection, &LedgerConnection::openFailed, this, &ActionController::forgetActor);
    connect(m_connection, &LedgerConnection::opened, this, [this] {
        forgetActor();
        m_connection->query(
            this, [](LedgerStore &s, MessageQueue *) { return s.actor(); },
            [this](const ActorIdentity &actor) { setActor(actor); });
    });
    connect(m_runner, &GuardedActionRunner::dialogOpened, this, &ActionController::dialogOpened);
    connect(m_runner, &GuardedActionRunner::refused, this, &ActionController::refused);
    connect(m_runner, &GuardedActionRunner::executed, this, &ActionController::executed);
    connect(m_runner, &GuardedActionRunner::progress, this, &ActionController::replayProgress);
}

void ActionController::forgetActor()
{
    m_actor.reset();
    m_ownApprovals->setActorName({});
    Q_EMIT actorChanged();
}

void ActionController::setActor(const ActorIdentity &actor)
{
    m_actor = actor;
    m_ownApprovals->setActorName(actor.name);
    Q_EMIT actorChanged();
}

void ActionController::setEngineSettings(const Engine::Settings &settings)
{
    m_builder = GuardedActionBuilder(settings);
}

GuardedActionDialog *ActionController::dialog() const
{
    return m_runner->dialog();
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

void ActionController::start(OperationAction action, const Operation &op)
{
    if (!m_actor)
        return;
    if (action == OperationAction::Reconcile)
        m_runner->run(ReconcileAction(*m_actor, m_builder, op));
    else
        m_runner->run(ApprovalAction(*m_actor, m_builder, action, op));
}

void ActionController::resumeRun(const RunSummary &run)
{
    if (!m_actor || !run.record)
        return;
    m_runner->run(ResumeAction(*m_actor, m_builder, run));
}

void ActionController::replay(const std::string &queue, const std::vector<std::int64_t> &ids)
{
    if (!m_actor)
        return;
    m_runner->run(ReplayAction(*m_actor, m_builder, queue, ids, m_replayRate));
}

} // namespace idempo
