// SPDX-License-Identifier: Apache-2.0
#include "sandboxsetup.h"

#include <cstdio>
#include <utility>

#include <spdlog/spdlog.h>

#include "error.h"
#include "ledgerstore.h"
#include "sandboxcontext.h"
#include "sandboxrunner.h"

namespace idempo::sandbox {
namespace {

std::string runNumber(int i)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%06d", i);
    return buffer;
}

} // namespace

void requireRunnable(const SandboxOptions &o)
{
    if (o.scenarios.empty() || o.runs < 1 || o.runs > SandboxOptions::MaxRuns || o.workers < 1)
        throw Error(ErrorCode::InvalidArgument, "a sandbox run needs a scenario, runs 1.." +
                                                    std::to_string(SandboxOptions::MaxRuns) +
                                                    " and workers >= 1");
}

std::unique_ptr<SandboxJournal> openFreshJournal(LedgerStore &store, const std::string &ns,
                                                 const std::string &ledgerOption)
{
    auto journal = SandboxJournal::open(store);
    journal->createTables();
    ListFilter anyOperation;
    anyOperation.ns = ns;
    anyOperation.limit = 1;
    if (journal->hasRuns(ns) || !store.list(anyOperation).empty()) {
        throw Error(ErrorCode::InvalidArgument,
                    "namespace '" + ns + "' of " + store.describe() +
                        " already holds operations or sandbox runs; use a fresh " + ledgerOption +
                        " or another --namespace");
    }
    return journal;
}

DriverLease holdSandboxQueue(SandboxContext &ctx, SandboxJournal &journal,
                             const std::string &ledger)
{
    QueueOptions queueOptions;
    queueOptions.maxReads = 20;
    ctx.queue().createQueue(ctx.queueName(), queueOptions);
    return DriverLease(journal, ctx.queue(), ctx.queueName(), ctx.ns(), ledger,
                       [](const std::string &line) { spdlog::warn("{}", line); });
}

std::vector<RunRecord> addPlannedRuns(SandboxContext &ctx, const SandboxOptions &o)
{
    std::vector<RunRecord> records;
    for (int i = 0; i < o.runs; ++i) {
        const Scenario &scenario = *o.scenarios[static_cast<std::size_t>(i) % o.scenarios.size()];
        std::string runId =
            scenario.runPrefix() + "-" + std::to_string(o.faults.seed()) + "-" + runNumber(i);
        records.push_back({o.ns, runId, scenario.name(), o.naive});
        ctx.addRun(scenario, std::move(runId));
    }
    return records;
}

std::string firstEnvelope(SandboxContext &ctx, const RunState &run)
{
    const WorkflowStep &first = run.scenario->steps().front();
    return ctx.envelope(run, first, run.scenario->firstPayload(ctx.plan(), run.runId), "planner",
                        ctx.workerNowMs(0));
}

void addEndFigures(nlohmann::json &report, bool cancelled, std::size_t started,
                   std::int64_t withdrawn)
{
    report["cancelled"] = cancelled;
    report["runs_started"] = started;
    report["runs_withdrawn"] = withdrawn;
}

std::int64_t nanosSince(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start)
        .count();
}

} // namespace idempo::sandbox
