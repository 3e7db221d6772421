// SPDX-License-Identifier: Apache-2.0
#include "sandboxcontext.h"

#include <algorithm>

#include "driverlease.h"
#include "error.h"
#include "queueenvelope.h"
#include "sandboxjournal.h"

namespace idempo::sandbox {
namespace {

Engine::Settings engineSettings(const SandboxTimings &timings)
{
    Engine::Settings settings;
    settings.leaseMs = timings.leaseMs;
    return settings;
}

/// Backoff without jitter: the jitter's random source would be shared by every thread, and
/// the order threads draw from it would make reports differ between equal seeds.
RetryPolicy steadyPolicy(const SandboxTimings &timings)
{
    RetryPolicy policy;
    policy.jitter = 0.0;
    policy.baseDelayMs = timings.retryBaseMs;
    return policy;
}

constexpr const char *CounterNames[] = {"deliveries",           "crashes",
                                        "fenced_writes",        "retries",
                                        "model_calls",          "model_calls_after_write_boundary",
                                        "leases_revoked",       "reconciled_found",
                                        "reconciled_no_effect", "reconciled_to_confirmation"};

/// The scalar counters in the order of CounterNames.
template <typename C> auto scalars(C &c)
{
    return std::array{&c.deliveries,         &c.crashes,
                      &c.fencedWrites,       &c.retries,
                      &c.modelCalls,         &c.modelCallsAfterBoundary,
                      &c.leasesRevoked,      &c.reconciledFound,
                      &c.reconciledNoEffect, &c.reconciledToConfirmation};
}

} // namespace

nlohmann::json Counters::toJson() const
{
    nlohmann::json j = nlohmann::json::object();
    const auto values = scalars(*this);
    for (std::size_t i = 0; i < values.size(); ++i)
        j[CounterNames[i]] = values[i]->load();
    nlohmann::json outcomes = nlohmann::json::array();
    for (const auto &v : claimOutcomes)
        outcomes.push_back(v.load());
    nlohmann::json fired = nlohmann::json::array();
    for (const auto &v : faults)
        fired.push_back(v.load());
    j["claim_outcomes"] = outcomes;
    j["faults"] = fired;
    return j;
}

void Counters::add(const nlohmann::json &totals)
{
    const auto values = scalars(*this);
    for (std::size_t i = 0; i < values.size(); ++i)
        *values[i] += totals.at(CounterNames[i]).get<std::int64_t>();
    for (std::size_t i = 0; i < claimOutcomes.size(); ++i)
        claimOutcomes[i] += totals.at("claim_outcomes").at(i).get<std::int64_t>();
    for (std::size_t i = 0; i < faults.size(); ++i)
        faults[i] += totals.at("faults").at(i).get<std::int64_t>();
}

SandboxTimings SandboxTimings::realTime()
{
    SandboxTimings t;
    t.leaseMs = 2'000;
    t.visibilityTimeoutMs = 2'000;
    t.pauseMs = 3'000;
    t.reorderDelayMs = 200;
    t.twinDelayMs = 150;
    t.confirmationDelayMs = 1'500;
    t.retryAfterMs = 150;
    t.retryBaseMs = 100;
    t.minRedeliveryMs = 100;
    return t;
}

void SandboxContext::emptyQueue()
{
    emptySandboxQueue(*m_queue, m_queueName);
}

SandboxContext::SandboxContext(std::shared_ptr<LedgerStore> store,
                               std::shared_ptr<MessageQueue> queue,
                               std::shared_ptr<const Clock> clock, FaultPlan plan, std::string ns,
                               int workers, bool naive, SandboxTimings timings,
                               std::string queueName)
    : m_store(std::move(store)), m_queue(std::move(queue)), m_queueName(std::move(queueName)),
      m_clock(std::move(clock)), m_timings(timings),
      m_engine(m_store, engineSettings(m_timings), steadyPolicy(m_timings)),
      m_plan(std::move(plan)), m_ns(std::move(ns)), m_workers(workers), m_naive(naive),
      m_slots(static_cast<std::size_t>(workers) + 1)
{
    for (const Scenario &scenario : Scenario::all())
        for (const WorkflowStep &step : scenario.steps())
            m_providers.emplace(step.provider,
                                std::make_unique<SimulatedProvider>(
                                    step.provider, step.capabilities, step.kind != ToolKind::Read,
                                    m_timings.confirmationDelayMs, m_timings.retryAfterMs));
    for (int w = 0; w < workers; ++w) {
        const double u = m_plan.uniform("worker-clock", std::to_string(w), 0);
        m_skewMs.push_back(m_plan.enabled(Fault::ClockSkew)
                               ? static_cast<std::int64_t>((u * 2.0 - 1.0) *
                                                           static_cast<double>(m_timings.maxSkewMs))
                               : 0);
        if (m_skewMs.back() != 0)
            ++m_counters
                  .faults[static_cast<std::size_t>(Fault::ClockSkew)]; // one per skewed worker
    }
}

void SandboxContext::setWorkerProcess(WorkerProcess process)
{
    // One virtual worker: the process itself, with the clock skew of its index.
    const double u = m_plan.uniform("worker-clock", std::to_string(process.index), 0);
    m_skewMs.assign(1, m_plan.enabled(Fault::ClockSkew)
                           ? static_cast<std::int64_t>((u * 2.0 - 1.0) *
                                                       static_cast<double>(m_timings.maxSkewMs))
                           : 0);
    m_counters.faults[static_cast<std::size_t>(Fault::ClockSkew)] = m_skewMs.front() != 0 ? 1 : 0;
    m_process = std::move(process);
}

void SandboxContext::crash(Fault fault, const RunState &run, int stepIndex)
{
    ++m_counters.crashes;
    if (m_process)
        m_process->crash(fault,
                         run.runId + ":" +
                             run.scenario->steps()[static_cast<std::size_t>(stepIndex)].stepId);
}

std::string SandboxContext::owner(int worker) const
{
    return m_process ? m_process->owner : "w" + std::to_string(worker);
}

RunState &SandboxContext::runFor(const std::string &runId)
{
    if (RunState *known = run(runId))
        return *known;
    for (const Scenario &scenario : Scenario::all()) {
        if (runId.size() > scenario.runPrefix().size() &&
            runId.compare(0, scenario.runPrefix().size(), scenario.runPrefix()) == 0 &&
            runId[scenario.runPrefix().size()] == '-') {
            addRun(scenario, runId);
            return m_runs.back();
        }
    }
    throw Error(ErrorCode::InvalidArgument, "run id '" + runId + "' names no sandbox scenario");
}

bool SandboxContext::deliverable(RunState &run, const QueueMessage &message, std::int64_t &queueNs)
{
    const QueueEnvelope envelope = QueueEnvelope::fromJson(nlohmann::json::parse(message.message));
    const int stepIndex = run.scenario->stepIndex(envelope.stepId);
    if (stepIndex < 0)
        throw Error(ErrorCode::InvalidArgument,
                    "no step '" + envelope.stepId + "' in " + run.scenario->name());
    const int occasion = run.steps[static_cast<std::size_t>(stepIndex)].scheduled++;
    if (fires(Fault::DuplicateDelivery, run, stepIndex, occasion))
        timed(queueNs, [&] { return m_queue->send(m_queueName, message.message, {}, 0); });
    if (fires(Fault::ReorderedDelivery, run, stepIndex, occasion)) {
        timed(queueNs,
              [&] { return m_queue->setVt(m_queueName, message.msgId, m_timings.reorderDelayMs); });
        return false;
    }
    return true;
}

RunState *SandboxContext::run(const std::string &runId)
{
    const auto found = m_runIndex.find(runId);
    return found == m_runIndex.end() ? nullptr : &m_runs[found->second];
}

void SandboxContext::addRun(const Scenario &scenario, std::string runId)
{
    m_runIndex.emplace(runId, m_runs.size());
    RunState r;
    r.runId = std::move(runId);
    r.scenario = &scenario;
    r.steps.resize(scenario.steps().size());
    m_runs.push_back(std::move(r));
}

int SandboxContext::virtualWorker(const RunState &run, const std::string &stepId,
                                  int delivery) const
{
    if (m_process)
        return 0;
    const double u = m_plan.uniform(run.runId, stepId + "#worker", delivery);
    return std::min(m_workers - 1, static_cast<int>(u * m_workers));
}

std::int64_t SandboxContext::workerNowMs(int worker) const
{
    return m_clock->nowMs() + m_skewMs[static_cast<std::size_t>(worker)];
}

bool SandboxContext::fires(Fault fault, RunState &run, int stepIndex, std::int64_t occasion)
{
    return drawn(fault, run, stepIndex, occasion) && open(fault, run, stepIndex);
}

bool SandboxContext::drawn(Fault fault, const RunState &run, int stepIndex,
                           std::int64_t occasion) const
{
    const StepState &step = run.steps[static_cast<std::size_t>(stepIndex)];
    if (step.fired & (1u << static_cast<unsigned>(fault)))
        return false;
    const std::string &stepId = run.scenario->steps()[static_cast<std::size_t>(stepIndex)].stepId;
    return m_plan.draws(fault, run.runId, stepId, occasion);
}

bool SandboxContext::conditional(Fault fault)
{
    return fault == Fault::CrashAfterEffect || fault == Fault::CrashAfterRecord;
}

bool SandboxContext::open(Fault fault, RunState &run, int stepIndex)
{
    StepState &step = run.steps[static_cast<std::size_t>(stepIndex)];
    const std::uint32_t bit = 1u << static_cast<unsigned>(fault);
    if (step.fired & bit)
        return false;
    const std::string &stepId = run.scenario->steps()[static_cast<std::size_t>(stepIndex)].stepId;
    step.fired |= bit;
    // A restarted process forgets what its predecessor opened: the journal remembers.
    if (m_process && m_process->journal &&
        !m_process->journal->openWindow(m_ns, run.runId + ":" + stepId, FaultPlan::name(fault)))
        return false;
    ++m_counters.faults[static_cast<std::size_t>(fault)];
    return true;
}

std::string SandboxContext::envelope(const RunState &run, const WorkflowStep &step,
                                     const nlohmann::json &payload, const std::string &sourceAgent,
                                     std::int64_t producedAtMs, const std::string &keySuffix) const
{
    QueueEnvelope e;
    e.runId = run.runId;
    e.stepId = step.stepId;
    e.sourceAgent = sourceAgent;
    e.targetAgent = step.agent;
    e.payload = payload;
    e.producedAtMs = std::max<std::int64_t>(0, producedAtMs);
    e.idempotencyKey = run.runId + ":" + step.stepId + keySuffix;
    return e.toJson().dump();
}

std::optional<Fault> SandboxContext::workerFault(RunState &run, int stepIndex, int delivery)
{
    // One window per delivery at most: a worker cannot crash twice in one attempt.
    for (const Fault f : {Fault::CrashBeforeDispatch, Fault::CrashDuringCall,
                          Fault::CrashAfterEffect, Fault::CrashAfterRecord, Fault::PausedWorker})
        if (conditional(f) ? drawn(f, run, stepIndex, delivery)
                           : fires(f, run, stepIndex, delivery))
            return f;
    return std::nullopt;
}

bool SandboxContext::inOutage(RunState &run)
{
    if (!m_plan.draws(Fault::ProviderOutage, run.runId, "outage", 0))
        return false;
    open(Fault::ProviderOutage, run, 0); // counted once per run
    return true;
}

std::optional<Fault> SandboxContext::providerFault(RunState &run, int stepIndex, int call)
{
    if (inOutage(run))
        return Fault::Provider5xx;
    const WorkflowStep &step = run.scenario->steps()[static_cast<std::size_t>(stepIndex)];
    for (const Fault f : {Fault::Provider5xx, Fault::Provider429, Fault::ProviderTimeout,
                          Fault::ProviderRejection, Fault::DelayedConfirmation}) {
        if (f == Fault::DelayedConfirmation && step.kind == ToolKind::Read)
            continue;
        if (fires(f, run, stepIndex, call))
            return f;
    }
    return std::nullopt;
}

ErrorClass SandboxContext::rejectionClass(const RunState &run, int stepIndex) const
{
    const std::string &stepId = run.scenario->steps()[static_cast<std::size_t>(stepIndex)].stepId;
    const double u = m_plan.uniform(run.runId, stepId + "#rejection", 0);
    return u < 0.5 ? ErrorClass::Validation
                   : (u < 0.75 ? ErrorClass::Auth : ErrorClass::PolicyDenied);
}

std::string SandboxContext::modelDecision(RunState &run, int stepIndex)
{
    StepState &step = run.steps[static_cast<std::size_t>(stepIndex)];
    const std::string &stepId = run.scenario->steps()[static_cast<std::size_t>(stepIndex)].stepId;
    // A fresh draw per call: like an LLM at temperature > 0, asking again may change the answer.
    const double u = m_plan.uniform(run.runId, stepId + "#model", step.modelCalls++);
    ++m_counters.modelCalls;
    return u < ReviewRate ? "review" : "approve";
}

void SandboxContext::park(ParkedWorker parked)
{
    std::lock_guard lock(m_parkedMutex);
    m_parked.push_back(std::move(parked));
}

std::vector<ParkedWorker> SandboxContext::takeDueParked(std::int64_t nowMs)
{
    std::lock_guard lock(m_parkedMutex);
    std::vector<ParkedWorker> due;
    const auto firstLater =
        std::stable_partition(m_parked.begin(), m_parked.end(),
                              [&](const ParkedWorker &p) { return p.wakeAtMs <= nowMs; });
    std::move(m_parked.begin(), firstLater, std::back_inserter(due));
    m_parked.erase(m_parked.begin(), firstLater);
    std::sort(due.begin(), due.end(), [](const ParkedWorker &a, const ParkedWorker &b) {
        return std::tie(a.run, a.seq) < std::tie(b.run, b.seq);
    });
    return due;
}

bool SandboxContext::hasParked()
{
    std::lock_guard lock(m_parkedMutex);
    return !m_parked.empty();
}

} // namespace idempo::sandbox
