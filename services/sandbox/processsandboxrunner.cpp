// SPDX-License-Identifier: Apache-2.0
#include "processsandboxrunner.h"

#include <chrono>
#include <list>
#include <thread>
#include <utility>

#include <signal.h>
#include <spdlog/spdlog.h>

#include <QEventLoop>
#include <QProcess>
#include <QTimer>

#include "driverlease.h"
#include "error.h"
#include "reconciler.h"
#include "sandboxjournal.h"
#include "sandboxreport.h"
#include "sandboxsetup.h"
#include "workerlaunch.h"

namespace idempo::sandbox {
namespace {

/// The exit status of `idempo` when the ledger is unavailable (cli.h ExitUnavailable).
constexpr int kWorkerLostLedger = 69;

/// Runs recorded and started per turn of the driver's event loop.
constexpr std::size_t StartBatch = 200;

/// One worker process and the last status line it printed (cumulative for its lifetime).
struct Worker
{
    int slot = 0;
    QProcess *process = nullptr;
    QByteArray pending; ///< output after the last complete line
    nlohmann::json last;
    bool killed = false;
};

/// How the run's workers fared, for the report and for giving up on them.
struct WorkerTally
{
    std::int64_t kills = 0;             ///< SIGKILLs sent at announced crash points
    std::int64_t restarts = 0;          ///< replacement workers started
    std::int64_t unexpectedExits = 0;   ///< workers that ended on their own
    std::int64_t unconfirmedLosses = 0; ///< exits 69 the driver has not yet seen an outage behind
};

/// What the workers' last status lines add up to, beside their counters (SandboxContext).
struct WorkerSums
{
    std::int64_t deduplicated = 0;
    SandboxTiming timing;
};

/// Why the run failed, once it has.
struct Failure
{
    std::string what;
    ErrorCode code = ErrorCode::Internal;

    bool happened() const { return !what.empty(); }
};

/// How the run ends: whether the workers are being stopped, and why.
struct RunEnd
{
    bool stopping = false;
    bool cancelled = false;
    bool timedOut = false;
    Failure failure;
};

/// The driver's view of the ledger: the outage it waits out, if any, and what it says of it.
struct LedgerWatch
{
    std::string ledger; ///< the store's describe()
    ReconnectPolicy policy;
    ReconnectBackoff outage{policy};
    std::int64_t outageEndedAtMs = -policy.deadlineMs;

    void sayLost(const std::string &reason) const
    {
        spdlog::warn("sandbox: lost the ledger {} ({}); reconnecting for up to {} s", ledger,
                     reason, policy.deadlineMs / 1000.0);
    }
    void sayBack(std::int64_t afterMs) const
    {
        spdlog::warn("sandbox: the ledger {} answers again after {} s; carrying on", ledger,
                     afterMs / 1000.0);
    }
    /// Calls `attempt` until the ledger lets it through (retryThroughOutage()), saying so.
    void retry(const std::function<void()> &attempt) const
    {
        retryThroughOutage(
            policy, ledger, attempt, [this](const std::string &reason) { sayLost(reason); },
            [this](std::int64_t afterMs) { sayBack(afterMs); });
    }
};

/// What the driver works on, prepared by ProcessSandboxRunner::run().
struct DriverSetup
{
    SandboxContext &ctx;
    SandboxJournal &journal;
    DriverLease &lease;
    const std::vector<RunRecord> &records; ///< the runs of `ctx`, in order
    const SandboxOptions &options;
    const ProcessRunOptions &process;
    std::chrono::steady_clock::time_point wallStart;
};

/// One process-mode run on the driver's event loop: the worker processes (each killed at the
/// crash point it announces and replaced), a sender that records and starts the runs a batch
/// per turn, and a check every checkEveryMs that reconciles and decides when the run is over.
class ProcessDriver final
{
public:
    explicit ProcessDriver(DriverSetup setup);

    /// Starts the workers and the runs and returns once the last worker ended. Throws
    /// Error("sandbox process run failed: …") when the run failed.
    void run();
    bool cancelled() const { return m_end.cancelled; }
    /// After a stop, with every worker ended: lets the reconciler settle what it can, empties
    /// the queue and withdraws the runs that did not settle; returns how many it withdrew.
    std::int64_t settleAfterStop();
    /// The report (ProcessSandboxRunner::run()).
    nlohmann::json report(std::int64_t withdrawn);

private:
    bool cancelRequested();
    void startWorker(int slot);
    WorkerOptions workerOptions(int slot, const QString &owner) const;
    void readStatus(Worker &w);
    void workerEnded(Worker &w);
    void addStatus(const Worker &w);
    void countExit(const Worker &w, bool lostLedger);
    void giveUpOnEndingWorkers();
    void workerFailedToStart(const QString &owner, QProcess::ProcessError error);
    void sendNextBatch();
    void sendBatch();
    void check();
    bool checkGoesOn();
    bool waitsForLedger(const Error &e);
    void reportProgress(std::int64_t queued);
    void stopWorkers();
    void killLeftovers();

    SandboxContext &m_ctx;
    SandboxJournal &m_journal;
    DriverLease &m_lease;
    const std::vector<RunRecord> &m_records;
    const SandboxOptions &m_o;
    const ProcessRunOptions &m_process;
    const std::chrono::steady_clock::time_point m_wallStart;
    LedgerWatch m_watch;
    Reconciler m_reconciler;
    std::list<Worker> m_workers;
    int m_generation = 0;
    std::vector<int> m_waitingSlots; ///< workers that could not reach the ledger, restarted
                                     ///< once it answers
    WorkerTally m_tally;
    WorkerSums m_sums;
    RunEnd m_end;
    std::size_t m_startedRuns = 0;
    int m_quietChecks = 0;
    std::int64_t m_sendNs = 0; ///< the driver sending the runs' first envelopes
    std::int64_t m_busyNs = 0; ///< the driver's reconciler passes and queue checks
    QEventLoop m_loop;
    QTimer m_sender;
    QTimer m_tick;
};

ProcessDriver::ProcessDriver(DriverSetup setup)
    : m_ctx(setup.ctx), m_journal(setup.journal), m_lease(setup.lease), m_records(setup.records),
      m_o(setup.options), m_process(setup.process),
      m_wallStart(setup.wallStart), m_watch{setup.ctx.store().describe(), setup.process.reconnect},
      m_reconciler(setup.ctx)
{
}

void ProcessDriver::run()
{
    for (int slot = 0; slot < m_o.workers; ++slot)
        startWorker(slot);
    // Workers start on the first messages while the rest are still being sent. The runs are
    // recorded and started a batch per turn of the event loop, so that crash announcements are
    // answered meanwhile and a stop starts nothing more: it waits for the work in hand only.
    // Recording a batch again after a lost connection is harmless (addRuns skips recorded
    // runs); a first envelope sent twice is a duplicate delivery, which the claim answers.
    QObject::connect(&m_sender, &QTimer::timeout, &m_loop, [this] { sendNextBatch(); });
    m_sender.start(0);
    QObject::connect(&m_tick, &QTimer::timeout, &m_loop, [this] { check(); });
    m_tick.start(static_cast<int>(m_process.checkEveryMs));
    m_loop.exec();
    m_tick.stop();
    m_sender.stop();
    killLeftovers();
    if (m_end.failure.happened())
        throw Error(m_end.failure.code, "sandbox process run failed: " + m_end.failure.what);
}

bool ProcessDriver::cancelRequested()
{
    if (!m_end.cancelled && m_o.cancelled && m_o.cancelled())
        m_end.cancelled = true;
    return m_end.cancelled;
}

void ProcessDriver::startWorker(int slot)
{
    Worker &w = m_workers.emplace_back();
    w.slot = slot;
    w.process = newWorkerProcess(m_process.ledgerUrl);
    const QString owner = QStringLiteral("p%1.%2").arg(slot).arg(++m_generation);
    QObject::connect(w.process, &QProcess::readyReadStandardOutput, &m_loop,
                     [this, &w] { readStatus(w); });
    QObject::connect(w.process, &QProcess::finished, &m_loop, [this, &w] { workerEnded(w); });
    QObject::connect(
        w.process, &QProcess::errorOccurred, &m_loop,
        [this, owner](QProcess::ProcessError error) { workerFailedToStart(owner, error); });
    w.process->start(m_process.program, workerArguments(workerOptions(slot, owner)));
}

/// The options of the worker in `slot`, with lease owner `owner`.
WorkerOptions ProcessDriver::workerOptions(int slot, const QString &owner) const
{
    WorkerOptions options;
    options.queue = m_ctx.queueName();
    options.ns = m_o.ns;
    options.owner = owner.toStdString();
    options.index = slot;
    options.faults = m_o.faults;
    options.naive = m_o.naive;
    options.timings = m_process.timings;
    options.reconnect = m_watch.policy;
    return options;
}

/// Keeps the worker's newest status line; a "crash" announcement gets the SIGKILL.
void ProcessDriver::readStatus(Worker &w)
{
    w.pending += w.process->readAllStandardOutput();
    for (qsizetype end = w.pending.indexOf('\n'); end >= 0; end = w.pending.indexOf('\n')) {
        const QByteArray line = w.pending.left(end);
        w.pending.remove(0, end + 1);
        nlohmann::json status = nlohmann::json::parse(line.toStdString(), nullptr, false);
        if (!status.is_object() || !status.contains("event"))
            continue;
        w.last = status;
        if (status.at("event") == "crash" && !w.killed && w.process->processId() > 0) {
            // The real thing: no signal handler, no flush, no ack.
            ::kill(static_cast<pid_t>(w.process->processId()), SIGKILL);
            w.killed = true;
            ++m_tally.kills;
        }
    }
}

/// A worker ended: its totals are added, and it is replaced, kept waiting for the ledger, or,
/// when the run is stopping, the loop ends with the last one.
void ProcessDriver::workerEnded(Worker &w)
{
    readStatus(w);
    addStatus(w);
    // A stop signal sent to the whole process group (Ctrl-C) reaches the workers too: their
    // clean exit is then part of the stop, not a reason to replace them.
    if (cancelRequested() && !m_end.stopping) {
        m_end.stopping = true;
        for (Worker &other : m_workers)
            if (&other != &w)
                other.process->terminate();
    }
    const bool lostLedger = w.process->exitStatus() == QProcess::NormalExit &&
                            w.process->exitCode() == kWorkerLostLedger;
    countExit(w, lostLedger);
    const int slot = w.slot;
    QObject::disconnect(w.process, nullptr, &m_loop, nullptr);
    w.process->deleteLater();
    m_workers.remove_if([&](const Worker &other) { return &other == &w; });
    const bool goesOn = !m_end.stopping && !m_end.failure.happened();
    if (goesOn && lostLedger) {
        m_waitingSlots.push_back(slot);
    } else if (goesOn) {
        ++m_tally.restarts;
        startWorker(slot);
    } else if (m_workers.empty()) {
        m_loop.quit();
    }
}

/// Adds the counters and times of the worker's last status line (cumulative) to the run's.
void ProcessDriver::addStatus(const Worker &w)
{
    try {
        if (!w.last.is_object())
            return;
        m_ctx.counters().add(w.last.at("counters"));
        m_sums.deduplicated += w.last.at("provider_dedupe").get<std::int64_t>();
        SandboxTiming &timing = m_sums.timing;
        timing.engineNs += w.last.at("engine_ns").get<std::int64_t>();
        timing.queueNs += w.last.at("queue_ns").get<std::int64_t>();
        // A stall is the fault's deliberate wait, not work: it stays out of the engine's share.
        const std::int64_t stalled = w.last.at("stalled_ns").get<std::int64_t>();
        timing.busyNs += w.last.at("busy_ns").get<std::int64_t>() - stalled;
        timing.stalledNs += stalled;
    } catch (const nlohmann::json::exception &e) {
        m_end.failure.what =
            "a worker reported an unreadable status line (" + std::string(e.what()) + ")";
    }
}

/// Counts an exit nobody asked for. A worker that could not reach the ledger (exit 69) is
/// replaced once the driver's next check finds the ledger answering, never at once. A worker
/// often sees an outage before the driver does, so its exit is judged by that check:
/// unexpected only if the driver reaches the ledger the worker could not.
void ProcessDriver::countExit(const Worker &w, bool lostLedger)
{
    if (lostLedger && !m_watch.outage.lost() &&
        steadyNowMs() - m_watch.outageEndedAtMs >= m_watch.policy.deadlineMs)
        ++m_tally.unconfirmedLosses;
    if (!w.killed && !m_end.stopping && !lostLedger) {
        ++m_tally.unexpectedExits;
        spdlog::warn("sandbox worker {} ended on its own with status {}", w.slot,
                     w.process->exitCode());
        giveUpOnEndingWorkers();
    }
}

/// A worker that cannot work (an unreachable ledger, a broken binary) would be replaced
/// forever: give up and say so.
void ProcessDriver::giveUpOnEndingWorkers()
{
    if (m_tally.unexpectedExits > 3 * static_cast<std::int64_t>(m_o.workers))
        m_end.failure.what = "workers keep ending on their own (see their messages above)";
}

void ProcessDriver::workerFailedToStart(const QString &owner, QProcess::ProcessError error)
{
    if (error != QProcess::FailedToStart)
        return;
    m_end.failure.what =
        "cannot start worker " + owner.toStdString() + " (" + m_process.program.toStdString() + ")";
    m_end.stopping = true;
    m_loop.quit();
}

/// One turn of the sender: the next batch of runs, unless all are started or the run stops.
void ProcessDriver::sendNextBatch()
{
    if (m_end.stopping || cancelRequested() || m_startedRuns == m_records.size()) {
        m_sender.stop();
        return;
    }
    const auto sendStart = std::chrono::steady_clock::now();
    try {
        sendBatch();
    } catch (const Error &e) {
        m_end.failure.what = e.what();
        m_end.failure.code = e.code();
        m_sender.stop();
    } catch (const std::exception &e) {
        m_end.failure.what = e.what();
        m_sender.stop();
    }
    m_sendNs += nanosSince(sendStart);
}

/// Records the next StartBatch runs and sends each one's first envelope, through outages.
void ProcessDriver::sendBatch()
{
    const std::size_t end = std::min(m_records.size(), m_startedRuns + StartBatch);
    const std::vector<RunRecord> batch(m_records.begin() +
                                           static_cast<std::ptrdiff_t>(m_startedRuns),
                                       m_records.begin() + static_cast<std::ptrdiff_t>(end));
    m_watch.retry([&] {
        m_lease.renew();
        m_journal.addRuns(batch);
    });
    for (; m_startedRuns < end; ++m_startedRuns) {
        const std::string message = firstEnvelope(m_ctx, m_ctx.runs()[m_startedRuns]);
        m_watch.retry([&] { m_ctx.queue().send(m_ctx.queueName(), message, {}, 0); });
    }
}

/// Every checkEveryMs: a reconciler pass while the run goes on; when it is over (quiet, timed
/// out, failed or cancelled) the workers are stopped.
void ProcessDriver::check()
{
    if (m_end.stopping)
        return;
    if (m_watch.outage.lost() && !m_watch.outage.due(steadyNowMs()) && !cancelRequested())
        return;
    try {
        if (checkGoesOn())
            return;
    } catch (const Error &e) {
        if (waitsForLedger(e))
            return;
    } catch (const std::exception &e) {
        m_end.failure.what = e.what();
    }
    stopWorkers();
}

/// One reconciler pass and a look at the queue; true while the run goes on. The run is over
/// once every run started and two checks in a row found the queue empty and the reconciler with
/// nothing to do or wait for; or when it timed out, failed or was cancelled.
bool ProcessDriver::checkGoesOn()
{
    const auto passStart = std::chrono::steady_clock::now();
    m_lease.renew();
    const Reconciler::Pass pass = m_o.naive ? Reconciler::Pass{} : m_reconciler.run();
    const std::int64_t queued = m_ctx.queue().metrics(m_ctx.queueName()).length;
    m_busyNs += nanosSince(passStart);
    if (m_watch.outage.lost()) {
        m_watch.sayBack(m_watch.outage.recovered(steadyNowMs()));
        m_watch.outageEndedAtMs = steadyNowMs();
    }
    if (m_tally.unconfirmedLosses > 0) {
        spdlog::warn(
            "sandbox: {} worker(s) could not reach the ledger {}, which answers the driver",
            m_tally.unconfirmedLosses, m_watch.ledger);
        m_tally.unexpectedExits += std::exchange(m_tally.unconfirmedLosses, 0);
        giveUpOnEndingWorkers();
    }
    for (const int slot : std::exchange(m_waitingSlots, {})) {
        ++m_tally.restarts;
        startWorker(slot);
    }
    const bool allStarted = m_startedRuns == m_records.size();
    m_quietChecks =
        allStarted && queued == 0 && pass.actions == 0 && pass.waiting == 0 ? m_quietChecks + 1 : 0;
    m_end.timedOut = nanosSince(m_wallStart) / 1'000'000 >= m_process.maxWallMs;
    reportProgress(queued);
    return m_quietChecks < 2 && !m_end.timedOut && !m_end.failure.happened() && !cancelRequested();
}

/// A check failed with `e`: true while the driver waits out a ledger outage (the run goes on);
/// false when the run must end, failed unless a cancelled run merely stops.
bool ProcessDriver::waitsForLedger(const Error &e)
{
    if (!isLedgerOutage(e.code())) {
        m_end.failure = {e.what(), e.code()};
        return false;
    }
    if (!m_watch.outage.lost())
        m_watch.sayLost(e.what());
    m_tally.unconfirmedLosses = 0;
    const bool waiting = m_watch.outage.failed(steadyNowMs()).has_value();
    if (waiting && !cancelRequested())
        return true;
    if (!waiting)
        m_end.failure = {gaveUpOnLedger(m_watch.ledger, m_watch.policy, e.what()),
                         ErrorCode::LedgerUnavailable};
    return false;
}

void ProcessDriver::reportProgress(std::int64_t queued)
{
    if (!m_o.progress)
        return;
    SandboxProgress progress;
    progress.runs = m_o.runs;
    progress.queued = queued;
    progress.kills = m_tally.kills;
    progress.realTime = true;
    progress.virtualMs = nanosSince(m_wallStart) / 1'000'000;
    m_o.progress(progress);
}

/// SIGTERM to every worker: each finishes its message and reports; the loop ends with the last.
void ProcessDriver::stopWorkers()
{
    m_end.stopping = true;
    for (Worker &w : m_workers)
        w.process->terminate();
    if (m_workers.empty())
        m_loop.quit();
}

/// Only after a start failure can any worker be left: ends them without waiting for more.
void ProcessDriver::killLeftovers()
{
    for (Worker &w : m_workers) {
        QObject::disconnect(w.process, nullptr, &m_loop, nullptr);
        if (w.process->processId() > 0)
            ::kill(static_cast<pid_t>(w.process->processId()), SIGKILL);
        w.process->waitForFinished(5'000);
        delete w.process;
    }
}

std::int64_t ProcessDriver::settleAfterStop()
{
    // Every worker has ended. Let the reconciler settle what it can, waiting at most until the
    // leases of killed workers have lapsed and late confirmations have come, then leave an
    // empty queue and withdraw the runs that did not settle.
    const auto passStart = std::chrono::steady_clock::now();
    const std::int64_t waitNs = (m_process.timings.leaseMs + m_process.timings.confirmationDelayMs +
                                 m_process.checkEveryMs) *
                                1'000'000;
    std::int64_t withdrawn = 0;
    // Each step reads the ledger before it acts, so the whole clean-up may start over.
    m_watch.retry([&] {
        while (!m_o.naive) {
            const Reconciler::Pass pass = m_reconciler.run();
            if ((pass.actions == 0 && pass.waiting == 0) || nanosSince(passStart) >= waitNs)
                break;
            std::this_thread::sleep_for(std::chrono::milliseconds(m_process.checkEveryMs));
        }
        m_ctx.emptyQueue();
        withdrawn = withdrawUnsettledRuns(m_ctx.store(), m_journal, m_o.ns);
    });
    m_busyNs += nanosSince(passStart);
    return withdrawn;
}

nlohmann::json ProcessDriver::report(std::int64_t withdrawn)
{
    SandboxTiming timing = m_sums.timing;
    timing.wallNs = nanosSince(m_wallStart);
    timing.engineNs += m_ctx.slot(m_o.workers).engineNs; // the driver's reconciler
    timing.busyNs += m_busyNs + m_sendNs;
    nlohmann::json report;
    m_watch.retry(
        [&] { report = sandboxReport(m_ctx, m_journal, m_o, m_sums.deduplicated, timing); });
    report["processes"] = true;
    report["kills"] = m_tally.kills;
    report["restarts"] = m_tally.restarts;
    report["unexpected_exits"] = m_tally.unexpectedExits;
    report["timed_out"] = m_end.timedOut;
    addEndFigures(report, m_end.cancelled, m_startedRuns, withdrawn);
    return report;
}

} // namespace

ProcessSandboxRunner::ProcessSandboxRunner(SandboxOptions options, ProcessRunOptions process)
    : m_options(std::move(options)), m_process(std::move(process))
{
}

nlohmann::json ProcessSandboxRunner::run()
{
    const auto wallStart = std::chrono::steady_clock::now();
    const SandboxOptions &o = m_options;
    requireRunnable(o);
    const std::shared_ptr<LedgerStore> store =
        openLedger(m_process.ledgerUrl, nullptr, m_process.openMode);
    const std::shared_ptr<MessageQueue> queue =
        openQueue(m_process.ledgerUrl, nullptr, m_process.openMode);
    const auto journal = openFreshJournal(*store, o.ns, "ledger");
    SandboxContext ctx(store, queue, std::make_shared<SystemClock>(), o.faults, o.ns, o.workers,
                       o.naive, m_process.timings);
    for (auto &[name, provider] : ctx.providers())
        provider->setJournal(journal.get(), o.ns);
    // Each worker process counts its own skewed clock: the driver has none.
    ctx.counters().faults[static_cast<std::size_t>(Fault::ClockSkew)] = 0;
    DriverLease lease = holdSandboxQueue(ctx, *journal, store->describe());
    const std::vector<RunRecord> records = addPlannedRuns(ctx, o);

    ProcessDriver driver({ctx, *journal, lease, records, o, m_process, wallStart});
    driver.run();
    const std::int64_t withdrawn = driver.cancelled() ? driver.settleAfterStop() : 0;
    return driver.report(withdrawn);
}

} // namespace idempo::sandbox
