// SPDX-License-Identifier: Apache-2.0
// The sandbox commands: simulated runs, their workers and invariant check, and the benchmarks.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <limits>

#include <unistd.h>

#include <QCoreApplication>
#include <QDateTime>

#include "bench.h"
#include "conninfo.h"
#include "context.h"
#include "driverlease.h"
#include "error.h"
#include "invariantchecker.h"
#include "optionvalue.h"
#include "output.h"
#include "processsandboxrunner.h"
#include "queuebench.h"
#include "sandboxjournal.h"
#include "sandboxrunner.h"
#include "sandboxworker.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

/// The sandbox's namespace: --namespace or $IDEMPO_NAMESPACE when given, else "sandbox", so
/// that simulated runs stay apart from real work in the default namespace.
std::string sandboxNamespace(const Context &c)
{
    if (c.parser.isSet(QStringLiteral("namespace")) ||
        qEnvironmentVariableIsSet("IDEMPO_NAMESPACE"))
        return c.ns;
    return "sandbox";
}

/// How long `worker` and `sandbox run --processes` wait for a lost ledger (--reconnect-deadline).
ReconnectPolicy reconnectPolicy(const Context &c)
{
    ReconnectPolicy policy;
    if (c.parser.isSet(QStringLiteral("reconnect-deadline")))
        policy.deadlineMs = c.secondsOption(QStringLiteral("reconnect-deadline"), 0, 86400);
    return policy;
}

/// A one-line progress bar on stderr, redrawn in place.
void drawProgress(const sandbox::SandboxProgress &p)
{
    char line[160];
    if (p.realTime) {
        std::snprintf(line, sizeof line, "%lld messages queued, %lld SIGKILLs, t+%llds ",
                      static_cast<long long>(p.queued), static_cast<long long>(p.kills),
                      static_cast<long long>(p.virtualMs / 1000));
        printProgress(line);
        return;
    }
    constexpr int Width = 30;
    const int filled = p.runs > 0 ? p.settled * Width / p.runs : 0;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(Width, '.');
    std::snprintf(line, sizeof line, "[%s] %d/%d runs settled, %lld deliveries, virtual t+%llds ",
                  bar.c_str(), p.settled, p.runs, static_cast<long long>(p.deliveries),
                  static_cast<long long>(p.virtualMs / 1000));
    printProgress(line);
}

/// Set by the first SIGTERM or SIGINT during `sandbox run`: the run stops its workers, checks
/// what ran and reports it as cancelled. Only a lock-free atomic store and signal() happen in the
/// handler (both async-signal-safe); a second signal ends the process the default way.
std::atomic<bool> g_stopSandbox{false};
static_assert(std::atomic<bool>::is_always_lock_free);

void requestSandboxStop(int signal)
{
    g_stopSandbox = true;
    std::signal(signal, SIG_DFL);
}

/// `idempo sandbox reset`: clears the sandbox queue of a run that is gone (DriverLease::reset).
int cmdSandboxReset(Context &c)
{
    const std::shared_ptr<LedgerStore> store = openLedger(c.ledgerUrl(), nullptr, c.openMode());
    const auto journal = sandbox::SandboxJournal::open(*store);
    const nlohmann::json r =
        sandbox::DriverLease::reset(*journal, c.queue(), sandbox::SandboxContext::DefaultQueueName);
    const nlohmann::json &previous = r.at("previous_holder");
    c.print(r,
            "sandbox queue '" + r.at("queue").get<std::string>() + "' of " + store->describe() +
                " reset: removed " + r.at("messages_removed").dump() + " messages" +
                (previous.is_null()
                     ? std::string()
                     : " of the run in namespace '" + previous.at("namespace").get<std::string>() +
                           "' (driver " + previous.at("driver").get<std::string>() + ")"));
    return ExitOk;
}

int cmdSandbox(Context &c)
{
    const QString what = c.positional(1, "sandbox subcommand (run or reset)");
    if (what == QLatin1String("reset"))
        return cmdSandboxReset(c);
    if (what != QLatin1String("run"))
        throw UsageError{"unknown subcommand 'sandbox " + escapedText(what.toStdString()) +
                         "': expected run or reset"};
    sandbox::SandboxOptions options;
    const std::string scenario = c.parser.isSet(QStringLiteral("scenario"))
                                     ? c.parser.value(QStringLiteral("scenario")).toStdString()
                                     : std::string("all");
    options.scenarioLabel = scenario;
    if (scenario == "all") {
        for (const sandbox::Scenario &s : sandbox::Scenario::all())
            options.scenarios.push_back(&s);
    } else if (const sandbox::Scenario *s = sandbox::Scenario::find(scenario)) {
        options.scenarios.push_back(s);
    } else {
        std::string known;
        for (const sandbox::Scenario &k : sandbox::Scenario::all())
            known += ", " + k.name();
        throw UsageError{"unknown scenario " + quotedValue(scenario) + "; known: all" + known};
    }
    // The sandbox keeps every run in memory: hence the bound on --runs.
    options.runs = static_cast<int>(
        c.integerOption(QStringLiteral("runs"), 1, sandbox::SandboxOptions::MaxRuns, options.runs));
    options.workers =
        static_cast<int>(c.integerOption(QStringLiteral("workers"), 1, 64, options.workers));
    const bool processes = c.parser.isSet(QStringLiteral("processes"));
    const std::int64_t seed = c.integerOption(QStringLiteral("seed"), 0, MaxWholeNumber, 1);
    const std::string faults = c.parser.isSet(QStringLiteral("faults"))
                                   ? c.parser.value(QStringLiteral("faults")).toStdString()
                                   : std::string("none");
    options.faults = sandbox::FaultPlan::parse(faults, static_cast<std::uint64_t>(seed));
    options.naive = c.parser.isSet(QStringLiteral("naive"));
    options.ns = sandboxNamespace(c);
    const bool bar = !c.json && isatty(STDERR_FILENO);
    if (bar)
        options.progress = drawProgress;
    options.cancelled = [] { return g_stopSandbox.load(); };
    std::signal(SIGTERM, requestSandboxStop);
    std::signal(SIGINT, requestSandboxStop);

    nlohmann::json report;
    if (processes) {
        sandbox::ProcessRunOptions process;
        process.ledgerUrl = c.ledgerUrl();
        process.openMode = c.openMode();
        process.program = QCoreApplication::applicationFilePath();
        process.reconnect = reconnectPolicy(c);
        report = sandbox::ProcessSandboxRunner(options, process).run();
    } else {
        auto clock = std::make_shared<ManualClock>(QDateTime::currentMSecsSinceEpoch());
        sandbox::SandboxRunner runner(
            sandbox::SandboxRunner::openLedger(c.ledgerUrl(), clock, c.openMode()), clock, options);
        report = runner.run();
    }
    if (bar)
        printErr("");
    c.print(report, sandbox::SandboxRunner::reportText(report));
    if (!report.at("invariants").at("ok").get<bool>())
        return ExitRefused;
    // Stopped by a signal: the run did not finish, though nothing it did broke a promise.
    return report.value("cancelled", false) ? ExitTempFail : ExitOk;
}

int cmdCheck(Context &c)
{
    const std::string ns = sandboxNamespace(c);
    const std::shared_ptr<LedgerStore> store = openLedger(c.ledgerUrl(), nullptr, c.openMode());
    const auto journal = sandbox::SandboxJournal::open(*store);
    ListFilter anyOperation;
    anyOperation.ns = ns;
    anyOperation.limit = 1;
    if (!journal->hasRuns(ns) && store->list(anyOperation).empty()) {
        // Nothing checked is not a pass: a mistyped namespace must not read as "all hold".
        throw Error(ErrorCode::NotFound,
                    "namespace '" + ns + "' of " + store->describe() +
                        " holds no sandbox runs and no operations: nothing to check");
    }
    const auto results = sandbox::InvariantChecker(*store, *journal).check(ns);
    nlohmann::json report = sandbox::InvariantChecker::toJson(results);
    report["ledger"] = store->describe();
    report["namespace"] = ns;
    const bool ok = sandbox::InvariantChecker::allHold(results);
    c.print(report, "invariants of namespace '" + ns + "' in " + store->describe() + ": " +
                        (ok ? "all hold" : "VIOLATED") + "\n" +
                        sandbox::InvariantChecker::toText(results) +
                        (ok ? "" : "exit 65: at least one invariant is violated"));
    return ok ? ExitOk : ExitRefused;
}

/// Set by SIGTERM and SIGINT: the worker stops after the message in hand.
std::atomic<bool> g_stopWorker{false};

void requestWorkerStop(int)
{
    g_stopWorker = true;
}

int cmdWorker(Context &c)
{
    sandbox::WorkerOptions options;
    options.ns = sandboxNamespace(c);
    if (c.parser.isSet(QStringLiteral("queue")))
        options.queue = c.parser.value(QStringLiteral("queue")).toStdString();
    options.owner = c.parser.isSet(QStringLiteral("owner"))
                        ? c.parser.value(QStringLiteral("owner")).toStdString()
                        : defaultOwner();
    if (options.owner.empty())
        throw UsageError{"--owner must not be empty"};
    const auto bounded = [&](const char *name, std::int64_t low, std::int64_t high,
                             std::int64_t fallback) {
        return c.integerOption(QString::fromUtf8(name), low, high, fallback);
    };
    options.index = static_cast<int>(bounded("index", 0, 1'000'000, 0));
    options.maxMessages = bounded("max-messages", 0, MaxWholeNumber, 0);
    options.idleExitMs = bounded("idle-exit-ms", 0, 86'400'000, 0);
    options.timings.leaseMs = bounded("lease-ms", 100, 3'600'000, options.timings.leaseMs);
    options.timings.visibilityTimeoutMs =
        bounded("vt-ms", 100, 3'600'000, options.timings.visibilityTimeoutMs);
    const std::int64_t seed = bounded("seed", 0, MaxWholeNumber, 1);
    const std::string faults = c.parser.isSet(QStringLiteral("faults"))
                                   ? c.parser.value(QStringLiteral("faults")).toStdString()
                                   : std::string("none");
    options.faults = sandbox::FaultPlan::parse(faults, static_cast<std::uint64_t>(seed));
    options.naive = c.parser.isSet(QStringLiteral("naive"));
    options.reconnect = reconnectPolicy(c);

    std::signal(SIGTERM, requestWorkerStop);
    std::signal(SIGINT, requestWorkerStop);
    // The event stream is the output, with or without --json: one JSON object per line.
    const auto emit = [](const std::string &line) { printJsonLine(line); };
    sandbox::SandboxWorker worker(openLedger(c.ledgerUrl(), nullptr, c.openMode()),
                                  openQueue(c.ledgerUrl(), nullptr, c.openMode()), options, emit);
    worker.run(g_stopWorker);
    return ExitOk;
}

/// `idempo bench queue`: on PostgreSQL the engine's send + read + ack cycle beside pgmq's own
/// functions; on SQLite send, read and delete beside the same raw statements.
int cmdBenchQueue(Context &c)
{
    if (c.parser.isSet(QStringLiteral("cycles")))
        throw UsageError{"--cycles does not apply to 'bench queue' (--messages does)"};
    QueueBenchOptions options;
    options.messages = static_cast<int>(
        c.integerOption(QStringLiteral("messages"), 1, 1'000'000, options.messages));
    options.workers =
        static_cast<int>(c.integerOption(QStringLiteral("workers"), 1, 64, options.workers));
    options.pgmqSql = c.parser.value(QStringLiteral("pgmq")).toStdString();
    if (!isPostgresAddress(c.ledgerUrl().toStdString())) {
        if (c.parser.isSet(QStringLiteral("workers")) || c.parser.isSet(QStringLiteral("pgmq")))
            throw UsageError{"--workers and --pgmq apply to 'bench queue' on a PostgreSQL ledger"};
    } else if (options.pgmqSql.empty()) {
        throw UsageError{"bench queue on PostgreSQL runs beside pgmq's own functions: give "
                         "--pgmq FILE (pgmq's pgmq.sql, e.g. shared/baselines/pgmq.sql)"};
    }
    const nlohmann::json report =
        benchQueue(openLedger(c.ledgerUrl(), nullptr, c.openMode()), options);
    c.print(report, queueBenchReportText(report));
    return ExitOk;
}

int cmdBench(Context &c)
{
    const QString what = c.positional(1, "what to benchmark (claim or queue)");
    if (what == QLatin1String("queue"))
        return cmdBenchQueue(c);
    if (what != QLatin1String("claim"))
        throw UsageError{"unknown benchmark " + quotedValue(what.toStdString()) +
                         ": expected claim or queue"};
    if (c.parser.isSet(QStringLiteral("messages")))
        throw UsageError{"--messages does not apply to 'bench claim'"};
    BenchOptions options;
    options.cycles = static_cast<int>(c.integerOption(
        QStringLiteral("cycles"), 1, std::numeric_limits<int>::max(), options.cycles));
    options.workers =
        static_cast<int>(c.integerOption(QStringLiteral("workers"), 1, 64, options.workers));
    const nlohmann::json report = benchClaim(c.engine(), options);
    c.print(report, benchReportText(report));
    return ExitOk;
}

} // namespace

void addSandboxCommands(std::map<QString, Command> &table)
{
    table.insert({
        {QStringLiteral("sandbox"),
         {1,
          "sandbox run [--scenario NAME|all] [--runs N] [--workers W] [--processes] [--faults "
          "LIST|all] [--seed S]\n"
          "              [--naive] [--reconnect-deadline S]; sandbox reset",
          "Run simulated multi-agent workflows under injected faults, then check the invariants "
          "(exit 65\n"
          "when one fails): worker threads on a virtual clock on the embedded ledger, or with "
          "--processes\n"
          "'idempo worker' processes on the real clock, killed with SIGKILL at the crash points "
          "and\n"
          "restarted (any ledger; PostgreSQL is the real thing). Scenarios: kyc-onboarding,\n"
          "payment-refund, travel-booking, invoice-email. Namespace 'sandbox' unless --namespace "
          "is\n"
          "given. SIGTERM or SIGINT stops the run: workers finish the message in hand, the report "
          "says\n"
          "cancelled and covers what ran, exit 75. A run killed without a word leaves the sandbox "
          "queue to\n"
          "the next run, which clears it once the killed driver is known gone; 'sandbox reset' "
          "clears it at\n"
          "once. See docs/sandbox.md for faults and rates.",
          {opt("scenario", "A scenario name, or all (default): runs are spread round-robin.",
               "NAME"),
           opt("runs", "Runs to start, 1..1000000 (default 100).", "N"),
           opt("workers", "Worker threads, or worker processes with --processes (default 2).", "W"),
           opt("processes",
               "Run the workers as 'idempo worker' processes and SIGKILL them at crash points."),
           opt("faults", "none (default), all, or a comma list of fault[=rate].", "LIST"),
           opt("seed",
               "Seed of every random choice (default 1): the same seed gives the same report.",
               "S"),
           opt("naive",
               "Use a consumer without the idempotency layer, to count the duplicates it makes."),
           opt("reconnect-deadline",
               "With --processes: how long the driver and its workers wait for a lost "
               "ledger before exit 69, seconds (default 60).",
               "S")},
          cmdSandbox}},
        {QStringLiteral("worker"),
         {0,
          "worker [--queue NAME] [--owner ID] [--max-messages N] [--idle-exit-ms MS] [--faults "
          "LIST] [--seed S]",
          "Consume sandbox envelopes from a queue of the ledger until SIGTERM or SIGINT (then "
          "finish the\n"
          "message in hand): claim, act only on 'claimed', record the outcome and send the next "
          "step's\n"
          "message in one transaction, ack last. At a crash point of --faults it prints a 'crash' "
          "line\n"
          "and blocks until killed. stdout is one JSON object per line (events), with or without "
          "--json.\n"
          "A lost ledger is waited for (a line on stderr says so) up to --reconnect-deadline, then "
          "exit 69.",
          {opt("queue", "The queue to consume (default sandbox).", "NAME"),
           opt("owner", "Lease owner (default host:pid).", "ID"),
           opt("index", "The worker's number, which picks its clock skew (default 0).", "N"),
           opt("max-messages", "Stop after this many deliveries (default: no limit).", "N"),
           opt("idle-exit-ms",
               "Stop after this many milliseconds without a visible message (default: never).",
               "MS"),
           opt("faults", "none (default), all, or a comma list of fault[=rate].", "LIST"),
           opt("seed", "Seed of every fault decision (default 1).", "S"),
           opt("lease-ms", "Lease length, milliseconds (default 2000).", "MS"),
           opt("vt-ms", "Visibility timeout of a read, milliseconds (default 2000).", "MS"),
           opt("naive", "Consume without the idempotency layer."),
           opt("reconnect-deadline",
               "How long to wait for a lost ledger before exit 69, seconds (default 60).", "S")},
          cmdWorker}},
        {QStringLiteral("check"),
         {0,
          "check",
          "Check the sandbox invariants of a namespace ('sandbox' unless --namespace is given) "
          "against\n"
          "the providers' effect journals; each violation names its operation; exit 65 when one "
          "fails,\n"
          "and when the namespace holds no sandbox runs and no operations (nothing to check).",
          {},
          cmdCheck}},
        {QStringLiteral("bench"),
         {1,
          "bench claim|queue [OPTIONS]",
          "Throughput beside the same raw SQL statements, measured in the same run:\n"
          "  claim [--cycles N] [--workers W]  claim/complete/duplicate-claim cycles\n"
          "  queue [--messages N]              queue send, read and delete, one client (SQLite)\n"
          "  queue --pgmq FILE [--messages N] [--workers W]\n"
          "                                    send/read/ack cycles beside pgmq's own functions "
          "(PostgreSQL)",
          {opt("cycles", "claim: claim/complete cycles per run (default 2000).", "N"),
           opt("workers", "claim, queue on PostgreSQL: concurrent workers (default 1).", "W"),
           opt("messages",
               "queue: messages (cycles on PostgreSQL) per side and round (default 2000).", "N"),
           opt("pgmq",
               "queue on PostgreSQL: pgmq's own SQL (pgmq.sql), loaded into a database of its "
               "own for the run.",
               "FILE")},
          cmdBench}},
    });
}

} // namespace idempo::cli
