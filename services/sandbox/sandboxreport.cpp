// SPDX-License-Identifier: Apache-2.0
#include "sandboxreport.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "error.h"
#include "invariantchecker.h"
#include "sandboxcontext.h"
#include "sandboxjournal.h"
#include "sandboxrunner.h"

namespace idempo::sandbox {
namespace {

nlohmann::json statesOf(LedgerStore &store, const std::string &ns)
{
    nlohmann::json states = nlohmann::json::object();
    for (int i = 0; i < OperationStateCount; ++i)
        states[std::string(stateName(static_cast<OperationState>(i)))] = 0;
    for (const auto &[state, count] : store.metrics(ns).byState)
        states[std::string(stateName(state))] = count;
    return states;
}

[[noreturn]] void malformed(const std::string &what)
{
    throw Error(ErrorCode::InvalidArgument, "malformed sandbox report: " + what);
}

/// Member `name` of `object`, which sits at `path` (a JSON pointer) of the report.
const nlohmann::json &member(const nlohmann::json &object, const std::string &path,
                             const char *name)
{
    if (!object.is_object())
        malformed((path.empty() ? std::string("the report") : path) + " is not an object");
    const auto it = object.find(name);
    if (it == object.end())
        malformed(path + "/" + name + " is missing");
    return *it;
}

/// `value`, at `path`, as a count: a whole number from 0 that fits an int64.
std::int64_t countAt(const nlohmann::json &value, const std::string &path)
{
    const bool fits = value.is_number_unsigned()
                          ? value.get<std::uint64_t>() <=
                                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                          : value.is_number_integer() && value.get<std::int64_t>() >= 0;
    if (!fits)
        malformed(path + " is not a count (a whole number from 0): " + value.dump());
    return value.get<std::int64_t>();
}

std::int64_t countOf(const nlohmann::json &object, const std::string &path, const char *name)
{
    return countAt(member(object, path, name), path + "/" + name);
}

bool flagOf(const nlohmann::json &object, const std::string &path, const char *name)
{
    const nlohmann::json &v = member(object, path, name);
    if (!v.is_boolean())
        malformed(path + "/" + name + " is not true or false: " + v.dump());
    return v.get<bool>();
}

std::string textOf(const nlohmann::json &object, const std::string &path, const char *name)
{
    const nlohmann::json &v = member(object, path, name);
    if (!v.is_string())
        malformed(path + "/" + name + " is not text: " + v.dump());
    return v.get<std::string>();
}

const nlohmann::json &arrayOf(const nlohmann::json &object, const std::string &path,
                              const char *name)
{
    const nlohmann::json &v = member(object, path, name);
    if (!v.is_array())
        malformed(path + "/" + name + " is not an array");
    return v;
}

/// An object of counts by name ("duplicates_suppressed", "provider_effects", …).
std::map<std::string, std::int64_t> countsOf(const nlohmann::json &object, const char *name)
{
    const std::string path = std::string("/") + name;
    const nlohmann::json &v = member(object, "", name);
    if (!v.is_object())
        malformed(path + " is not an object");
    std::map<std::string, std::int64_t> out;
    for (const auto &[key, value] : v.items())
        out[key] = countAt(value, path + "/" + key);
    return out;
}

SandboxSummary::Invariant invariantOf(const nlohmann::json &i, const std::string &path)
{
    SandboxSummary::Invariant out;
    out.name = textOf(i, path, "name");
    out.ok = flagOf(i, path, "ok");
    out.checked = countOf(i, path, "checked");
    out.violations = countOf(i, path, "violations");
    const nlohmann::json &examples = arrayOf(i, path, "examples");
    for (std::size_t n = 0; n < examples.size(); ++n) {
        const std::string at = path + "/examples/" + std::to_string(n);
        out.examples.push_back(
            {textOf(examples[n], at, "operation"), textOf(examples[n], at, "message")});
    }
    return out;
}

} // namespace

nlohmann::json sandboxReport(SandboxContext &ctx, SandboxJournal &journal, const SandboxOptions &o,
                             std::int64_t deduplicated, const SandboxTiming &timing)
{
    const std::vector<InvariantResult> invariants =
        InvariantChecker(ctx.store(), journal).check(o.ns);
    std::int64_t duplicateEffects = 0;
    nlohmann::json effects = nlohmann::json::object();
    {
        std::map<std::string, int> perOperation;
        std::map<std::string, std::int64_t> perProvider;
        for (const Effect &e : journal.effects(o.ns)) {
            ++perProvider[e.provider];
            if (++perOperation[e.operationKey] > 1)
                ++duplicateEffects;
        }
        for (const auto &[provider, count] : perProvider)
            effects[provider] = count;
    }
    const Counters &c = ctx.counters();
    const auto outcome = [&](ClaimOutcome k) {
        return c.claimOutcomes[static_cast<std::size_t>(k)].load();
    };
    nlohmann::json injected = nlohmann::json::object();
    for (int i = 0; i < FaultCount; ++i)
        if (o.faults.enabled(static_cast<Fault>(i)))
            injected[std::string(FaultPlan::name(static_cast<Fault>(i)))] =
                c.faults[static_cast<std::size_t>(i)].load();
    const nlohmann::json states = statesOf(ctx.store(), o.ns);
    // Provider calls per run, as the runs in this process saw them (thread mode).
    std::int64_t providerCalls = 0;
    std::int64_t mostPerRun = 0;
    for (const RunState &run : ctx.runs()) {
        std::int64_t calls = 0;
        for (const StepState &step : run.steps)
            calls += step.providerCalls;
        providerCalls += calls;
        mostPerRun = std::max(mostPerRun, calls);
    }
    RunFilter halted;
    halted.ns = o.ns;
    halted.state = idempo::RunState::Halted;
    halted.limit = 100'000;
    const double wallS = static_cast<double>(timing.wallNs) / 1e9;
    return {
        {"scenario", o.scenarioLabel},
        {"mode", o.naive ? "naive" : "engine"},
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
          {"budget_exhausted", outcome(ClaimOutcome::BudgetExhausted)},
          {"provider_dedupe", deduplicated}}},
        {"provider_calls", {{"total", providerCalls}, {"most_per_run", mostPerRun}}},
        {"runs_halted", o.naive ? 0 : ctx.store().listRuns(halted).size()},
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
        {"dead_letters", ctx.queue().metrics(std::string(ctx.queueName()) + "_dlq").length},
        {"invariants", InvariantChecker::toJson(invariants)},
        {"timing",
         {{"wall_s", wallS},
          {"runs_per_s", static_cast<double>(o.runs) / std::max(wallS, 1e-9)},
          {"engine_s", static_cast<double>(timing.engineNs) / 1e9},
          {"queue_s", static_cast<double>(timing.queueNs) / 1e9},
          {"busy_s", static_cast<double>(timing.busyNs) / 1e9},
          {"stalled_s", static_cast<double>(timing.stalledNs) / 1e9},
          {"engine_share", timing.busyNs > 0 ? static_cast<double>(timing.engineNs) /
                                                   static_cast<double>(timing.busyNs)
                                             : 0.0}}},
    };
}

std::int64_t withdrawUnsettledRuns(LedgerStore &store, SandboxJournal &journal,
                                   const std::string &ns)
{
    std::set<std::string> unsettled;
    for (const InvariantResult &r : InvariantChecker(store, journal).check(ns))
        if (r.name == "no_request_lost")
            for (const Violation &v : r.violations)
                unsettled.insert(v.operation.substr(0, v.operation.find(':')));
    journal.removeRuns(ns, {unsettled.begin(), unsettled.end()});
    return static_cast<std::int64_t>(unsettled.size());
}

std::string sandboxReportText(const nlohmann::json &r)
{
    const auto n = [](const nlohmann::json &v) { return v.dump(); };
    std::string s =
        "sandbox " + r.at("mode").get<std::string>() +
        " run: " + r.at("scenario").get<std::string>() + ", " + n(r.at("runs")) + " runs, " +
        n(r.at("workers")) + (r.contains("kills") ? " worker processes" : " workers") + ", seed " +
        n(r.at("seed")) +
        "\n  faults: " + (r.at("faults").empty() ? std::string("none") : r.at("faults").dump()) +
        '\n';
    if (r.value("cancelled", false))
        s += "  CANCELLED before every run settled: the figures and invariants cover what ran (" +
             n(r.value("runs_withdrawn", 0)) + " unsettled runs withdrawn)\n";
    s += "  faults injected: " + r.at("faults_injected").dump() + '\n';
    s += "  deliveries " + n(r.at("deliveries")) + ", retries " + n(r.at("retries")) +
         ", crashes " + n(r.at("crashes")) + ", fenced writes " + n(r.at("fenced_writes"));
    if (r.contains("kills"))
        s += ", SIGKILLs " + n(r.at("kills")) + ", restarts " + n(r.at("restarts"));
    if (r.contains("virtual_seconds"))
        s += ", virtual time " + n(r.at("virtual_seconds")) + " s";
    s += '\n';
    s += "  duplicates suppressed: " + r.at("duplicates_suppressed").dump() + '\n';
    s += "  reconciliations: " + r.at("reconciliations").dump() + '\n';
    s += "  model calls " + n(r.at("model_calls")) +
         " (after the write boundary: " + n(r.at("model_calls_after_write_boundary")) + ")\n";
    s += "  approvals pending " + n(r.at("approvals_pending")) + ", confirmations pending " +
         n(r.at("confirmations_pending")) + ", dead letters " + n(r.at("dead_letters")) + '\n';
    s += "  states: " + r.at("states").dump() + '\n';
    s += "  provider effects: " + r.at("provider_effects").dump() + ", duplicate effects " +
         n(r.at("duplicate_effects")) + '\n';
    const nlohmann::json &t = r.at("timing");
    char timing[160];
    std::snprintf(timing, sizeof timing, "  %.2f s wall, %.0f runs/s, engine %.0f%% of the work\n",
                  t.at("wall_s").get<double>(), t.at("runs_per_s").get<double>(),
                  100.0 * t.at("engine_share").get<double>());
    s += timing;
    s += std::string("  invariants: ") +
         (r.at("invariants").at("ok").get<bool>() ? "all hold" : "VIOLATED") + '\n';
    for (const nlohmann::json &i : r.at("invariants").at("invariants")) {
        s += std::string(i.at("ok").get<bool>() ? "    ok    " : "    FAIL  ") +
             i.at("name").get<std::string>() + " (" + n(i.at("checked")) + " checked, " +
             n(i.at("violations")) + " violations)\n";
        for (const nlohmann::json &e : i.at("examples"))
            s += "            " + e.at("operation").get<std::string>() + ": " +
                 e.at("message").get<std::string>() + '\n';
    }
    if (!s.empty())
        s.pop_back();
    return s;
}

SandboxSummary SandboxSummary::read(const nlohmann::json &r)
{
    SandboxSummary s;
    const nlohmann::json &invariants = member(r, "", "invariants");
    s.ok = flagOf(invariants, "/invariants", "ok");
    const nlohmann::json &list = arrayOf(invariants, "/invariants", "invariants");
    for (std::size_t n = 0; n < list.size(); ++n)
        s.invariants.push_back(invariantOf(list[n], "/invariants/invariants/" + std::to_string(n)));
    const std::int64_t runs = countOf(r, "", "runs");
    if (runs > std::numeric_limits<int>::max())
        malformed("/runs is out of range: " + std::to_string(runs));
    s.runs = static_cast<int>(runs);
    const nlohmann::json &seed = member(r, "", "seed");
    if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<std::int64_t>() >= 0))
        malformed("/seed is not a whole number from 0: " + seed.dump());
    s.seed = seed.get<std::uint64_t>();
    s.deliveries = countOf(r, "", "deliveries");
    s.duplicatesSuppressed = countsOf(r, "duplicates_suppressed");
    s.providerEffects = countsOf(r, "provider_effects");
    s.duplicateEffects = countOf(r, "", "duplicate_effects");
    s.faultsInjected = countsOf(r, "faults_injected");
    s.retries = countOf(r, "", "retries");
    s.crashes = countOf(r, "", "crashes");
    s.fencedWrites = countOf(r, "", "fenced_writes");
    s.approvalsPending = countOf(r, "", "approvals_pending");
    s.confirmationsPending = countOf(r, "", "confirmations_pending");
    if (r.contains("virtual_seconds"))
        s.virtualSeconds = countOf(r, "", "virtual_seconds");
    const nlohmann::json &wall = member(member(r, "", "timing"), "/timing", "wall_s");
    if (!wall.is_number())
        malformed("/timing/wall_s is not a number: " + wall.dump());
    s.wallSeconds = wall.get<double>();
    s.cancelled = flagOf(r, "", "cancelled");
    return s;
}

} // namespace idempo::sandbox
