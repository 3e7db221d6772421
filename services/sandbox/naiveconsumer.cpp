// SPDX-License-Identifier: Apache-2.0
#include "naiveconsumer.h"

#include <thread>

#include "error.h"
#include "queueenvelope.h"

namespace idempo::sandbox {

NaiveConsumer::NaiveConsumer(SandboxContext &context) : m_ctx(context) {}

void NaiveConsumer::deliver(int thread, RunState &run, const QueueMessage &message)
{
    const QueueEnvelope envelope = QueueEnvelope::fromJson(nlohmann::json::parse(message.message));
    const int stepIndex = run.scenario->stepIndex(envelope.stepId);
    if (stepIndex < 0)
        throw Error(ErrorCode::InvalidArgument,
                    "no step '" + envelope.stepId + "' in " + run.scenario->name());
    const int delivery = run.steps[static_cast<std::size_t>(stepIndex)].deliveries++;
    ++m_ctx.counters().deliveries;
    const int worker = m_ctx.virtualWorker(run, envelope.stepId, delivery);
    const std::optional<Fault> fault = m_ctx.workerFault(run, stepIndex, delivery);
    if (stepIndex == 0 && delivery == 0 && m_ctx.fires(Fault::TwoPlanners, run, 0, 0)) {
        // Nothing tells the second planner the run is under way: it starts it again.
        timed(m_ctx.slot(thread).queueNs, [&] {
            return m_ctx.queue().send(m_ctx.queueName(), message.message, {},
                                      m_ctx.timings().twinDelayMs);
        });
    }
    if (fault == Fault::CrashBeforeDispatch) {
        m_ctx.crash(*fault, run, stepIndex);
        return;
    }
    if (fault == Fault::PausedWorker) {
        ParkedWorker p;
        p.run = m_ctx.runIndex(run);
        p.seq = run.parkedSeq++;
        p.wakeAtMs = m_ctx.clock().nowMs() + m_ctx.timings().pauseMs;
        p.message = message;
        p.worker = worker;
        if (m_ctx.inWorkerProcess()) {
            timed(m_ctx.slot(thread).stalledNs, [&] {
                std::this_thread::sleep_for(std::chrono::milliseconds(m_ctx.timings().pauseMs));
            });
            resume(thread, run, p);
        } else {
            m_ctx.park(std::move(p));
        }
        return;
    }
    perform(thread, run, stepIndex, message, envelope.payload, worker, fault);
}

void NaiveConsumer::resume(int thread, RunState &run, const ParkedWorker &parked)
{
    // Nothing fences a naive worker: it wakes up and carries on as if no time had passed.
    const QueueEnvelope envelope =
        QueueEnvelope::fromJson(nlohmann::json::parse(parked.message.message));
    perform(thread, run, run.scenario->stepIndex(envelope.stepId), parked.message, envelope.payload,
            parked.worker, std::nullopt);
}

void NaiveConsumer::perform(int thread, RunState &run, int stepIndex, const QueueMessage &message,
                            const nlohmann::json &payload, int worker, std::optional<Fault> fault)
{
    const WorkflowStep &step = run.scenario->steps()[static_cast<std::size_t>(stepIndex)];
    TimeSlot &slot = m_ctx.slot(thread);
    if (fault == Fault::CrashDuringCall &&
        m_ctx.plan().uniform(run.runId, step.stepId + "#in-flight", 0) < 0.5) {
        m_ctx.crash(*fault, run, stepIndex);
        return;
    }
    const std::string decision =
        step.callsModel ? m_ctx.modelDecision(run, stepIndex) : std::string();
    ProviderCall call;
    call.ns = m_ctx.ns();
    call.operationKey = run.runId + ":" + step.stepId;
    call.nowMs = m_ctx.clock().nowMs();
    call.fault = m_ctx.providerFault(
        run, stepIndex, run.steps[static_cast<std::size_t>(stepIndex)].providerCalls++);
    call.rejection = m_ctx.rejectionClass(run, stepIndex);
    const ProviderAnswer answer = m_ctx.provider(step.provider).call(call);
    if (fault == Fault::CrashDuringCall ||
        (fault == Fault::CrashAfterEffect && answer.status == ProviderAnswer::Status::Ok &&
         m_ctx.open(*fault, run, stepIndex))) {
        m_ctx.crash(*fault, run, stepIndex);
        return;
    }
    switch (answer.status) {
    case ProviderAnswer::Status::NoAnswer:
        ++m_ctx.counters().retries;
        redeliverAfter(thread, message, m_ctx.timings().retryBaseMs);
        return;
    case ProviderAnswer::Status::Failed:
        if (answer.errorClass == ErrorClass::Transient ||
            answer.errorClass == ErrorClass::RateLimited) {
            ++m_ctx.counters().retries;
            redeliverAfter(thread, message,
                           answer.retryAfterMs.value_or(m_ctx.timings().retryBaseMs));
            return;
        }
        run.settled = true;
        break;
    case ProviderAnswer::Status::Ok:
    case ProviderAnswer::Status::Pending: {
        const auto &steps = run.scenario->steps();
        if (stepIndex + 1 < static_cast<int>(steps.size())) {
            const nlohmann::json result = step.kind == ToolKind::Read
                                              ? run.scenario->readOutput(step, payload, decision)
                                              : nlohmann::json{{"effect_id", answer.effectId}};
            const std::string next =
                m_ctx.envelope(run, steps[static_cast<std::size_t>(stepIndex) + 1], result,
                               step.agent, m_ctx.workerNowMs(worker));
            timed(slot.queueNs, [&] { return m_ctx.queue().send(m_ctx.queueName(), next, {}, 0); });
        } else {
            run.settled = true;
        }
        if (fault == Fault::CrashAfterRecord && m_ctx.open(*fault, run, stepIndex)) {
            m_ctx.crash(*fault, run, stepIndex);
            return;
        }
        break;
    }
    }
    timed(slot.queueNs,
          [&] { return m_ctx.queue().deleteMessage(m_ctx.queueName(), message.msgId); });
}

void NaiveConsumer::redeliverAfter(int thread, const QueueMessage &message, std::int64_t delayMs)
{
    try {
        timed(m_ctx.slot(thread).queueNs,
              [&] { return m_ctx.queue().setVt(m_ctx.queueName(), message.msgId, delayMs); });
    } catch (const Error &e) {
        if (e.code() != ErrorCode::NotFound)
            throw; // gone: another delivery of it was acked
    }
}

} // namespace idempo::sandbox
