// SPDX-License-Identifier: Apache-2.0
#include "processsandboxrunner.h"

#include <chrono>
#include <cstdio>
#include <list>
#include <thread>
#include <utility>

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <QEventLoop>
#include <QProcess>
#include <QTimer>

#include "driverlease.h"
#include "error.h"
#include "reconciler.h"
#include "sandboxjournal.h"
#include "sandboxreport.h"

namespace idempo::sandbox {
namespace {

std::int64_t nanosSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start)
        .count();
}

std::string runNumber(int i)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%06d", i);
    return buffer;
}

void sayLost(const std::string &ledger, const std::string &reason, const ReconnectPolicy &policy)
{
    spdlog::warn("sandbox: lost the ledger {} ({}); reconnecting for up to {} s", ledger, reason,
                 policy.deadlineMs / 1000.0);
}

void sayBack(const std::string &ledger, std::int64_t afterMs)
{
    spdlog::warn("sandbox: the ledger {} answers again after {} s; carrying on", ledger,
                 afterMs / 1000.0);
}

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

} // namespace

ProcessSandboxRunner::ProcessSandboxRunner(SandboxOptions options, ProcessRunOptions process)
    : m_options(std::move(options)), m_process(std::move(process))
{
}

nlohmann::json ProcessSandboxRunner::run()
{
    const auto wallStart = std::chrono::steady_clock::now();
    const SandboxOptions &o = m_options;
    if (o.scenarios.empty() || o.runs < 1 || o.runs > SandboxOptions::MaxRuns || o.workers < 1)
        throw Error(ErrorCode::InvalidArgument, "a sandbox run needs a scenario, runs 1.." +
                                                    std::to_string(SandboxOptions::MaxRuns) +
                                                    " and workers >= 1");
    const std::shared_ptr<LedgerStore> store =
        openLedger(m_process.ledgerUrl, nullptr, m_process.openMode);
    const std::shared_ptr<MessageQueue> queue =
        openQueue(m_process.ledgerUrl, nullptr, m_process.openMode);
    const auto journal = SandboxJournal::open(*store);
    journal->createTables();
    ListFilter anyOperation;
    anyOperation.ns = o.ns;
    anyOperation.limit = 1;
    if (journal->hasRuns(o.ns) || !store->list(anyOperation).empty()) {
        throw Error(ErrorCode::InvalidArgument,
                    "namespace '" + o.ns + "' of " + store->describe() +
                        " already holds operations or sandbox runs; use a fresh "
                        "ledger or another --namespace");
    }
    SandboxContext ctx(store, queue, std::make_shared<SystemClock>(), o.faults, o.ns, o.workers,
                       o.naive, m_process.timings);
    for (auto &[name, provider] : ctx.providers())
        provider->setJournal(journal.get(), o.ns);
    // Each worker process counts its own skewed clock: the driver has none.
    ctx.counters().faults[static_cast<std::size_t>(Fault::ClockSkew)] = 0;
    QueueOptions queueOptions;
    queueOptions.maxReads = 20;
    ctx.queue().createQueue(ctx.queueName(), queueOptions);
    DriverLease lease(*journal, ctx.queue(), ctx.queueName(), o.ns, store->describe(),
                      [](const std::string &line) { spdlog::warn("{}", line); });

    std::vector<RunRecord> records;
    for (int i = 0; i < o.runs; ++i) {
        const Scenario &scenario = *o.scenarios[static_cast<std::size_t>(i) % o.scenarios.size()];
        std::string runId =
            scenario.runPrefix() + "-" + std::to_string(o.faults.seed()) + "-" + runNumber(i);
        records.push_back({o.ns, runId, scenario.name(), o.naive});
        ctx.addRun(scenario, std::move(runId));
    }

    std::list<Worker> workers;
    int generation = 0;
    std::int64_t kills = 0;
    std::int64_t restarts = 0;
    std::int64_t unexpectedExits = 0;
    std::int64_t unconfirmedLosses = 0; ///< exits 69 the driver has not yet seen an outage behind
    bool stopping = false;
    bool cancelled = false;
    const auto cancelRequested = [&] {
        if (!cancelled && o.cancelled && o.cancelled())
            cancelled = true;
        return cancelled;
    };
    std::string failure;
    ErrorCode failureCode = ErrorCode::Internal;
    // A worker that cannot work (an unreachable ledger, a broken binary) would be replaced
    // forever: give up and say so.
    const auto checkUnexpectedExits = [&] {
        if (unexpectedExits > 3 * static_cast<std::int64_t>(o.workers))
            failure = "workers keep ending on their own (see their messages above)";
    };
    const std::string ledger = store->describe();
    const ReconnectPolicy &reconnect = m_process.reconnect;
    ReconnectBackoff outage(reconnect);
    std::int64_t outageEndedAtMs = -reconnect.deadlineMs;
    std::vector<int>
        waitingSlots; ///< workers that could not reach the ledger, restarted once it answers
    Counters &totals = ctx.counters();
    std::int64_t deduplicated = 0;
    SandboxTiming timing;
    QEventLoop loop;

    const auto readLines = [&](Worker &w) {
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
                ++kills;
            }
        }
    };
    std::function<void(int)> start;
    const auto finished = [&](Worker &w) {
        readLines(w);
        try {
            if (w.last.is_object()) {
                totals.add(w.last.at("counters"));
                deduplicated += w.last.at("provider_dedupe").get<std::int64_t>();
                timing.engineNs += w.last.at("engine_ns").get<std::int64_t>();
                timing.queueNs += w.last.at("queue_ns").get<std::int64_t>();
                // A stall is the fault's deliberate wait, not work: it stays out of the engine's
                // share.
                const std::int64_t stalled = w.last.at("stalled_ns").get<std::int64_t>();
                timing.busyNs += w.last.at("busy_ns").get<std::int64_t>() - stalled;
                timing.stalledNs += stalled;
            }
        } catch (const nlohmann::json::exception &e) {
            failure = "a worker reported an unreadable status line (" + std::string(e.what()) + ")";
        }
        // A stop signal sent to the whole process group (Ctrl-C) reaches the workers too: their
        // clean exit is then part of the stop, not a reason to replace them.
        if (cancelRequested() && !stopping) {
            stopping = true;
            for (Worker &other : workers)
                if (&other != &w)
                    other.process->terminate();
        }
        // A worker that could not reach the ledger (exit 69) is replaced once the driver's next
        // check finds the ledger answering, never at once. A worker often sees an outage before
        // the driver does, so its exit is judged by that check: unexpected only if the driver
        // reaches the ledger the worker could not.
        const bool lostLedger = w.process->exitStatus() == QProcess::NormalExit &&
                                w.process->exitCode() == kWorkerLostLedger;
        if (lostLedger && !outage.lost() && steadyNowMs() - outageEndedAtMs >= reconnect.deadlineMs)
            ++unconfirmedLosses;
        if (!w.killed && !stopping && !lostLedger) {
            ++unexpectedExits;
            spdlog::warn("sandbox worker {} ended on its own with status {}", w.slot,
                         w.process->exitCode());
            checkUnexpectedExits();
        }
        const int slot = w.slot;
        QObject::disconnect(w.process, nullptr, &loop, nullptr);
        w.process->deleteLater();
        workers.remove_if([&](const Worker &other) { return &other == &w; });
        if (!stopping && failure.empty() && lostLedger) {
            waitingSlots.push_back(slot);
        } else if (!stopping && failure.empty()) {
            ++restarts;
            start(slot);
        } else if (workers.empty()) {
            loop.quit();
        }
    };
    start = [&](int slot) {
        Worker &w = workers.emplace_back();
        w.slot = slot;
        w.process = new QProcess();
        w.process->setProcessChannelMode(QProcess::ForwardedErrorChannel);
        // A worker must not outlive its driver and go on consuming the shared queue: it gets
        // SIGKILL when the driver ends, however it ends. Not SIGTERM: finishing the message in
        // hand could send the next step's message after the next run took the queue over
        // (DriverLease), while a worker killed mid-message is a crash the ledger is built for.
        const pid_t driver = ::getpid();
        w.process->setChildProcessModifier([driver] {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != driver) // the driver ended before the line above
                ::raise(SIGKILL);
        });
        const QString owner = QStringLiteral("p%1.%2").arg(slot).arg(++generation);
        // The ledger travels in the worker's environment, which only its user can read: argv, which
        // `ps` shows to everyone, would carry a password of the address.
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("IDEMPO_LEDGER"), m_process.ledgerUrl);
        w.process->setProcessEnvironment(environment);
        QStringList args{QStringLiteral("--namespace"),
                         QString::fromStdString(o.ns),
                         QStringLiteral("worker"),
                         QStringLiteral("--queue"),
                         QString::fromStdString(ctx.queueName()),
                         QStringLiteral("--owner"),
                         owner,
                         QStringLiteral("--index"),
                         QString::number(slot),
                         QStringLiteral("--faults"),
                         QString::fromStdString(o.faults.toList()),
                         QStringLiteral("--seed"),
                         QString::number(o.faults.seed()),
                         QStringLiteral("--lease-ms"),
                         QString::number(m_process.timings.leaseMs),
                         QStringLiteral("--vt-ms"),
                         QString::number(m_process.timings.visibilityTimeoutMs),
                         QStringLiteral("--reconnect-deadline"),
                         QString::number(static_cast<double>(reconnect.deadlineMs) / 1000.0)};
        if (o.naive)
            args << QStringLiteral("--naive");
        QObject::connect(w.process, &QProcess::readyReadStandardOutput, &loop,
                         [&w, &readLines] { readLines(w); });
        QObject::connect(w.process, &QProcess::finished, &loop, [&w, &finished] { finished(w); });
        QObject::connect(w.process, &QProcess::errorOccurred, &loop,
                         [&, owner](QProcess::ProcessError error) {
                             if (error != QProcess::FailedToStart)
                                 return;
                             failure = "cannot start worker " + owner.toStdString() + " (" +
                                       m_process.program.toStdString() + ")";
                             stopping = true;
                             loop.quit();
                         });
        w.process->start(m_process.program, args);
    };
    for (int slot = 0; slot < o.workers; ++slot)
        start(slot);
    // Workers start on the first messages while the rest are still being sent. The runs are
    // recorded and started a batch per turn of the event loop, so that crash announcements are
    // answered meanwhile and a stop starts nothing more: it waits for the work in hand only.
    // Recording a batch again after a lost connection is harmless (addRuns skips recorded
    // runs); a first envelope sent twice is a duplicate delivery, which the claim answers.
    std::size_t startedRuns = 0;
    std::int64_t driverSendNs = 0;
    QTimer sender;
    QObject::connect(&sender, &QTimer::timeout, &loop, [&] {
        if (stopping || cancelRequested() || startedRuns == records.size()) {
            sender.stop();
            return;
        }
        const auto sendStart = std::chrono::steady_clock::now();
        const auto lost = [&](const std::string &reason) { sayLost(ledger, reason, reconnect); };
        const auto back = [&](std::int64_t afterMs) { sayBack(ledger, afterMs); };
        try {
            const std::size_t end = std::min(records.size(), startedRuns + StartBatch);
            const std::vector<RunRecord> batch(records.begin() +
                                                   static_cast<std::ptrdiff_t>(startedRuns),
                                               records.begin() + static_cast<std::ptrdiff_t>(end));
            retryThroughOutage(
                reconnect, ledger,
                [&] {
                    lease.renew();
                    journal->addRuns(batch);
                },
                lost, back);
            for (; startedRuns < end; ++startedRuns) {
                RunState &run = ctx.runs()[startedRuns];
                const WorkflowStep &first = run.scenario->steps().front();
                const std::string message =
                    ctx.envelope(run, first, run.scenario->firstPayload(o.faults, run.runId),
                                 "planner", ctx.workerNowMs(0));
                retryThroughOutage(
                    reconnect, ledger, [&] { ctx.queue().send(ctx.queueName(), message, {}, 0); },
                    lost, back);
            }
        } catch (const Error &e) {
            failure = e.what();
            failureCode = e.code();
            sender.stop();
        } catch (const std::exception &e) {
            failure = e.what();
            sender.stop();
        }
        driverSendNs += nanosSince(sendStart);
    });
    sender.start(0);

    Reconciler reconciler(ctx);
    std::int64_t driverBusyNs = 0;
    int quietChecks = 0;
    bool timedOut = false;
    QTimer tick;
    QObject::connect(&tick, &QTimer::timeout, &loop, [&] {
        if (stopping)
            return;
        if (outage.lost() && !outage.due(steadyNowMs()) && !cancelRequested())
            return;
        try {
            const auto passStart = std::chrono::steady_clock::now();
            lease.renew();
            const Reconciler::Pass pass = o.naive ? Reconciler::Pass{} : reconciler.run();
            const std::int64_t queued = ctx.queue().metrics(ctx.queueName()).length;
            driverBusyNs += nanosSince(passStart);
            if (outage.lost()) {
                sayBack(ledger, outage.recovered(steadyNowMs()));
                outageEndedAtMs = steadyNowMs();
            }
            if (unconfirmedLosses > 0) {
                spdlog::warn(
                    "sandbox: {} worker(s) could not reach the ledger {}, which answers the driver",
                    unconfirmedLosses, ledger);
                unexpectedExits += std::exchange(unconfirmedLosses, 0);
                checkUnexpectedExits();
            }
            for (const int slot : std::exchange(waitingSlots, {})) {
                ++restarts;
                start(slot);
            }
            const bool allStarted = startedRuns == records.size();
            quietChecks = allStarted && queued == 0 && pass.actions == 0 && pass.waiting == 0
                              ? quietChecks + 1
                              : 0;
            timedOut = nanosSince(wallStart) / 1'000'000 >= m_process.maxWallMs;
            if (o.progress) {
                SandboxProgress progress;
                progress.runs = o.runs;
                progress.queued = queued;
                progress.kills = kills;
                progress.realTime = true;
                progress.virtualMs = nanosSince(wallStart) / 1'000'000;
                o.progress(progress);
            }
            if (quietChecks < 2 && !timedOut && failure.empty() && !cancelRequested())
                return;
        } catch (const Error &e) {
            if (!isLedgerOutage(e.code())) {
                failure = e.what();
                failureCode = e.code();
            } else {
                if (!outage.lost())
                    sayLost(ledger, e.what(), reconnect);
                unconfirmedLosses = 0;
                const bool waiting = outage.failed(steadyNowMs()).has_value();
                if (waiting && !cancelRequested())
                    return;
                if (!waiting) {
                    failure = gaveUpOnLedger(ledger, reconnect, e.what());
                    failureCode = ErrorCode::LedgerUnavailable;
                }
            }
        } catch (const std::exception &e) {
            failure = e.what();
        }
        stopping = true;
        for (Worker &w : workers)
            w.process->terminate();
        if (workers.empty())
            loop.quit();
    });
    tick.start(static_cast<int>(m_process.checkEveryMs));
    loop.exec();
    tick.stop();
    sender.stop();
    for (Worker &w : workers) {
        // Only after a start failure can any be left: end them without waiting for more.
        QObject::disconnect(w.process, nullptr, &loop, nullptr);
        if (w.process->processId() > 0)
            ::kill(static_cast<pid_t>(w.process->processId()), SIGKILL);
        w.process->waitForFinished(5'000);
        delete w.process;
    }
    if (!failure.empty())
        throw Error(failureCode, "sandbox process run failed: " + failure);
    std::int64_t withdrawn = 0;
    if (cancelled) {
        // Every worker has ended. Let the reconciler settle what it can, waiting at most until
        // the leases of killed workers have lapsed and late confirmations have come, then
        // leave an empty queue and withdraw the runs that did not settle.
        const auto passStart = std::chrono::steady_clock::now();
        const std::int64_t waitNs =
            (m_process.timings.leaseMs + m_process.timings.confirmationDelayMs +
             m_process.checkEveryMs) *
            1'000'000;
        // Each step reads the ledger before it acts, so the whole clean-up may start over.
        retryThroughOutage(
            reconnect, ledger,
            [&] {
                while (!o.naive) {
                    const Reconciler::Pass pass = reconciler.run();
                    if ((pass.actions == 0 && pass.waiting == 0) || nanosSince(passStart) >= waitNs)
                        break;
                    std::this_thread::sleep_for(std::chrono::milliseconds(m_process.checkEveryMs));
                }
                ctx.emptyQueue();
                withdrawn = withdrawUnsettledRuns(*store, *journal, o.ns);
            },
            [&](const std::string &reason) { sayLost(ledger, reason, reconnect); },
            [&](std::int64_t afterMs) { sayBack(ledger, afterMs); });
        driverBusyNs += nanosSince(passStart);
    }

    timing.wallNs = nanosSince(wallStart);
    timing.engineNs += ctx.slot(o.workers).engineNs; // the driver's reconciler
    timing.busyNs += driverBusyNs + driverSendNs;
    nlohmann::json report;
    retryThroughOutage(
        reconnect, ledger, [&] { report = sandboxReport(ctx, *journal, o, deduplicated, timing); },
        [&](const std::string &reason) { sayLost(ledger, reason, reconnect); },
        [&](std::int64_t afterMs) { sayBack(ledger, afterMs); });
    report["processes"] = true;
    report["kills"] = kills;
    report["restarts"] = restarts;
    report["unexpected_exits"] = unexpectedExits;
    report["timed_out"] = timedOut;
    report["cancelled"] = cancelled;
    report["runs_started"] = startedRuns;
    report["runs_withdrawn"] = withdrawn;
    return report;
}

} // namespace idempo::sandbox
