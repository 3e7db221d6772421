// SPDX-License-Identifier: Apache-2.0
#include "sandboxrunner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include <spdlog/spdlog.h>

#include "driverlease.h"
#include "engineconsumer.h"
#include "error.h"
#include "ledgerfactory.h"
#include "naiveconsumer.h"
#include "queueenvelope.h"
#include "reconciler.h"
#include "sandboxcontext.h"
#include "sandboxjournal.h"
#include "sandboxreport.h"
#include "sqliteledgerstore.h"
#include "sqlitemessagequeue.h"
#include "workerpool.h"

namespace idempo::sandbox {
namespace {

/// One unit of a round: a delivery, or a stalled worker waking up.
struct WorkItem
{
    std::size_t run = 0;
    bool resume = false;
    std::int64_t order = 0; ///< msg_id, or the parked worker's sequence
    QueueMessage message;
    ParkedWorker parked;
};

constexpr std::int64_t TickMs = 1'000;
/// Runs recorded and started at a time.
constexpr std::size_t StartBatch = 500;
/// Rounds at one instant before time moves anyway, so nothing can spin without progress.
constexpr int MaxRoundsPerInstant = 64;

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

/// After a stop: moves the virtual clock on while the reconciler still has leases to see lapse
/// or confirmations to wait for, and lets it settle them.
void settleAfterStop(ManualClock &clock, Reconciler &reconciler, const SandboxTimings &t)
{
    // Nothing is delivered any more and stalled workers never wake (as if killed). What the
    // stopped workers left behind needs only time: their leases lapse and late confirmations
    // come in on the virtual clock, and the reconciler settles each operation as it would have
    // (found -> succeeded, no effect -> received, no lookup -> confirmation_required). Bounded:
    // past the longest lease, stall and confirmation delay nothing is left to wait for.
    const std::int64_t until =
        clock.nowMs() + t.leaseMs + t.pauseMs + t.confirmationDelayMs + TickMs;
    for (;;) {
        const Reconciler::Pass pass = reconciler.run();
        if (pass.waiting == 0 && pass.actions == 0)
            return;
        if (clock.nowMs() >= until)
            return;
        if (pass.actions == 0)
            clock.advanceMs(TickMs);
    }
}

} // namespace

SandboxRunner::SandboxRunner(std::shared_ptr<SqliteLedgerStore> store,
                             std::shared_ptr<ManualClock> clock, SandboxOptions options)
    : m_store(std::move(store)), m_clock(std::move(clock)), m_options(std::move(options))
{
}

std::shared_ptr<SqliteLedgerStore>
SandboxRunner::openLedger(const QString &url, std::shared_ptr<ManualClock> clock, OpenMode mode)
{
    if (!url.startsWith(QLatin1String("sqlite:")))
        throw Error(ErrorCode::InvalidArgument,
                    "the thread mode of the sandbox runs on the embedded ledger only "
                    "(sqlite:PATH); a PostgreSQL "
                    "ledger needs --processes (worker processes on the real clock)");
    QString withOptions = url;
    if (!url.contains(QLatin1String("synchronous=")))
        withOptions +=
            (url.contains(QLatin1Char('?')) ? QStringLiteral("&") : QStringLiteral("?")) +
            QStringLiteral("synchronous=normal");
    return std::dynamic_pointer_cast<SqliteLedgerStore>(
        idempo::openLedger(withOptions, std::move(clock), mode));
}

nlohmann::json SandboxRunner::run()
{
    const auto wallStart = std::chrono::steady_clock::now();
    const SandboxOptions &o = m_options;
    if (o.scenarios.empty() || o.runs < 1 || o.runs > SandboxOptions::MaxRuns || o.workers < 1)
        throw Error(ErrorCode::InvalidArgument, "a sandbox run needs a scenario, runs 1.." +
                                                    std::to_string(SandboxOptions::MaxRuns) +
                                                    " and workers >= 1");
    const auto journal = SandboxJournal::open(*m_store);
    journal->createTables();
    ListFilter anyOperation;
    anyOperation.ns = o.ns;
    anyOperation.limit = 1;
    if (journal->hasRuns(o.ns) || !m_store->list(anyOperation).empty()) {
        throw Error(ErrorCode::InvalidArgument,
                    "namespace '" + o.ns + "' of " + m_store->describe() +
                        " already holds operations or sandbox runs; use a fresh "
                        "--ledger or another --namespace");
    }

    SandboxContext ctx(m_store, std::make_shared<SqliteMessageQueue>(m_store), m_clock, o.faults,
                       o.ns, o.workers, o.naive);
    QueueOptions queueOptions;
    queueOptions.maxReads = 20;
    ctx.queue().createQueue(ctx.queueName(), queueOptions);
    DriverLease lease(*journal, ctx.queue(), ctx.queueName(), o.ns, m_store->describe(),
                      [](const std::string &line) { spdlog::warn("{}", line); });

    std::vector<RunRecord> records;
    for (int i = 0; i < o.runs; ++i) {
        const Scenario &scenario = *o.scenarios[static_cast<std::size_t>(i) % o.scenarios.size()];
        std::string runId =
            scenario.runPrefix() + "-" + std::to_string(o.faults.seed()) + "-" + runNumber(i);
        records.push_back({o.ns, runId, scenario.name(), o.naive});
        ctx.addRun(scenario, std::move(runId));
    }
    const std::int64_t startMs = m_clock->nowMs();
    TimeSlot &schedulerSlot = ctx.slot(o.workers);
    const auto stopAsked = [&o] { return o.cancelled && o.cancelled(); };
    bool cancelled = false;
    std::size_t started = 0;
    // Runs are recorded and started a batch at a time, so that a stop during a large start
    // leaves only the started runs to account for.
    while (started < records.size() && !(cancelled = stopAsked())) {
        const std::size_t end = std::min(records.size(), started + StartBatch);
        journal->addRuns({records.begin() + static_cast<std::ptrdiff_t>(started),
                          records.begin() + static_cast<std::ptrdiff_t>(end)});
        for (std::size_t i = std::exchange(started, end); i < end; ++i) {
            RunState &run = ctx.runs()[i];
            const WorkflowStep &first = run.scenario->steps().front();
            const std::string message =
                ctx.envelope(run, first, run.scenario->firstPayload(o.faults, run.runId), "planner",
                             ctx.workerNowMs(0));
            timed(schedulerSlot.queueNs,
                  [&] { return ctx.queue().send(ctx.queueName(), message, {}, 0); });
        }
        lease.renew();
    }

    WorkerPool pool(o.workers);
    EngineConsumer engineConsumer(ctx);
    NaiveConsumer naiveConsumer(ctx);
    Reconciler reconciler(ctx);
    std::int64_t waitNs = 0;
    int roundsThisInstant = 0;
    while (!cancelled) {
        lease.renew();
        const std::int64_t now = m_clock->nowMs();
        std::vector<WorkItem> items;
        for (;;) {
            const auto batch = timed(schedulerSlot.queueNs, [&] {
                return ctx.queue().read(ctx.queueName(), ctx.timings().visibilityTimeoutMs, 1000);
            });
            for (const QueueMessage &m : batch) {
                const QueueEnvelope envelope =
                    QueueEnvelope::fromJson(nlohmann::json::parse(m.message));
                RunState *run = ctx.run(envelope.runId);
                if (!run)
                    throw Error(ErrorCode::Internal,
                                "the sandbox queue delivered a message of unknown run " +
                                    envelope.runId);
                if (!ctx.deliverable(*run, m, schedulerSlot.queueNs))
                    continue;
                items.push_back({ctx.runIndex(*run), false, m.msgId, m, {}});
            }
            if (batch.size() < 1000)
                break;
        }
        for (ParkedWorker &p : ctx.takeDueParked(now)) {
            const std::size_t run = p.run;
            const std::int64_t order = p.seq;
            items.push_back({run, true, order, {}, std::move(p)});
        }
        // Each run's work goes to one thread, in a fixed order: stalled workers first, then
        // messages by msg_id (a run's messages are numbered in the order the run sent them).
        std::sort(items.begin(), items.end(), [](const WorkItem &a, const WorkItem &b) {
            return std::tie(a.run, b.resume, a.order) < std::tie(b.run, a.resume, b.order);
        });
        std::vector<std::pair<std::size_t, std::size_t>> groups;
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (groups.empty() || items[groups.back().first].run != items[i].run)
                groups.emplace_back(i, i);
            groups.back().second = i + 1;
        }
        const auto waitStart = std::chrono::steady_clock::now();
        pool.run(groups.size(), [&](int thread, std::size_t g) {
            // A stop leaves the runs not reached yet this round where they are (their messages
            // are emptied with the queue), so it waits for the work in hand only.
            if (stopAsked())
                return;
            const auto busyStart = std::chrono::steady_clock::now();
            for (std::size_t i = groups[g].first; i < groups[g].second; ++i) {
                WorkItem &item = items[i];
                RunState &run = ctx.runs()[item.run];
                if (o.naive)
                    item.resume ? naiveConsumer.resume(thread, run, item.parked)
                                : naiveConsumer.deliver(thread, run, item.message);
                else
                    item.resume ? engineConsumer.resume(thread, run, item.parked)
                                : engineConsumer.deliver(thread, run, item.message);
            }
            ctx.slot(thread).busyNs += nanosSince(busyStart);
        });
        waitNs += nanosSince(waitStart);

        for (auto &[name, provider] : ctx.providers())
            journal->addEffects(provider->takeNewEffects());
        const Reconciler::Pass pass = o.naive ? Reconciler::Pass{} : reconciler.run();

        if (o.progress) {
            SandboxProgress progress;
            progress.runs = o.runs;
            progress.settled = static_cast<int>(std::count_if(
                ctx.runs().begin(), ctx.runs().end(), [](const RunState &r) { return r.settled; }));
            progress.deliveries = ctx.counters().deliveries;
            progress.virtualMs = now - startMs;
            o.progress(progress);
        }
        if ((cancelled = stopAsked()))
            break;
        const bool progressed = !items.empty() || pass.actions > 0;
        if (progressed && ++roundsThisInstant < MaxRoundsPerInstant)
            continue;
        if (!progressed && ctx.queue().metrics(ctx.queueName()).length == 0 && !ctx.hasParked() &&
            pass.waiting == 0)
            break;
        if (now - startMs >= o.maxVirtualMs)
            break;
        m_clock->advanceMs(TickMs);
        roundsThisInstant = 0;
    }

    std::int64_t withdrawn = 0;
    if (cancelled) {
        if (!o.naive)
            settleAfterStop(*m_clock, reconciler, ctx.timings());
        ctx.emptyQueue(); // the next run must start on an empty sandbox queue
        withdrawn = withdrawUnsettledRuns(ctx.store(), *journal, o.ns);
    }
    std::int64_t deduplicated = 0;
    for (auto &[name, provider] : ctx.providers())
        deduplicated += provider->deduplicatedCount();
    SandboxTiming timing;
    timing.wallNs = nanosSince(wallStart);
    timing.busyNs = timing.wallNs - waitNs; // the scheduler's own share
    for (const TimeSlot &slot : ctx.slots()) {
        timing.engineNs += slot.engineNs;
        timing.queueNs += slot.queueNs;
        timing.busyNs += slot.busyNs;
    }
    nlohmann::json report = sandboxReport(ctx, *journal, o, deduplicated, timing);
    report["virtual_seconds"] = (m_clock->nowMs() - startMs) / 1000;
    report["cancelled"] = cancelled;
    report["runs_started"] = started;
    report["runs_withdrawn"] = withdrawn;
    return report;
}

std::string SandboxRunner::reportText(const nlohmann::json &report)
{
    return sandboxReportText(report);
}

} // namespace idempo::sandbox
