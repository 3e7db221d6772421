// SPDX-License-Identifier: Apache-2.0
#include "engineconsumer.h"

#include <thread>

#include "error.h"
#include "queueenvelope.h"

namespace idempo::sandbox {

EngineConsumer::EngineConsumer(SandboxContext &context) : m_ctx(context) {}

void EngineConsumer::deliver(int thread, RunState &run, const QueueMessage &message)
{
    const QueueEnvelope envelope = QueueEnvelope::fromJson(nlohmann::json::parse(message.message));
    Attempt a;
    a.thread = thread;
    a.run = &run;
    a.stepIndex = run.scenario->stepIndex(envelope.stepId);
    if (a.stepIndex < 0)
        throw Error(ErrorCode::InvalidArgument,
                    "no step '" + envelope.stepId + "' in " + run.scenario->name());
    a.message = message;
    a.payload = envelope.payload;
    a.key = envelope.idempotencyKey;
    const WorkflowStep &step = a.step();
    const int delivery = run.steps[static_cast<std::size_t>(a.stepIndex)].deliveries++;
    ++m_ctx.counters().deliveries;
    a.worker = m_ctx.virtualWorker(run, step.stepId, delivery);
    a.owner = m_ctx.owner(a.worker);

    ClaimInput claim;
    claim.ns = m_ctx.ns();
    claim.key = a.key;
    claim.payloadJson = a.payload.dump();
    claim.kind = step.kind;
    claim.owner = a.owner;
    claim.runId = run.runId;
    claim.stepId = step.stepId;
    claim.requiresApproval = run.scenario->requiresApproval(step, a.payload);
    claim.value = run.scenario->value(step, a.payload);
    TimeSlot &slot = m_ctx.slot(thread);
    const ClaimResult result = timed(slot.engineNs, [&] { return m_ctx.engine().claim(claim); });
    ++m_ctx.counters().claimOutcomes[static_cast<std::size_t>(result.outcome)];
    if (a.stepIndex == 0 && delivery == 0 && m_ctx.fires(Fault::TwoPlanners, run, 0, 0))
        twinPlanner(a, claim);

    const Operation &op = result.operation;
    const bool last = a.stepIndex + 1 == static_cast<int>(run.scenario->steps().size());
    switch (result.outcome) {
    case ClaimOutcome::Claimed:
        // Worker windows open only on work the worker actually holds.
        a.token = op.fencingToken;
        execute(a, m_ctx.workerFault(run, a.stepIndex, delivery));
        return;
    case ClaimOutcome::Replayed:
        if (last || op.state != OperationState::Succeeded)
            run.settled = true;
        ack(thread, message);
        return;
    case ClaimOutcome::InProgress:
        // A live lease may still die: look again when it would lapse. Approvals and
        // confirmations are a person's to settle, so the message has done its work.
        if (op.state == OperationState::Dispatching) {
            redeliverAt(thread, message, op.leaseExpiresAtMs);
        } else {
            run.settled = true;
            ack(thread, message);
        }
        return;
    case ClaimOutcome::RetryLater:
        redeliverAt(thread, message, op.nextAttemptAtMs);
        return;
    case ClaimOutcome::BudgetExhausted:
        // A halted run dispatches nothing until a person resumes it.
        run.settled = true;
        ack(thread, message);
        return;
    case ClaimOutcome::ReconcileRequired:
    case ClaimOutcome::PayloadMismatch:
        // The reconciler owns an unknown outcome; a mismatch is a conflict that nothing retries.
        ack(thread, message);
        return;
    }
}

void EngineConsumer::twinPlanner(const Attempt &a, const ClaimInput &claim)
{
    // The second planner delivers the same envelope while the first holds the lease, then
    // retries later as a planner would; both answers come from the ledger.
    ClaimInput twin = claim;
    twin.owner = "planner-2";
    TimeSlot &slot = m_ctx.slot(a.thread);
    const ClaimResult result = timed(slot.engineNs, [&] { return m_ctx.engine().claim(twin); });
    ++m_ctx.counters().deliveries;
    ++m_ctx.counters().claimOutcomes[static_cast<std::size_t>(result.outcome)];
    timed(slot.queueNs, [&] {
        return m_ctx.queue().send(m_ctx.queueName(), a.message.message, {},
                                  m_ctx.timings().twinDelayMs);
    });
}

void EngineConsumer::execute(const Attempt &a, std::optional<Fault> fault)
{
    RunState &run = *a.run;
    const std::string &stepId = a.step().stepId;
    const auto parkAt = [&](bool afterCall, const ProviderAnswer &answer,
                            const std::string &decision) {
        ParkedWorker p;
        p.run = m_ctx.runIndex(run);
        p.seq = run.parkedSeq++;
        p.wakeAtMs = m_ctx.clock().nowMs() + m_ctx.timings().pauseMs;
        p.message = a.message;
        p.worker = a.worker;
        p.owner = a.owner;
        p.fencingToken = a.token;
        p.afterCall = afterCall;
        p.answer = answer;
        p.decision = decision;
        if (m_ctx.inWorkerProcess()) {
            // A real process stalls for real, holding what it held, then carries on.
            timed(m_ctx.slot(a.thread).stalledNs, [&] {
                std::this_thread::sleep_for(std::chrono::milliseconds(m_ctx.timings().pauseMs));
            });
            resume(a.thread, run, p);
        } else {
            m_ctx.park(std::move(p));
        }
    };
    if (fault == Fault::CrashBeforeDispatch) {
        m_ctx.crash(*fault, run, a.stepIndex);
        return;
    }
    const bool pauseAfterCall = m_ctx.plan().uniform(run.runId, stepId + "#pause", 0) >= 0.5;
    if (fault == Fault::PausedWorker && !pauseAfterCall) {
        parkAt(false, {}, {});
        return;
    }
    if (fault == Fault::CrashDuringCall &&
        m_ctx.plan().uniform(run.runId, stepId + "#in-flight", 0) < 0.5) {
        m_ctx.crash(*fault, run,
                    a.stepIndex); // the request died with the worker before reaching the provider
        return;
    }
    std::string decision;
    const ProviderAnswer answer = callProvider(a, decision);
    if (fault == Fault::CrashDuringCall ||
        (fault == Fault::CrashAfterEffect && answer.status == ProviderAnswer::Status::Ok &&
         m_ctx.open(*fault, run, a.stepIndex))) {
        m_ctx.crash(*fault, run, a.stepIndex);
        return;
    }
    if (fault == Fault::PausedWorker) {
        parkAt(true, answer, decision);
        return;
    }
    finish(a, answer, decision, fault == Fault::CrashAfterRecord);
}

ProviderAnswer EngineConsumer::callProvider(const Attempt &a, std::string &decision)
{
    RunState &run = *a.run;
    const WorkflowStep &step = a.step();
    if (step.callsModel) {
        // The write boundary's record existing means the run is past it: asking the model now
        // would be the mistake the ledger exists to prevent.
        for (const WorkflowStep &s : run.scenario->steps()) {
            if (!s.writeBoundary)
                continue;
            const bool past = timed(m_ctx.slot(a.thread).engineNs, [&] {
                return m_ctx.store().find(m_ctx.ns(), run.runId + ":" + s.stepId).has_value();
            });
            if (past)
                ++m_ctx.counters().modelCallsAfterBoundary;
        }
        decision = m_ctx.modelDecision(run, a.stepIndex);
    }
    const int callNumber = run.steps[static_cast<std::size_t>(a.stepIndex)].providerCalls++;
    ProviderCall call;
    call.ns = m_ctx.ns();
    call.operationKey = a.key;
    call.key = step.capabilities.acceptsKey ? a.key : std::string();
    call.fencingToken = step.capabilities.acceptsKey ? a.token : 0;
    call.nowMs = m_ctx.clock().nowMs();
    call.fault = m_ctx.providerFault(run, a.stepIndex, callNumber);
    call.rejection = m_ctx.rejectionClass(run, a.stepIndex);
    return m_ctx.provider(step.provider).call(call);
}

void EngineConsumer::finish(const Attempt &a, const ProviderAnswer &answer,
                            const std::string &decision, bool crashAfterRecord)
{
    RunState &run = *a.run;
    const WorkflowStep &step = a.step();
    TimeSlot &slot = m_ctx.slot(a.thread);
    Engine &engine = m_ctx.engine();
    try {
        if (answer.status != ProviderAnswer::Status::Ok) {
            const bool failed = answer.status == ProviderAnswer::Status::Failed;
            const Operation op = timed(slot.engineNs, [&] {
                return engine.fail(m_ctx.ns(), a.key, a.token,
                                   failed ? answer.errorClass : ErrorClass::UnknownOutcome,
                                   answer.detail, failed ? answer.retryAfterMs : std::nullopt);
            });
            afterFailure(a, op);
            return;
        }
        const auto &steps = run.scenario->steps();
        const WorkflowStep *next = a.stepIndex + 1 < static_cast<int>(steps.size())
                                       ? &steps[static_cast<std::size_t>(a.stepIndex) + 1]
                                       : nullptr;
        nlohmann::json result;
        std::string receipt;
        if (step.kind == ToolKind::Read) {
            result = run.scenario->readOutput(step, a.payload, decision);
        } else {
            result = {{"effect_id", answer.effectId}};
            receipt =
                nlohmann::json{{"effect_id", answer.effectId}, {"provider", step.provider}}.dump();
        }
        if (next) {
            // The outbox: the step's result and the next step's message commit together.
            TransitionRequest complete;
            complete.ns = m_ctx.ns();
            complete.key = a.key;
            complete.from = OperationState::Dispatching;
            complete.fencingToken = a.token;
            complete.to = OperationState::Succeeded;
            complete.actor = a.owner;
            complete.detail = "completed";
            complete.result = engine.canonicalise(result.dump(), "result");
            if (!receipt.empty())
                complete.receipt = engine.canonicalise(receipt, "receipt");
            complete.retentionMs = engine.settings().retentionMs;
            const std::string message =
                m_ctx.envelope(run, *next, result, step.agent, m_ctx.workerNowMs(a.worker));
            timed(slot.engineNs, [&] {
                return m_ctx.store().transitionAndSend(complete, m_ctx.queueName(), message, {});
            });
        } else {
            timed(slot.engineNs, [&] {
                return engine.complete(m_ctx.ns(), a.key, a.token, result.dump(), receipt);
            });
        }
    } catch (const Error &e) {
        // Fenced off: the lease moved on while this worker was away. Whoever holds the
        // operation now also holds the message, so this worker leaves both alone.
        if (e.code() != ErrorCode::StaleLease)
            throw;
        ++m_ctx.counters().fencedWrites;
        return;
    }
    if (crashAfterRecord && m_ctx.open(Fault::CrashAfterRecord, run, a.stepIndex)) {
        m_ctx.crash(Fault::CrashAfterRecord, run, a.stepIndex);
        return;
    }
    if (a.stepIndex + 1 == static_cast<int>(run.scenario->steps().size()))
        run.settled = true;
    ack(a.thread, a.message);
}

void EngineConsumer::afterFailure(const Attempt &a, const Operation &op)
{
    switch (op.state) {
    case OperationState::FailedRetryable:
        ++m_ctx.counters().retries;
        redeliverAt(a.thread, a.message, op.nextAttemptAtMs);
        return;
    case OperationState::ConfirmationRequired:
    case OperationState::FailedTerminal:
        if (m_ctx.inOutage(*a.run) && a.run->replans < SandboxContext::MaxReplans) {
            // The planner does not give up: it plans the step again, as a new operation.
            RunState &run = *a.run;
            const std::string again =
                m_ctx.envelope(run, a.step(), a.payload, "planner", m_ctx.workerNowMs(a.worker),
                               "~replan-" + std::to_string(++run.replans));
            timed(m_ctx.slot(a.thread).queueNs,
                  [&] { return m_ctx.queue().send(m_ctx.queueName(), again, {}, 0); });
        } else {
            a.run->settled = true;
        }
        ack(a.thread, a.message);
        return;
    default:
        ack(a.thread, a.message); // unknown_outcome: the reconciler takes it from here
        return;
    }
}

void EngineConsumer::resume(int thread, RunState &run, const ParkedWorker &parked)
{
    const QueueEnvelope envelope =
        QueueEnvelope::fromJson(nlohmann::json::parse(parked.message.message));
    Attempt a;
    a.thread = thread;
    a.run = &run;
    a.stepIndex = run.scenario->stepIndex(envelope.stepId);
    a.message = parked.message;
    a.payload = envelope.payload;
    a.key = envelope.idempotencyKey;
    a.worker = parked.worker;
    a.owner = parked.owner;
    a.token = parked.fencingToken;
    if (parked.afterCall) {
        finish(a, parked.answer, parked.decision, false);
        return;
    }
    // Before acting on a lease it may have lost, the worker proves it still holds it.
    try {
        timed(m_ctx.slot(thread).engineNs,
              [&] { return m_ctx.engine().heartbeat(m_ctx.ns(), a.key, a.token); });
    } catch (const Error &e) {
        if (e.code() != ErrorCode::StaleLease)
            throw;
        ++m_ctx.counters().fencedWrites;
        return;
    }
    std::string decision;
    const ProviderAnswer answer = callProvider(a, decision);
    finish(a, answer, decision, false);
}

void EngineConsumer::ack(int thread, const QueueMessage &message)
{
    // By this delivery only: once its visibility timeout lapsed and another consumer read the
    // message, that consumer owns it and this ack must not delete it.
    try {
        timed(m_ctx.slot(thread).queueNs,
              [&] { m_ctx.queue().ack(m_ctx.queueName(), ReadReceipt::of(message)); });
    } catch (const Error &e) {
        if (e.code() != ErrorCode::StaleLease && e.code() != ErrorCode::NotFound)
            throw;
    }
}

void EngineConsumer::redeliverAt(int thread, const QueueMessage &message,
                                 std::optional<std::int64_t> atMs)
{
    const std::int64_t now = m_ctx.clock().nowMs();
    // Never at once: a message must not come back within the same instant of virtual time.
    const std::int64_t delay =
        std::max<std::int64_t>(m_ctx.timings().minRedeliveryMs, atMs.value_or(now) - now);
    try {
        timed(m_ctx.slot(thread).queueNs,
              [&] { return m_ctx.queue().setVt(m_ctx.queueName(), message.msgId, delay); });
    } catch (const Error &e) {
        if (e.code() != ErrorCode::NotFound)
            throw; // gone: another delivery of it settled the step
    }
}

} // namespace idempo::sandbox
