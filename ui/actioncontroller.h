// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <QObject>
#include <QString>

#include "actionrecords.h"
#include "engine.h"
#include "guardedaction.h"
#include "guardedactionbuilder.h"
#include "operation.h"
#include "operationdetailpane.h"
#include "runsummary.h"

class QWidget;

namespace idempo {

class GuardedActionDialog;
class GuardedActionRunner;
class LedgerConnection;
class OwnApprovals;

/// Starts the console's guarded actions on operations, runs and dead letters (consoleactions.h)
/// through one GuardedActionRunner: the command objects the CLI uses, built as it builds them
/// (GuardedActionBuilder), described on the ledger's worker thread, confirmed in a dialog and
/// executed with what the operator typed, the command's outcome in words shown in the dialog.
/// The identity acting is the ledger's (LedgerStore::actor()), read when the ledger opens; the
/// buttons follow its role but the command decides.
class ActionController final : public QObject
{
    Q_OBJECT
public:
    /// Dialogs open over `dialogParent`.
    ActionController(LedgerConnection *connection, QWidget *dialogParent);

    /// Who acts; unset until the open ledger answered.
    const std::optional<ActorIdentity> &actor() const { return m_actor; }
    /// Acts as `actor` from now on (the ledger's identity replaces it when a ledger opens).
    void setActor(const ActorIdentity &actor);
    /// Why the current actor may not use `capability`; empty when it may.
    QString refusal(Capability capability) const;
    /// The check for the buttons of `pane`: the role, then (for the operation the pane shows) a
    /// decision the person proposed first on its current version, which only another person
    /// may second.
    OperationDetailPane::RoleCheck roleCheck(const OperationDetailPane *pane = nullptr) const;

    /// Opens the confirmation of `action` on `op` once the command described it.
    void start(OperationAction action, const Operation &op);
    /// Opens the resume of the halted `run` (RunActionCommand): what to add to the budget that
    /// halted it, prefilled with a fresh allowance of failed dispatches where that one ran out.
    void resumeRun(const RunSummary &run);
    /// Opens the DLQ replay of the dead letters `ids` of `queue` (a frozen set) with its dry run.
    void replay(const std::string &queue, const std::vector<std::int64_t> &ids);

    /// The dialog open now, if any (tests drive it).
    GuardedActionDialog *dialog() const;

    /// Messages per second of a DLQ replay (DlqReplayCommand::Request::ratePerSecond).
    void setReplayRate(double perSecond) { m_replayRate = perSecond; }
    /// What every action is built with, bulk runs too: the engine's default settings, as
    /// `idempo` uses them without --retention.
    const GuardedActionBuilder &builder() const { return m_builder; }
    void setEngineSettings(const Engine::Settings &settings);

Q_SIGNALS:
    void actorChanged();
    /// What roleCheck() answers may have changed (the person's own first approvals were read).
    void enablementChanged();
    /// A confirmation dialog opened (modeless for the event loop, modal for the operator).
    void dialogOpened(idempo::GuardedActionDialog *dialog);
    /// The command would not describe the action (nothing to act on, ledger error).
    void refused(const QString &message);
    /// An execute() finished: its outcome in words, or the error it threw.
    void executed(bool ok, const QString &outcome);
    /// A DLQ replay advanced.
    void replayProgress(qint64 done, qint64 total);

private:
    void forgetActor();

    LedgerConnection *m_connection;
    std::optional<ActorIdentity> m_actor;
    OwnApprovals *m_ownApprovals;
    GuardedActionRunner *m_runner;
    GuardedActionBuilder m_builder;
    double m_replayRate = 20;
};

} // namespace idempo
