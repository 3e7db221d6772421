// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "approvecommand.h"
#include "bulkcommand.h"
#include "dlqreplaycommand.h"
#include "engine.h"
#include "pacedrun.h"
#include "reconcilecommand.h"
#include "runactioncommand.h"

namespace idempo {

/// Builds the guarded actions with the options the engine's settings give them: the one place
/// the CLI (`idempo approve`, `reject`, `reconcile`, `dlq replay`, `bulk`, `run`) and the console
/// build them, so that an action taken from either gives a re-dispatch the same attempt budget
/// (Engine::Settings::maxAttempts) and a final record the same retention
/// (Engine::Settings::retentionMs). A value: cheap to copy to a worker thread.
class GuardedActionBuilder final
{
public:
    /// The engine's defaults, as the CLI without --retention and the console use them.
    GuardedActionBuilder() = default;
    explicit GuardedActionBuilder(const Engine::Settings &settings) : m_settings(settings) {}

    const Engine::Settings &settings() const { return m_settings; }

    ApproveCommand::Options approveOptions() const;
    ReconcileCommand::Options reconcileOptions() const;
    /// With the waits, progress and stop of `hooks` (an unset sleep sleeps).
    DlqReplayCommand::Options replayOptions(const PacedRun::Hooks &hooks = {}) const;
    /// With `lookup` (required to reconcile) and the pacing of `hooks`.
    BulkCommand::Options bulkOptions(ProviderLookup *lookup = nullptr,
                                     const PacedRun::Hooks &hooks = {}) const;

    ApproveCommand approve(LedgerStore &store, ActorIdentity actor,
                           ApproveCommand::Request request) const;
    ReconcileCommand reconcile(LedgerStore &store, ProviderLookup &lookup, ActorIdentity actor,
                               ReconcileCommand::Request request) const;
    DlqReplayCommand replay(LedgerStore &store, MessageQueue &queue, ActorIdentity actor,
                            DlqReplayCommand::Request request,
                            const PacedRun::Hooks &hooks = {}) const;
    BulkCommand bulk(LedgerStore &store, ActorIdentity actor, BulkCommand::Request request,
                     ProviderLookup *lookup = nullptr, const PacedRun::Hooks &hooks = {}) const;
    /// A run's resume or budget change (RunActionCommand takes no options).
    RunActionCommand runAction(LedgerStore &store, ActorIdentity actor,
                               RunActionCommand::Request request) const;

private:
    Engine::Settings m_settings;
};

} // namespace idempo
