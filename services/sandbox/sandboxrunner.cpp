// SPDX-License-Identifier: Apache-2.0
#include "sandboxrunner.h"

#include "engineconsumer.h"
#include "error.h"
#include "invariantchecker.h"
#include "ledgerfactory.h"
#include "naiveconsumer.h"
#include "queueenvelope.h"
#include "reconciler.h"
#include "sandboxcontext.h"
#include "sandboxjournal.h"
#include "workerpool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <QSqlQuery>
#include <QVariant>

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
/// Rounds at one instant before time moves anyway, so nothing can spin without progress.
constexpr int MaxRoundsPerInstant = 64;

std::int64_t nanosSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

std::string runNumber(int i)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%06d", i);
    return buffer;
}

nlohmann::json statesOf(SqliteLedgerStore &store, const std::string &ns)
{
    nlohmann::json states = nlohmann::json::object();
    for (int i = 0; i < OperationStateCount; ++i)
        states[std::string(stateName(static_cast<OperationState>(i)))] = 0;
    QSqlQuery q(store.connection().db);
    q.prepare(QStringLiteral("SELECT state, count(*) FROM operations WHERE namespace = ? GROUP BY state"));
    q.bindValue(0, QString::fromStdString(ns));
    if (!q.exec())
        throw Error(ErrorCode::Internal, "count operations by state");
    while (q.next())
        states[q.value(0).toString().toStdString()] = q.value(1).toLongLong();
    return states;
}

} // namespace

SandboxRunner::SandboxRunner(std::shared_ptr<SqliteLedgerStore> store, std::shared_ptr<ManualClock> clock,
                             SandboxOptions options)
    : m_store(std::move(store)), m_clock(std::move(clock)), m_options(std::move(options))
{
}

std::shared_ptr<SqliteLedgerStore> SandboxRunner::openLedger(const QString &url, std::shared_ptr<ManualClock> clock,
                                                            OpenMode mode)
{
    if (!url.startsWith(QLatin1String("sqlite:")))
        throw Error(ErrorCode::InvalidArgument, "the sandbox runs on the embedded ledger only (sqlite:PATH)");
    QString withOptions = url;
    if (!url.contains(QLatin1String("synchronous=")))
        withOptions += (url.contains(QLatin1Char('?')) ? QStringLiteral("&") : QStringLiteral("?"))
                       + QStringLiteral("synchronous=normal");
    return std::dynamic_pointer_cast<SqliteLedgerStore>(idempo::openLedger(withOptions, std::move(clock), mode));
}

nlohmann::json SandboxRunner::run()
{
    const auto wallStart = std::chrono::steady_clock::now();
    const SandboxOptions &o = m_options;
    if (o.scenarios.empty() || o.runs < 1 || o.workers < 1)
        throw Error(ErrorCode::InvalidArgument, "a sandbox run needs a scenario, runs >= 1 and workers >= 1");
    SandboxJournal journal(*m_store);
    journal.createTables();
    ListFilter anyOperation;
    anyOperation.ns = o.ns;
    anyOperation.limit = 1;
    if (journal.hasRuns(o.ns) || !m_store->list(anyOperation).empty()) {
        throw Error(ErrorCode::InvalidArgument, "namespace '" + o.ns + "' of " + m_store->describe()
                                                    + " already holds operations or sandbox runs; use a fresh "
                                                      "--ledger or another --namespace");
    }

    SandboxContext ctx(m_store, m_clock, o.faults, o.ns, o.workers, o.naive);
    QueueOptions queueOptions;
    queueOptions.maxReads = 20;
    ctx.queue().createQueue(SandboxContext::QueueName, queueOptions);
    if (ctx.queue().metrics(SandboxContext::QueueName).length > 0)
        throw Error(ErrorCode::InvalidArgument, "the sandbox queue still holds messages of another run");

    std::vector<RunRecord> records;
    for (int i = 0; i < o.runs; ++i) {
        const Scenario &scenario = *o.scenarios[static_cast<std::size_t>(i) % o.scenarios.size()];
        std::string runId = scenario.runPrefix() + "-" + std::to_string(o.faults.seed()) + "-" + runNumber(i);
        records.push_back({o.ns, runId, scenario.name(), o.naive});
        ctx.addRun(scenario, std::move(runId));
    }
    journal.addRuns(records);
    const std::int64_t startMs = m_clock->nowMs();
    TimeSlot &schedulerSlot = ctx.slot(o.workers);
    for (RunState &run : ctx.runs()) {
        const WorkflowStep &first = run.scenario->steps().front();
        const std::string message = ctx.envelope(run, first, run.scenario->firstPayload(o.faults, run.runId), "planner",
                                                 ctx.workerNowMs(0));
        timed(schedulerSlot.queueNs, [&] { return ctx.queue().send(SandboxContext::QueueName, message, {}, 0); });
    }

    WorkerPool pool(o.workers);
    EngineConsumer engineConsumer(ctx);
    NaiveConsumer naiveConsumer(ctx);
    Reconciler reconciler(ctx);
    std::int64_t waitNs = 0;
    int roundsThisInstant = 0;
    bool cancelled = false;
    for (;;) {
        const std::int64_t now = m_clock->nowMs();
        std::vector<WorkItem> items;
        for (;;) {
            const auto batch = timed(schedulerSlot.queueNs, [&] {
                return ctx.queue().read(SandboxContext::QueueName, ctx.timings().visibilityTimeoutMs, 1000);
            });
            for (const QueueMessage &m : batch) {
                const QueueEnvelope envelope = QueueEnvelope::fromJson(nlohmann::json::parse(m.message));
                RunState *run = ctx.run(envelope.runId);
                if (!run)
                    throw Error(ErrorCode::Internal, "the sandbox queue delivered a message of unknown run " + envelope.runId);
                const int stepIndex = run->scenario->stepIndex(envelope.stepId);
                const int occasion = run->steps[static_cast<std::size_t>(stepIndex)].scheduled++;
                if (ctx.fires(Fault::DuplicateDelivery, *run, stepIndex, occasion))
                    timed(schedulerSlot.queueNs, [&] { return ctx.queue().send(SandboxContext::QueueName, m.message, {}, 0); });
                if (ctx.fires(Fault::ReorderedDelivery, *run, stepIndex, occasion)) {
                    timed(schedulerSlot.queueNs, [&] {
                        return ctx.queue().setVt(SandboxContext::QueueName, m.msgId, ctx.timings().reorderDelayMs);
                    });
                    continue;
                }
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
            const auto busyStart = std::chrono::steady_clock::now();
            for (std::size_t i = groups[g].first; i < groups[g].second; ++i) {
                WorkItem &item = items[i];
                RunState &run = ctx.runs()[item.run];
                if (o.naive)
                    item.resume ? naiveConsumer.resume(thread, run, item.parked) : naiveConsumer.deliver(thread, run, item.message);
                else
                    item.resume ? engineConsumer.resume(thread, run, item.parked) : engineConsumer.deliver(thread, run, item.message);
            }
            ctx.slot(thread).busyNs += nanosSince(busyStart);
        });
        waitNs += nanosSince(waitStart);

        for (auto &[name, provider] : ctx.providers())
            journal.addEffects(provider->takeNewEffects());
        const Reconciler::Pass pass = o.naive ? Reconciler::Pass{} : reconciler.run();

        if (o.progress) {
            SandboxProgress progress;
            progress.runs = o.runs;
            progress.settled = static_cast<int>(
                std::count_if(ctx.runs().begin(), ctx.runs().end(), [](const RunState &r) { return r.settled; }));
            progress.deliveries = ctx.counters().deliveries;
            progress.virtualMs = now - startMs;
            o.progress(progress);
        }
        if (o.cancelled && o.cancelled()) {
            cancelled = true;
            break;
        }
        const bool progressed = !items.empty() || pass.actions > 0;
        if (progressed && ++roundsThisInstant < MaxRoundsPerInstant)
            continue;
        if (!progressed && ctx.queue().metrics(SandboxContext::QueueName).length == 0 && !ctx.hasParked()
            && pass.waiting == 0)
            break;
        if (now - startMs >= o.maxVirtualMs)
            break;
        m_clock->advanceMs(TickMs);
        roundsThisInstant = 0;
    }

    if (cancelled) {
        for (auto left = ctx.queue().browse(SandboxContext::QueueName, 0, 1000); !left.empty();
             left = ctx.queue().browse(SandboxContext::QueueName, 0, 1000))
            for (const QueueMessage &m : left)
                ctx.queue().deleteMessage(SandboxContext::QueueName, m.msgId);
    }
    const std::vector<InvariantResult> invariants = InvariantChecker(*m_store).check(o.ns);
    std::int64_t duplicateEffects = 0;
    {
        std::map<std::string, int> perOperation;
        for (const Effect &e : journal.effects(o.ns))
            if (++perOperation[e.operationKey] > 1)
                ++duplicateEffects;
    }
    const Counters &c = ctx.counters();
    const auto outcome = [&](ClaimOutcome k) { return c.claimOutcomes[static_cast<std::size_t>(k)].load(); };
    nlohmann::json effects = nlohmann::json::object();
    std::int64_t deduplicated = 0;
    for (auto &[name, provider] : ctx.providers()) {
        if (provider->effectCount() > 0)
            effects[name] = provider->effectCount();
        deduplicated += provider->deduplicatedCount();
    }
    nlohmann::json injected = nlohmann::json::object();
    for (int i = 0; i < FaultCount; ++i)
        if (o.faults.enabled(static_cast<Fault>(i)))
            injected[std::string(FaultPlan::name(static_cast<Fault>(i)))] = c.faults[static_cast<std::size_t>(i)].load();
    const nlohmann::json states = statesOf(*m_store, o.ns);

    const std::int64_t wallNs = nanosSince(wallStart);
    std::int64_t engineNs = 0;
    std::int64_t queueNs = 0;
    std::int64_t busyNs = wallNs - waitNs; // the scheduler's own share
    for (const TimeSlot &slot : ctx.slots()) {
        engineNs += slot.engineNs;
        queueNs += slot.queueNs;
        busyNs += slot.busyNs;
    }
    const double wallS = static_cast<double>(wallNs) / 1e9;
    return {
        {"scenario", o.scenarioLabel},
        {"mode", o.naive ? "naive" : "engine"},
        {"cancelled", cancelled},
        {"seed", o.faults.seed()},
        {"runs", o.runs},
        {"workers", o.workers},
        {"faults", o.faults.toJson()},
        {"faults_injected", injected},
        {"deliveries", c.deliveries.load()},
        {"duplicates_suppressed",
         {{"replayed", outcome(ClaimOutcome::Replayed)},
          {"in_progress", outcome(ClaimOutcome::InProgress)},
          {"retry_later", outcome(ClaimOutcome::RetryLater)},
          {"reconcile_required", outcome(ClaimOutcome::ReconcileRequired)},
          {"payload_mismatch", outcome(ClaimOutcome::PayloadMismatch)},
          {"provider_dedupe", deduplicated}}},
        {"retries", c.retries.load()},
        {"crashes", c.crashes.load()},
        {"fenced_writes", c.fencedWrites.load()},
        {"reconciliations",
         {{"leases_revoked", c.leasesRevoked.load()},
          {"effect_found", c.reconciledFound.load()},
          {"no_effect_dispatched_again", c.reconciledNoEffect.load()},
          {"to_confirmation_required", c.reconciledToConfirmation.load()}}},
        {"model_calls", c.modelCalls.load()},
        {"model_calls_after_write_boundary", c.modelCallsAfterBoundary.load()},
        {"approvals_pending", states.value("awaiting_approval", 0)},
        {"confirmations_pending", states.value("confirmation_required", 0)},
        {"states", states},
        {"provider_effects", effects},
        {"duplicate_effects", duplicateEffects},
        {"dead_letters", ctx.queue().metrics(std::string(SandboxContext::QueueName) + "_dlq").length},
        {"virtual_seconds", (m_clock->nowMs() - startMs) / 1000},
        {"invariants", InvariantChecker::toJson(invariants)},
        {"timing",
         {{"wall_s", wallS},
          {"runs_per_s", static_cast<double>(o.runs) / std::max(wallS, 1e-9)},
          {"engine_s", static_cast<double>(engineNs) / 1e9},
          {"queue_s", static_cast<double>(queueNs) / 1e9},
          {"busy_s", static_cast<double>(busyNs) / 1e9},
          {"engine_share", busyNs > 0 ? static_cast<double>(engineNs) / static_cast<double>(busyNs) : 0.0}}},
    };
}

std::string SandboxRunner::reportText(const nlohmann::json &r)
{
    const auto n = [](const nlohmann::json &v) { return v.dump(); };
    std::string s = "sandbox " + r.at("mode").get<std::string>() + " run: " + r.at("scenario").get<std::string>()
                    + ", " + n(r.at("runs")) + " runs, " + n(r.at("workers")) + " workers, seed " + n(r.at("seed"))
                    + "\n  faults: " + (r.at("faults").empty() ? std::string("none") : r.at("faults").dump()) + '\n';
    if (r.value("cancelled", false))
        s += "  CANCELLED before every run settled: the figures and invariants cover what ran\n";
    s += "  faults injected: " + r.at("faults_injected").dump() + '\n';
    s += "  deliveries " + n(r.at("deliveries")) + ", retries " + n(r.at("retries")) + ", crashes "
         + n(r.at("crashes")) + ", fenced writes " + n(r.at("fenced_writes")) + ", virtual time "
         + n(r.at("virtual_seconds")) + " s\n";
    s += "  duplicates suppressed: " + r.at("duplicates_suppressed").dump() + '\n';
    s += "  reconciliations: " + r.at("reconciliations").dump() + '\n';
    s += "  model calls " + n(r.at("model_calls")) + " (after the write boundary: "
         + n(r.at("model_calls_after_write_boundary")) + ")\n";
    s += "  approvals pending " + n(r.at("approvals_pending")) + ", confirmations pending "
         + n(r.at("confirmations_pending")) + ", dead letters " + n(r.at("dead_letters")) + '\n';
    s += "  states: " + r.at("states").dump() + '\n';
    s += "  provider effects: " + r.at("provider_effects").dump() + ", duplicate effects "
         + n(r.at("duplicate_effects")) + '\n';
    const nlohmann::json &t = r.at("timing");
    char timing[160];
    std::snprintf(timing, sizeof timing, "  %.2f s wall, %.0f runs/s, engine %.0f%% of the work\n",
                  t.at("wall_s").get<double>(), t.at("runs_per_s").get<double>(),
                  100.0 * t.at("engine_share").get<double>());
    s += timing;
    s += std::string("  invariants: ") + (r.at("invariants").at("ok").get<bool>() ? "all hold" : "VIOLATED") + '\n';
    for (const nlohmann::json &i : r.at("invariants").at("invariants")) {
        s += std::string(i.at("ok").get<bool>() ? "    ok    " : "    FAIL  ") + i.at("name").get<std::string>() + " ("
             + n(i.at("checked")) + " checked, " + n(i.at("violations")) + " violations)\n";
        for (const nlohmann::json &e : i.at("examples"))
            s += "            " + e.at("operation").get<std::string>() + ": " + e.at("message").get<std::string>() + '\n';
    }
    if (!s.empty())
        s.pop_back();
    return s;
}

} // namespace idempo::sandbox
