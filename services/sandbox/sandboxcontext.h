// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock.h"
#include "engine.h"
#include "faultplan.h"
#include "messagequeue.h"
#include "scenario.h"
#include "simulatedprovider.h"

namespace idempo::sandbox {

class SandboxJournal;

/// Per step of one run: what happened to it so far. Touched only by the thread that holds the
/// run in the current round, or by the scheduler between rounds.
struct StepState
{
    int deliveries = 0; ///< deliveries to a consumer
    int scheduled = 0;  ///< times the scheduler saw the step's messages (delivery faults)
    int providerCalls = 0;
    int modelCalls = 0;
    std::uint32_t fired = 0; ///< bit per Fault: each window opens at most once per operation
};

/// One run of a scenario.
struct RunState
{
    std::string runId;
    const Scenario *scenario = nullptr;
    std::vector<StepState> steps;
    bool settled = false; ///< for the progress bar only
    int parkedSeq = 0;
    int replans = 0; ///< steps the planner planned again under a new key (provider-outage)
};

/// A worker that stalled (paused-worker fault) with what it held, to resume at `wakeAtMs`.
struct ParkedWorker
{
    std::size_t run = 0;
    int seq = 0; ///< order among the run's parked workers
    std::int64_t wakeAtMs = 0;
    QueueMessage message;
    int worker = 0;
    std::string owner;
    std::int64_t fencingToken = 0;
    bool afterCall = false; ///< stalled after the provider answered (else before calling)
    ProviderAnswer answer;
    std::string decision;
};

/// Totals a report shows. Order-independent sums, so thread timing cannot change them.
struct Counters
{
    std::atomic<std::int64_t> deliveries{0};
    std::atomic<std::int64_t> crashes{0};
    std::atomic<std::int64_t> fencedWrites{0};
    std::atomic<std::int64_t> retries{0};
    std::atomic<std::int64_t> modelCalls{0};
    std::atomic<std::int64_t> modelCallsAfterBoundary{0};
    std::atomic<std::int64_t> leasesRevoked{0};
    std::atomic<std::int64_t> reconciledFound{0};
    std::atomic<std::int64_t> reconciledNoEffect{0};
    std::atomic<std::int64_t> reconciledToConfirmation{0};
    std::array<std::atomic<std::int64_t>, 7> claimOutcomes{};
    std::array<std::atomic<std::int64_t>, FaultCount> faults{};

    /// {"deliveries", "crashes", "fenced_writes", "retries", "model_calls",
    ///  "model_calls_after_write_boundary", "leases_revoked", "reconciled_found",
    ///  "reconciled_no_effect", "reconciled_to_confirmation", "claim_outcomes": [6],
    ///  "faults": [FaultCount]}: what a worker process reports to the driver.
    nlohmann::json toJson() const;
    /// Adds a toJson() object (a worker process's totals). Throws nlohmann::json::exception
    /// when a field is missing or not a number.
    void add(const nlohmann::json &totals);
};

/// Time one thread spent, nanoseconds; each slot is written by one thread only.
struct alignas(64) TimeSlot
{
    std::int64_t engineNs = 0; ///< inside the engine and the ledger store
    std::int64_t queueNs = 0;  ///< inside the message queue
    std::int64_t busyNs = 0;   ///< processing work at all
    std::int64_t stalledNs =
        0; ///< a worker process stalled on purpose (paused-worker), within busyNs
};

/// Timings (milliseconds) the sandbox's workers, providers and queue use: of virtual time in
/// thread mode, of real time in process mode (realTime()).
struct SandboxTimings
{
    std::int64_t leaseMs = 30'000;
    std::int64_t visibilityTimeoutMs = 30'000;
    std::int64_t pauseMs = 45'000; ///< a paused worker stalls past lease and visibility timeout
    std::int64_t reorderDelayMs = 3'000; ///< how long a held-back message waits
    std::int64_t twinDelayMs = 2'000;    ///< the second planner retries after this
    std::int64_t maxSkewMs = 300'000;    ///< worker clock skew is within ±this
    std::int64_t confirmationDelayMs = SimulatedProvider::ConfirmationDelayMs;
    std::int64_t retryAfterMs = SimulatedProvider::RetryAfterMs; ///< a 429's Retry-After
    std::int64_t retryBaseMs = 1'000;     ///< the first backoff (then ×4, ×16)
    std::int64_t minRedeliveryMs = 1'000; ///< the shortest wait before a message comes back

    /// The process mode's timings, on the real clock: the same proportions, about fifteen
    /// times shorter, so that takeovers after a SIGKILL happen within seconds.
    static SandboxTimings realTime();
};

/// How a worker process plays the worker-side windows (process mode). Absent in thread mode.
struct WorkerProcess
{
    std::string owner; ///< this process's lease owner
    int index = 0;     ///< picks its clock skew
    SandboxJournal *journal =
        nullptr; ///< records opened windows, so each opens once across processes
    /// Announces a crash window and does not return: the driver kills the process there.
    std::function<void(Fault fault, const std::string &operationKey)> crash;
};

/// What the scheduler, the consumers and the reconciler share during one sandbox run.
class SandboxContext final
{
public:
    /// `clock` is the one `store` judges time on (or, for PostgreSQL, the same host's clock).
    SandboxContext(std::shared_ptr<LedgerStore> store, std::shared_ptr<MessageQueue> queue,
                   std::shared_ptr<const Clock> clock, FaultPlan plan, std::string ns, int workers,
                   bool naive, SandboxTimings timings = {},
                   std::string queueName = DefaultQueueName);

    /// The queue the sandbox's envelopes travel on unless another is named.
    static constexpr const char *DefaultQueueName = "sandbox";
    const std::string &queueName() const { return m_queueName; }

    LedgerStore &store() { return *m_store; }
    Engine &engine() { return m_engine; }
    MessageQueue &queue() { return *m_queue; }
    /// Deletes every message left on the sandbox queue, so that a later run starts on an empty
    /// one after a cancelled run. Throws what MessageQueue throws.
    void emptyQueue();
    const Clock &clock() const { return *m_clock; }

    /// Makes this context a worker process's (process mode).
    void setWorkerProcess(WorkerProcess process);
    bool inWorkerProcess() const { return m_process.has_value(); }
    /// The worker dies at `fault`: counted; in a worker process, announced, and never returns.
    void crash(Fault fault, const RunState &run, int stepIndex);
    /// The lease owner name of virtual worker `worker` (this process's owner in a worker process).
    std::string owner(int worker) const;
    /// The run `runId` names, added on first sight from its run id's scenario prefix (a worker
    /// process learns runs from the envelopes). Throws Error(InvalidArgument) for an unknown
    /// prefix.
    RunState &runFor(const std::string &runId);
    /// The delivery faults (duplicate, reordered) for a message just read; false when it is held
    /// back. Queue time goes to `queueNs`.
    bool deliverable(RunState &run, const QueueMessage &message, std::int64_t &queueNs);
    const FaultPlan &plan() const { return m_plan; }
    const std::string &ns() const { return m_ns; }
    bool naive() const { return m_naive; }
    int workers() const { return m_workers; }
    const SandboxTimings &timings() const { return m_timings; }
    Counters &counters() { return m_counters; }

    SimulatedProvider &provider(const std::string &name) { return *m_providers.at(name); }
    std::map<std::string, std::unique_ptr<SimulatedProvider>> &providers() { return m_providers; }

    std::vector<RunState> &runs() { return m_runs; }
    /// The run `runId` names, or null.
    RunState *run(const std::string &runId);
    std::size_t runIndex(const RunState &run) const
    {
        return static_cast<std::size_t>(&run - m_runs.data());
    }
    void addRun(const Scenario &scenario, std::string runId);

    /// The lease owner of a delivery: one of the virtual workers w0..w(N-1), chosen from the seed
    /// so that it does not depend on which thread ran the delivery.
    int virtualWorker(const RunState &run, const std::string &stepId, int delivery) const;
    /// Virtual worker `worker`'s own clock: the sandbox clock plus its skew (clock-skew fault).
    std::int64_t workerNowMs(int worker) const;

    /// Opens the window `fault` for this occasion of (run, step) if the plan draws it and it has
    /// not opened there before; counts it. Same as drawn() followed by open().
    bool fires(Fault fault, RunState &run, int stepIndex, std::int64_t occasion);
    /// True when the plan draws `fault` at this occasion of (run, step) and its window has not
    /// opened there yet (in this process); records nothing.
    bool drawn(Fault fault, const RunState &run, int stepIndex, std::int64_t occasion) const;
    /// Opens the window `fault` of (run, step): marks it, records it in the journal (process
    /// mode) and counts it in faults_injected. False when it had opened there before (another
    /// process), and then nothing is counted.
    bool open(Fault fault, RunState &run, int stepIndex);
    /// True for the crash points that exist only when the provider call went a certain way:
    /// crash-after-effect (the call succeeded) and crash-after-record (the result was recorded).
    static bool conditional(Fault fault);

    /// The worker-side window (a crash point or a pause) drawn for this delivery, if any. Every
    /// window is opened (counted) here except a conditional() one: the consumer opens that with
    /// open() only where its condition holds, so that each counted crash window is a crash.
    std::optional<Fault> workerFault(RunState &run, int stepIndex, int delivery);
    /// The provider fault scripted for this call of the step, if any.
    std::optional<Fault> providerFault(RunState &run, int stepIndex, int call);
    /// True when the provider-outage fault holds `run` (every call answers 503 and the planner
    /// re-plans); counts the window once per run.
    bool inOutage(RunState &run);
    /// How often the planner re-plans one step of a run in an outage before it gives up.
    static constexpr int MaxReplans = 10;
    /// The class a scripted rejection answers with for this step (validation, auth or policy).
    ErrorClass rejectionClass(const RunState &run, int stepIndex) const;

    /// Share of compliance decisions that flag the client for review.
    static constexpr double ReviewRate = 0.15;
    /// Asks the simulated model for a decision ("approve" or "review"): a new draw each call.
    std::string modelDecision(RunState &run, int stepIndex);

    /// The envelope of `step` in `run` with `payload`, stamped on the sender's own clock; its
    /// operation key is `run:step` followed by `keySuffix` (a re-planned attempt's own key).
    std::string envelope(const RunState &run, const WorkflowStep &step,
                         const nlohmann::json &payload, const std::string &sourceAgent,
                         std::int64_t producedAtMs, const std::string &keySuffix = {}) const;

    void park(ParkedWorker parked);
    /// The parked workers due at `nowMs`, in run order, removed from the list.
    std::vector<ParkedWorker> takeDueParked(std::int64_t nowMs);
    bool hasParked();

    TimeSlot &slot(int index) { return m_slots[static_cast<std::size_t>(index)]; }
    const std::vector<TimeSlot> &slots() const { return m_slots; }

private:
    std::shared_ptr<LedgerStore> m_store;
    std::shared_ptr<MessageQueue> m_queue;
    std::string m_queueName;
    std::shared_ptr<const Clock> m_clock;
    SandboxTimings m_timings;
    Engine m_engine;
    FaultPlan m_plan;
    std::string m_ns;
    int m_workers;
    bool m_naive;
    std::optional<WorkerProcess> m_process;
    Counters m_counters;
    std::map<std::string, std::unique_ptr<SimulatedProvider>> m_providers;
    std::vector<RunState> m_runs;
    std::unordered_map<std::string, std::size_t> m_runIndex;
    std::vector<std::int64_t> m_skewMs;
    std::mutex m_parkedMutex;
    std::vector<ParkedWorker> m_parked;
    std::vector<TimeSlot> m_slots; ///< one per pool thread, and the scheduler's last
};

/// Runs `f` and adds the time it took to `ns`.
template <typename F> decltype(auto) timed(std::int64_t &ns, F &&f)
{
    const auto start = std::chrono::steady_clock::now();
    struct Add
    {
        std::int64_t &ns;
        std::chrono::steady_clock::time_point start;
        ~Add()
        {
            ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
        }
    } add{ns, start};
    return f();
}

} // namespace idempo::sandbox
