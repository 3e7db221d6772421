// SPDX-License-Identifier: Apache-2.0
#include "reconciler.h"

#include <algorithm>

namespace idempo::sandbox {
namespace {

constexpr const char *Actor = "reconciler";

} // namespace

Reconciler::Reconciler(SandboxContext &context) : m_ctx(context) {}

std::vector<Operation> Reconciler::listByKey(OperationState state)
{
    std::vector<Operation> ops;
    ListFilter filter;
    filter.ns = m_ctx.ns();
    filter.state = state;
    filter.limit = 1000;
    for (;;) {
        std::vector<Operation> page = m_ctx.store().list(filter);
        const bool more = static_cast<int>(page.size()) == filter.limit;
        if (!page.empty())
            filter.afterId = page.back().id;
        std::move(page.begin(), page.end(), std::back_inserter(ops));
        if (!more)
            break;
    }
    // Row ids follow the threads' interleaving; keys do not.
    std::sort(ops.begin(), ops.end(),
              [](const Operation &a, const Operation &b) { return a.key < b.key; });
    return ops;
}

Reconciler::Pass Reconciler::run()
{
    Pass pass;
    std::int64_t &engineNs = m_ctx.slot(m_ctx.workers()).engineNs;
    const std::int64_t now = m_ctx.clock().nowMs();
    const auto dispatching =
        timed(engineNs, [&] { return listByKey(OperationState::Dispatching); });
    for (const Operation &op : dispatching) {
        if (op.kind != ToolKind::ProtectedWrite)
            continue;
        if (op.leaseExpiresAtMs && *op.leaseExpiresAtMs > now)
            ++pass.waiting;
        else
            revokeLapsed(op, pass);
    }
    const auto unknown = timed(engineNs, [&] { return listByKey(OperationState::UnknownOutcome); });
    for (const Operation &op : unknown)
        settle(op, pass);
    // The no-progress budget, judged on the ledger's clock (runbudget.h).
    timed(engineNs, [&] { return m_ctx.store().sweepRuns(m_ctx.ns()); });
    return pass;
}

void Reconciler::revokeLapsed(const Operation &op, Pass &pass)
{
    // A claim is the engine's one way to judge a lapse: on a protected write it moves the
    // operation to unknown_outcome under a new token, which fences the lapsed holder off.
    ClaimInput claim;
    claim.ns = op.ns;
    claim.key = op.key;
    claim.payloadJson = op.payload;
    claim.kind = op.kind;
    claim.owner = Actor;
    claim.runId = op.runId;
    claim.stepId = op.stepId;
    claim.target = op.target;
    claim.fingerprintFields = op.fingerprintFields;
    const ClaimResult result =
        timed(m_ctx.slot(m_ctx.workers()).engineNs, [&] { return m_ctx.engine().claim(claim); });
    ++m_ctx.counters().claimOutcomes[static_cast<std::size_t>(result.outcome)];
    if (result.operation.state == OperationState::UnknownOutcome) {
        ++m_ctx.counters().leasesRevoked;
        ++pass.actions;
        settle(result.operation, pass);
    }
}

void Reconciler::settle(const Operation &op, Pass &pass)
{
    RunState *run = m_ctx.run(op.runId);
    if (!run)
        return;
    const int stepIndex = run->scenario->stepIndex(op.stepId);
    if (stepIndex < 0)
        return;
    const auto &steps = run->scenario->steps();
    const WorkflowStep &step = steps[static_cast<std::size_t>(stepIndex)];
    const WorkflowStep *next = stepIndex + 1 < static_cast<int>(steps.size())
                                   ? &steps[static_cast<std::size_t>(stepIndex) + 1]
                                   : nullptr;
    SimulatedProvider &provider = m_ctx.provider(step.provider);
    std::int64_t &engineNs = m_ctx.slot(m_ctx.workers()).engineNs;
    const std::int64_t now = m_ctx.clock().nowMs();

    TransitionRequest move;
    move.ns = op.ns;
    move.key = op.key;
    move.from = OperationState::UnknownOutcome;
    move.fencingToken = op.fencingToken;
    move.actor = Actor;
    move.retentionMs = m_ctx.engine().settings().retentionMs;

    const LookupAnswer found = provider.lookup(op.key, now);
    if (found.status == LookupAnswer::Status::Unsupported) {
        move.to = OperationState::ConfirmationRequired;
        move.detail = "reconciliation inconclusive: " + provider.name() + " has no lookup by key";
        timed(engineNs, [&] { return m_ctx.store().transition(move); });
        ++m_ctx.counters().reconciledToConfirmation;
        ++pass.actions;
        run->settled = true;
        return;
    }
    if (found.status == LookupAnswer::Status::Pending) {
        ++pass.waiting;
        return;
    }
    if (found.status == LookupAnswer::Status::Found) {
        const nlohmann::json result{{"effect_id", found.effectId}};
        move.to = OperationState::Succeeded;
        move.detail =
            "reconciled: " + provider.name() + " reports effect " + found.effectId + " for the key";
        move.result = m_ctx.engine().canonicalise(result.dump(), "result");
        move.receipt = m_ctx.engine().canonicalise(
            nlohmann::json{{"effect_id", found.effectId}, {"provider", provider.name()}}.dump(),
            "receipt");
        if (next) {
            const std::string message = m_ctx.envelope(*run, *next, result, Actor, now);
            timed(engineNs, [&] {
                return m_ctx.store().transitionAndSend(move, m_ctx.queueName(), message, {});
            });
        } else {
            timed(engineNs, [&] { return m_ctx.store().transition(move); });
            run->settled = true;
        }
        ++m_ctx.counters().reconciledFound;
        ++pass.actions;
        return;
    }
    // The provider, asked by key, has no effect under it: dispatching again under the same key is
    // safe.
    move.to = OperationState::Received;
    move.detail = "reconciled: " + provider.name() + " has no effect for the key; dispatch again";
    const std::string message =
        m_ctx.envelope(*run, step, nlohmann::json::parse(op.payload), Actor, now);
    timed(engineNs,
          [&] { return m_ctx.store().transitionAndSend(move, m_ctx.queueName(), message, {}); });
    ++m_ctx.counters().reconciledNoEffect;
    ++pass.actions;
}

} // namespace idempo::sandbox
