// SPDX-License-Identifier: Apache-2.0
#include "sandboxrunner.h"

#include <algorithm>
#include <chrono>
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
#include "sandboxsetup.h"
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

/// The items of one run within a round's sorted items: [first, second).
using RunGroup = std::pair<std::size_t, std::size_t>;

constexpr std::int64_t TickMs = 1'000;
/// Runs recorded and started at a time.
constexpr std::size_t StartBatch = 500;
/// Rounds at one instant before time moves anyway, so nothing can spin without progress.
constexpr int MaxRoundsPerInstant = 64;
/// Messages read from the queue at a time.
constexpr int ReadBatch = 1000;

bool stopAsked(const SandboxOptions &o)
{
    return o.cancelled && o.cancelled();
}

/// Records and starts the runs of `records` (the runs of `ctx`, in order) a batch at a time, so
/// that a stop during a large start leaves only the started runs to account for. Returns
/// whether a stop was asked before every run started; `started` counts the started ones.
bool startRuns(SandboxContext &ctx, SandboxJournal &journal, DriverLease &lease,
               const std::vector<RunRecord> &records, const SandboxOptions &o, std::size_t &started)
{
    TimeSlot &schedulerSlot = ctx.slot(o.workers);
    while (started < records.size()) {
        if (stopAsked(o))
            return true;
        const std::size_t end = std::min(records.size(), started + StartBatch);
        journal.addRuns({records.begin() + static_cast<std::ptrdiff_t>(started),
                         records.begin() + static_cast<std::ptrdiff_t>(end)});
        for (std::size_t i = std::exchange(started, end); i < end; ++i) {
            const std::string message = firstEnvelope(ctx, ctx.runs()[i]);
            timed(schedulerSlot.queueNs,
                  [&] { return ctx.queue().send(ctx.queueName(), message, {}, 0); });
        }
        lease.renew();
    }
    return false;
}

/// Each run's work goes to one thread, in a fixed order: stalled workers first, then messages
/// by msg_id (a run's messages are numbered in the order the run sent them). Sorts `items` in
/// that order and returns each run's range in them.
std::vector<RunGroup> groupByRun(std::vector<WorkItem> &items)
{
    std::sort(items.begin(), items.end(), [](const WorkItem &a, const WorkItem &b) {
        return std::tie(a.run, b.resume, a.order) < std::tie(b.run, a.resume, b.order);
    });
    std::vector<RunGroup> groups;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (groups.empty() || items[groups.back().first].run != items[i].run)
            groups.emplace_back(i, i);
        groups.back().second = i + 1;
    }
    return groups;
}

/// What the scheduler does after a round.
enum class NextRound
{
    SameInstant,  ///< the round did something: another one at this instant
    LaterInstant, ///< the clock moves on a tick first
    None,         ///< the run is over: everything settled, or it ran out of virtual time
};

/// The rounds of a thread-mode run on the virtual clock. Each round hands every run's due work
/// (its deliverable messages and its stalled workers due to wake) to one pool thread, records
/// the providers' new effects and lets the reconciler pass. Time moves when a round did nothing,
/// or after MaxRoundsPerInstant rounds at one instant.
class Rounds final
{
public:
    /// `startMs`: the virtual time the run started at, for progress and maxVirtualMs.
    Rounds(SandboxContext &ctx, SandboxJournal &journal, ManualClock &clock,
           const SandboxOptions &o, std::int64_t startMs)
        : m_ctx(ctx), m_journal(journal), m_clock(clock), m_o(o), m_pool(o.workers),
          m_engineConsumer(ctx), m_naiveConsumer(ctx), m_reconciler(ctx),
          m_schedulerSlot(ctx.slot(o.workers)), m_startMs(startMs)
    {
    }

    /// Runs rounds until the run is over or a stop is asked; returns whether one was.
    bool runUntilOver(DriverLease &lease);
    /// After a stop: moves the virtual clock on while the reconciler still has leases to see
    /// lapse or confirmations to wait for, and lets it settle them.
    void settleAfterStop();
    /// Wall time the scheduler spent waiting for the pool's threads.
    std::int64_t waitNs() const { return m_waitNs; }

private:
    std::vector<WorkItem> dueWork(std::int64_t now);
    void deliverOnPool(std::vector<WorkItem> &items);
    void work(int thread, WorkItem &item);
    void reportProgress(std::int64_t now);
    NextRound next(bool progressed, const Reconciler::Pass &pass, std::int64_t now);

    SandboxContext &m_ctx;
    SandboxJournal &m_journal;
    ManualClock &m_clock;
    const SandboxOptions &m_o;
    WorkerPool m_pool;
    EngineConsumer m_engineConsumer;
    NaiveConsumer m_naiveConsumer;
    Reconciler m_reconciler;
    TimeSlot &m_schedulerSlot;
    const std::int64_t m_startMs;
    std::int64_t m_waitNs = 0;
    int m_roundsThisInstant = 0;
};

bool Rounds::runUntilOver(DriverLease &lease)
{
    for (;;) {
        lease.renew();
        const std::int64_t now = m_clock.nowMs();
        std::vector<WorkItem> items = dueWork(now);
        deliverOnPool(items);
        for (auto &[name, provider] : m_ctx.providers())
            m_journal.addEffects(provider->takeNewEffects());
        const Reconciler::Pass pass = m_o.naive ? Reconciler::Pass{} : m_reconciler.run();
        reportProgress(now);
        if (stopAsked(m_o))
            return true;
        switch (next(!items.empty() || pass.actions > 0, pass, now)) {
        case NextRound::SameInstant:
            continue;
        case NextRound::LaterInstant:
            m_clock.advanceMs(TickMs);
            m_roundsThisInstant = 0;
            continue;
        case NextRound::None:
            return false;
        }
    }
}

void Rounds::settleAfterStop()
{
    // Nothing is delivered any more and stalled workers never wake (as if killed). What the
    // stopped workers left behind needs only time: their leases lapse and late confirmations
    // come in on the virtual clock, and the reconciler settles each operation as it would have
    // (found -> succeeded, no effect -> received, no lookup -> confirmation_required). Bounded:
    // past the longest lease, stall and confirmation delay nothing is left to wait for.
    const SandboxTimings &t = m_ctx.timings();
    const std::int64_t until =
        m_clock.nowMs() + t.leaseMs + t.pauseMs + t.confirmationDelayMs + TickMs;
    for (;;) {
        const Reconciler::Pass pass = m_reconciler.run();
        if (pass.waiting == 0 && pass.actions == 0)
            return;
        if (m_clock.nowMs() >= until)
            return;
        if (pass.actions == 0)
            m_clock.advanceMs(TickMs);
    }
}

/// The deliverable messages on the queue and the stalled workers due at `now`.
std::vector<WorkItem> Rounds::dueWork(std::int64_t now)
{
    std::vector<WorkItem> items;
    for (;;) {
        const auto batch = timed(m_schedulerSlot.queueNs, [&] {
            return m_ctx.queue().read(m_ctx.queueName(), m_ctx.timings().visibilityTimeoutMs,
                                      ReadBatch);
        });
        for (const QueueMessage &m : batch) {
            const QueueEnvelope envelope =
                QueueEnvelope::fromJson(nlohmann::json::parse(m.message));
            RunState *run = m_ctx.run(envelope.runId);
            if (!run)
                throw Error(ErrorCode::Internal,
                            "the sandbox queue delivered a message of unknown run " +
                                envelope.runId);
            if (!m_ctx.deliverable(*run, m, m_schedulerSlot.queueNs))
                continue;
            items.push_back({m_ctx.runIndex(*run), false, m.msgId, m, {}});
        }
        if (batch.size() < static_cast<std::size_t>(ReadBatch))
            break;
    }
    for (ParkedWorker &p : m_ctx.takeDueParked(now)) {
        const std::size_t run = p.run;
        const std::int64_t order = p.seq;
        items.push_back({run, true, order, {}, std::move(p)});
    }
    return items;
}

void Rounds::deliverOnPool(std::vector<WorkItem> &items)
{
    const std::vector<RunGroup> groups = groupByRun(items);
    const auto waitStart = std::chrono::steady_clock::now();
    m_pool.run(groups.size(), [&](int thread, std::size_t g) {
        // A stop leaves the runs not reached yet this round where they are (their messages
        // are emptied with the queue), so it waits for the work in hand only.
        if (stopAsked(m_o))
            return;
        const auto busyStart = std::chrono::steady_clock::now();
        for (std::size_t i = groups[g].first; i < groups[g].second; ++i)
            work(thread, items[i]);
        m_ctx.slot(thread).busyNs += nanosSince(busyStart);
    });
    m_waitNs += nanosSince(waitStart);
}

void Rounds::work(int thread, WorkItem &item)
{
    RunState &run = m_ctx.runs()[item.run];
    if (m_o.naive)
        item.resume ? m_naiveConsumer.resume(thread, run, item.parked)
                    : m_naiveConsumer.deliver(thread, run, item.message);
    else
        item.resume ? m_engineConsumer.resume(thread, run, item.parked)
                    : m_engineConsumer.deliver(thread, run, item.message);
}

void Rounds::reportProgress(std::int64_t now)
{
    if (!m_o.progress)
        return;
    SandboxProgress progress;
    progress.runs = m_o.runs;
    progress.settled = static_cast<int>(std::count_if(m_ctx.runs().begin(), m_ctx.runs().end(),
                                                      [](const RunState &r) { return r.settled; }));
    progress.deliveries = m_ctx.counters().deliveries;
    progress.virtualMs = now - m_startMs;
    m_o.progress(progress);
}

/// The run is over when a round at `now` did nothing and nothing is left to come (no message on
/// the queue, no stalled worker, nothing the reconciler waits for), or at maxVirtualMs.
NextRound Rounds::next(bool progressed, const Reconciler::Pass &pass, std::int64_t now)
{
    if (progressed && ++m_roundsThisInstant < MaxRoundsPerInstant)
        return NextRound::SameInstant;
    if (!progressed && m_ctx.queue().metrics(m_ctx.queueName()).length == 0 && !m_ctx.hasParked() &&
        pass.waiting == 0)
        return NextRound::None;
    if (now - m_startMs >= m_o.maxVirtualMs)
        return NextRound::None;
    return NextRound::LaterInstant;
}

/// The run's timing: the scheduler's own share is the wall time it did not wait for the pool.
SandboxTiming threadTiming(const SandboxContext &ctx, std::int64_t wallNs, std::int64_t waitNs)
{
    SandboxTiming timing;
    timing.wallNs = wallNs;
    timing.busyNs = timing.wallNs - waitNs;
    for (const TimeSlot &slot : ctx.slots()) {
        timing.engineNs += slot.engineNs;
        timing.queueNs += slot.queueNs;
        timing.busyNs += slot.busyNs;
    }
    return timing;
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
    requireRunnable(o);
    const auto journal = openFreshJournal(*m_store, o.ns, "--ledger");
    SandboxContext ctx(m_store, std::make_shared<SqliteMessageQueue>(m_store), m_clock, o.faults,
                       o.ns, o.workers, o.naive);
    DriverLease lease = holdSandboxQueue(ctx, *journal, m_store->describe());
    const std::vector<RunRecord> records = addPlannedRuns(ctx, o);
    const std::int64_t startMs = m_clock->nowMs();
    std::size_t started = 0;
    bool cancelled = startRuns(ctx, *journal, lease, records, o, started);

    Rounds rounds(ctx, *journal, *m_clock, o, startMs);
    if (!cancelled)
        cancelled = rounds.runUntilOver(lease);
    std::int64_t withdrawn = 0;
    if (cancelled) {
        if (!o.naive)
            rounds.settleAfterStop();
        ctx.emptyQueue(); // the next run must start on an empty sandbox queue
        withdrawn = withdrawUnsettledRuns(ctx.store(), *journal, o.ns);
    }
    std::int64_t deduplicated = 0;
    for (auto &[name, provider] : ctx.providers())
        deduplicated += provider->deduplicatedCount();
    const SandboxTiming timing = threadTiming(ctx, nanosSince(wallStart), rounds.waitNs());
    nlohmann::json report = sandboxReport(ctx, *journal, o, deduplicated, timing);
    report["virtual_seconds"] = (m_clock->nowMs() - startMs) / 1000;
    addEndFigures(report, cancelled, started, withdrawn);
    return report;
}

std::string SandboxRunner::reportText(const nlohmann::json &report)
{
    return sandboxReportText(report);
}

} // namespace idempo::sandbox
