// SPDX-License-Identifier: Apache-2.0
#include "bulkactioncontroller.h"

#include <utility>

#include "actioncontroller.h"
#include "consoleactions.h"
#include "guardedactionrunner.h"

namespace idempo {
namespace {

Capability capabilityOf(BulkAction action)
{
    return action == BulkAction::Reconcile ? Capability::Reconcile : Capability::Approve;
}

} // namespace

BulkActionController::BulkActionController(LedgerConnection *connection, ActionController *actions,
                                           QWidget *dialogParent)
    : QObject(dialogParent), m_actions(actions),
      m_runner(new GuardedActionRunner(connection, dialogParent, this))
{
    connect(m_runner, &GuardedActionRunner::dialogOpened, this,
            &BulkActionController::dialogOpened);
    connect(m_runner, &GuardedActionRunner::refused, this, &BulkActionController::refused);
    connect(m_runner, &GuardedActionRunner::progress, this, &BulkActionController::progress);
    connect(m_runner, &GuardedActionRunner::executed, this, &BulkActionController::executed);
}

GuardedActionDialog *BulkActionController::dialog() const
{
    return m_runner->dialog();
}

QProgressDialog *BulkActionController::progressDialog() const
{
    return m_runner->progressDialog();
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
    m_runner->run(BulkRun(*m_actions->actor(), m_actions->builder(), action, m_rate,
                          std::move(targets), std::move(query)));
}

} // namespace idempo
