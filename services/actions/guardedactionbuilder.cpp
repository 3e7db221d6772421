// SPDX-License-Identifier: Apache-2.0
#include "guardedactionbuilder.h"

#include <utility>

namespace idempo {

ApproveCommand::Options GuardedActionBuilder::approveOptions() const
{
    ApproveCommand::Options options;
    options.extraAttempts = m_settings.maxAttempts;
    options.retentionMs = m_settings.retentionMs;
    return options;
}

ReconcileCommand::Options GuardedActionBuilder::reconcileOptions() const
{
    ReconcileCommand::Options options;
    options.retentionMs = m_settings.retentionMs;
    return options;
}

DlqReplayCommand::Options GuardedActionBuilder::replayOptions(const PacedRun::Hooks &hooks) const
{
    DlqReplayCommand::Options options;
    options.retentionMs = m_settings.retentionMs;
    options.sleep = hooks.sleep;
    options.progress = hooks.progress;
    options.cancelled = hooks.cancelled;
    return options;
}

BulkCommand::Options GuardedActionBuilder::bulkOptions(ProviderLookup *lookup,
                                                       const PacedRun::Hooks &hooks) const
{
    BulkCommand::Options options;
    options.extraAttempts = m_settings.maxAttempts;
    options.retentionMs = m_settings.retentionMs;
    options.lookup = lookup;
    options.pacing = hooks;
    return options;
}

ApproveCommand GuardedActionBuilder::approve(LedgerStore &store, ActorIdentity actor,
                                             ApproveCommand::Request request) const
{
    return ApproveCommand(store, std::move(actor), std::move(request), approveOptions());
}

ReconcileCommand GuardedActionBuilder::reconcile(LedgerStore &store, ProviderLookup &lookup,
                                                 ActorIdentity actor,
                                                 ReconcileCommand::Request request) const
{
    return ReconcileCommand(store, lookup, std::move(actor), std::move(request),
                            reconcileOptions());
}

DlqReplayCommand GuardedActionBuilder::replay(LedgerStore &store, MessageQueue &queue,
                                              ActorIdentity actor,
                                              DlqReplayCommand::Request request,
                                              const PacedRun::Hooks &hooks) const
{
    return DlqReplayCommand(store, queue, std::move(actor), std::move(request),
                            replayOptions(hooks));
}

BulkCommand GuardedActionBuilder::bulk(LedgerStore &store, ActorIdentity actor,
                                       BulkCommand::Request request, ProviderLookup *lookup,
                                       const PacedRun::Hooks &hooks) const
{
    return BulkCommand(store, std::move(actor), std::move(request), bulkOptions(lookup, hooks));
}

RunActionCommand GuardedActionBuilder::runAction(LedgerStore &store, ActorIdentity actor,
                                                 RunActionCommand::Request request) const
{
    return RunActionCommand(store, std::move(actor), std::move(request));
}

} // namespace idempo
