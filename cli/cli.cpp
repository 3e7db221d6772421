// SPDX-License-Identifier: Apache-2.0
#include "cli.h"

#include "approvecommand.h"
#include "auditverify.h"
#include "bench.h"
#include "dlqreplaycommand.h"
#include "driverlease.h"
#include "guardsettingcommand.h"
#include "helptext.h"
#include "journallookup.h"
#include "reconcilecommand.h"
#include "engine.h"
#include "error.h"
#include "invariantchecker.h"
#include "recordjson.h"
#include "ledgerfactory.h"
#include "optionvalue.h"
#include "output.h"
#include "queuebench.h"
#include "queueenvelope.h"
#include "queuename.h"
#include "queuerules.h"
#include "sandboxjournal.h"
#include "processsandboxrunner.h"
#include "sandboxrunner.h"
#include "sandboxworker.h"
#include "textescape.h"
#include "usageerror.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QStringDecoder>

#include <unistd.h>

namespace idempo::cli {
namespace {

/// The longest duration an option takes (about 31 years): far beyond any real use, and its
/// milliseconds added to any clock reading still fit in 64 bits.
constexpr double MaxSeconds = 1e9;
/// A lease as the engine takes it: 1 ms to 24 h.
constexpr double MinLeaseSeconds = 0.001;
constexpr double MaxLeaseSeconds = Engine::MaxLeaseMs / 1000.0;

class Context final
{
public:
    QCommandLineParser parser;
    bool json = false;
    std::string ns = "default";

    QString ledgerUrl() const
    {
        QString url = parser.value(QStringLiteral("ledger"));
        if (url.isEmpty())
            url = qEnvironmentVariable("IDEMPO_LEDGER");
        if (url.isEmpty())
            url = defaultLedgerUrl();
        return url;
    }

    /// Only `init` and the embedded default may create a ledger file; a named one must exist.
    /// Commands that only read open an existing ledger read-only, so that they also work on one
    /// nobody may write (an auditor's copy).
    OpenMode openMode() const
    {
        const bool named = parser.isSet(QStringLiteral("ledger")) || !qEnvironmentVariableIsEmpty("IDEMPO_LEDGER");
        const QStringList args = parser.positionalArguments();
        const QString command = args.value(0);
        const QString sub = args.value(1);
        const bool reads = command == QLatin1String("show") || command == QLatin1String("history")
                           || command == QLatin1String("list") || command == QLatin1String("metrics")
                           || command == QLatin1String("check")
                           || (command == QLatin1String("audit")
                               && (sub == QLatin1String("verify") || sub == QLatin1String("list")
                                   || sub == QLatin1String("export")))
                           || (command == QLatin1String("queue")
                               && (sub == QLatin1String("list") || sub == QLatin1String("metrics")))
                           || (command == QLatin1String("dlq") && sub == QLatin1String("list"));
        if (reads && (named || QFileInfo::exists(defaultLedgerUrl().mid(7))))
            return OpenMode::ReadOnly;
        return !named || command == QLatin1String("init") ? OpenMode::CreateIfMissing : OpenMode::OpenExisting;
    }

    Engine &engine()
    {
        if (!m_engine) {
            Engine::Settings settings;
            if (parser.isSet(QStringLiteral("retention")))
                settings.retentionMs = secondsOption(QStringLiteral("retention"),
                                                     Engine::MinRetentionMs / 1000.0, MaxSeconds);
            m_engine = std::make_unique<Engine>(openLedger(ledgerUrl(), nullptr, openMode()), settings, RetryPolicy{});
        }
        return *m_engine;
    }

    MessageQueue &queue()
    {
        if (!m_queue)
            m_queue = openQueue(ledgerUrl(), nullptr, openMode());
        return *m_queue;
    }

    QString positional(int index, const char *name) const
    {
        const QStringList args = parser.positionalArguments();
        if (index >= args.size())
            throw UsageError{std::string("missing ") + name};
        return args.at(index);
    }

    std::string key() const { return positional(1, "KEY").toStdString(); }

    /// A whole-number option within [low, high] (optionvalue.h refuses anything else).
    std::int64_t integerOption(const QString &name, std::int64_t low, std::int64_t high) const
    {
        return parseWholeNumber("--" + name.toStdString(), parser.value(name).toStdString(), low, high);
    }

    /// Whole-number option `name` when given, else `fallback`.
    std::int64_t integerOption(const QString &name, std::int64_t low, std::int64_t high,
                               std::int64_t fallback) const
    {
        return parser.isSet(name) ? integerOption(name, low, high) : fallback;
    }

    /// Seconds (may be fractional) within [low, high] → milliseconds.
    std::int64_t secondsOption(const QString &name, double low, double high) const
    {
        return parseSeconds("--" + name.toStdString(), parser.value(name).toStdString(), low, high);
    }

    std::int64_t token() const
    {
        if (!parser.isSet(QStringLiteral("token")))
            throw UsageError{"missing --token (the fencing token the claim returned)"};
        return integerOption(QStringLiteral("token"), 1, MaxWholeNumber);
    }

    /// A JSON argument: inline text, `@FILE`, or `@-` for standard input.
    std::string jsonArgument(const QString &name) const
    {
        const QString value = parser.value(name);
        if (!value.startsWith(QLatin1Char('@')))
            return value.toStdString();
        QFile file;
        const QString path = value.mid(1);
        const bool opened = path == QLatin1String("-") ? file.open(stdin, QIODevice::ReadOnly)
                                                       : (file.setFileName(path), file.open(QIODevice::ReadOnly));
        if (!opened)
            throw UsageError{"cannot read --" + name.toStdString() + " file '" + path.toStdString()
                             + "': " + file.errorString().toStdString()};
        // One byte over the limit is enough for the engine to refuse it; /dev/zero must not fill memory.
        return file.read(static_cast<qint64>(Engine::Settings{}.maxPayloadBytes) + 1).toStdString();
    }

    void print(const nlohmann::json &j, const std::string &human) const
    {
        if (json)
            printJson(j);
        else
            printOut(human);
    }

private:
    std::unique_ptr<Engine> m_engine;
    std::shared_ptr<MessageQueue> m_queue;
};

std::string when(std::optional<std::int64_t> ms)
{
    const auto j = timestampJson(ms);
    return j.is_null() ? std::string("-") : j.get<std::string>();
}

std::string describe(const Operation &op)
{
    std::string s = op.key + "  " + std::string(stateName(op.state)) + "  kind=" + std::string(toolKindName(op.kind))
                    + "  token=" + std::to_string(op.fencingToken) + "  attempt=" + std::to_string(op.attempt) + "/"
                    + std::to_string(op.maxAttempts);
    if (op.value)
        s += "  value=" + amountText(*op.value);
    if (op.state == OperationState::Dispatching)
        s += "  owner=" + escapedText(op.leaseOwner) + "  lease_until=" + when(op.leaseExpiresAtMs);
    if (op.nextAttemptAtMs)
        s += "  next_attempt=" + when(op.nextAttemptAtMs);
    if (op.errorClass)
        s += "  error=" + std::string(errorClassName(*op.errorClass))
             + (op.errorDetail.empty() ? "" : ": " + escapedText(op.errorDetail));
    return s;
}

int exitFor(ClaimOutcome outcome)
{
    switch (outcome) {
    case ClaimOutcome::Claimed:
    case ClaimOutcome::Replayed:
        return ExitOk;
    case ClaimOutcome::PayloadMismatch:
        return ExitRefused;
    case ClaimOutcome::InProgress:
    case ClaimOutcome::RetryLater:
    case ClaimOutcome::ReconcileRequired:
        return ExitTempFail;
    }
    return ExitInternal;
}

int exitFor(ErrorCode code)
{
    switch (code) {
    case ErrorCode::InvalidArgument:
        return ExitUsage;
    case ErrorCode::LedgerUnavailable:
    case ErrorCode::SchemaMismatch:
        return ExitUnavailable;
    case ErrorCode::LedgerBusy:
        return ExitTempFail;
    case ErrorCode::Internal:
        return ExitInternal;
    default:
        return ExitRefused;
    }
}

using Handler = std::function<int(Context &)>;

struct Command
{
    int arguments; ///< positional arguments after the command word
    const char *synopsis;
    const char *summary;
    std::vector<QCommandLineOption> options;
    Handler handler;
};

/// The command table's texts are UTF-8 source literals.
QCommandLineOption opt(const char *name, const char *help, const char *valueName = nullptr)
{
    return valueName ? QCommandLineOption(QString::fromUtf8(name), QString::fromUtf8(help), QString::fromUtf8(valueName))
                     : QCommandLineOption(QString::fromUtf8(name), QString::fromUtf8(help));
}

int cmdInit(Context &c)
{
    LedgerStore &store = c.engine().store();
    store.migrate();
    const int version = store.schemaVersion();
    c.print({{"ledger", store.describe()}, {"schema_version", version}},
            "ledger " + store.describe() + " ready (schema version " + std::to_string(version) + ")");
    return ExitOk;
}

int cmdClaim(Context &c)
{
    ClaimInput in;
    in.ns = c.ns;
    in.key = c.key();
    if (!c.parser.isSet(QStringLiteral("payload")))
        throw UsageError{"missing --payload JSON (or @FILE)"};
    in.payloadJson = c.jsonArgument(QStringLiteral("payload"));
    if (c.parser.isSet(QStringLiteral("kind"))) {
        const auto kind = parseToolKind(c.parser.value(QStringLiteral("kind")).toStdString());
        if (!kind)
            throw UsageError{"--kind must be read, idempotent_write or protected_write, not "
                             + quotedValue(c.parser.value(QStringLiteral("kind")).toStdString())};
        in.kind = *kind;
    }
    in.owner = c.parser.value(QStringLiteral("owner")).toStdString();
    if (c.parser.isSet(QStringLiteral("lease")))
        in.leaseMs = c.secondsOption(QStringLiteral("lease"), MinLeaseSeconds, MaxLeaseSeconds);
    in.runId = c.parser.value(QStringLiteral("run")).toStdString();
    in.stepId = c.parser.value(QStringLiteral("step")).toStdString();
    in.target = c.parser.value(QStringLiteral("target")).toStdString();
    if (c.parser.isSet(QStringLiteral("max-attempts")))
        in.maxAttempts = static_cast<int>(c.integerOption(QStringLiteral("max-attempts"), 1, Engine::MaxAttempts));
    in.requiresApproval = c.parser.isSet(QStringLiteral("requires-approval"));
    if (c.parser.isSet(QStringLiteral("value")))
        in.value = parseAmount(c.parser.value(QStringLiteral("value")).toStdString());
    for (const QString &list : c.parser.values(QStringLiteral("fingerprint-fields")))
        for (const QString &pointer : list.split(QLatin1Char(','), Qt::SkipEmptyParts))
            in.fingerprintFields.push_back(pointer.trimmed().toStdString());

    const ClaimResult result = c.engine().claim(in);
    const Operation &op = result.operation;
    std::string human = std::string(claimOutcomeName(result.outcome)) + "  " + describe(op);
    if (result.outcome == ClaimOutcome::Replayed && !op.result.empty())
        human += "\nresult: " + escapedJson(op.result);
    c.print(claimJson(result), human);
    return exitFor(result.outcome);
}

int cmdComplete(Context &c)
{
    const Operation op = c.engine().complete(c.ns, c.key(), c.token(), c.jsonArgument(QStringLiteral("result")),
                                             c.jsonArgument(QStringLiteral("receipt")));
    c.print(operationJson(op), describe(op));
    return ExitOk;
}

int cmdFail(Context &c)
{
    if (!c.parser.isSet(QStringLiteral("class")))
        throw UsageError{"missing --class (transient, rate_limited, validation, auth, policy_denied, unknown_outcome)"};
    const auto errorClass = parseErrorClass(c.parser.value(QStringLiteral("class")).toStdString());
    if (!errorClass)
        throw UsageError{"unknown --class " + quotedValue(c.parser.value(QStringLiteral("class")).toStdString())};
    std::optional<std::int64_t> retryAfter;
    if (c.parser.isSet(QStringLiteral("retry-after")))
        retryAfter = c.secondsOption(QStringLiteral("retry-after"), 0, MaxSeconds);
    const Operation op = c.engine().fail(c.ns, c.key(), c.token(), *errorClass,
                                         c.parser.value(QStringLiteral("detail")).toStdString(), retryAfter);
    c.print(operationJson(op), describe(op));
    return ExitOk;
}

int cmdHeartbeat(Context &c)
{
    std::optional<std::int64_t> lease;
    if (c.parser.isSet(QStringLiteral("lease")))
        lease = c.secondsOption(QStringLiteral("lease"), MinLeaseSeconds, MaxLeaseSeconds);
    const Operation op = c.engine().heartbeat(c.ns, c.key(), c.token(), lease);
    c.print(operationJson(op), describe(op));
    return ExitOk;
}

int cmdShow(Context &c)
{
    const Operation op = c.engine().get(c.ns, c.key());
    std::string human = describe(op) + "\nrun=" + op.runId + " step=" + op.stepId + " fingerprint=" + op.fingerprint
                        + "\npayload: " + escapedJson(op.payload);
    if (!op.result.empty())
        human += "\nresult: " + escapedJson(op.result);
    if (!op.receipt.empty())
        human += "\nreceipt: " + escapedJson(op.receipt);
    c.print(operationJson(op), human);
    return ExitOk;
}

int cmdHistory(Context &c)
{
    const std::string key = c.key();
    const Operation op = c.engine().get(c.ns, key);
    nlohmann::json events = nlohmann::json::array();
    std::string human;
    for (const OperationEvent &e : c.engine().store().history(c.ns, key)) {
        events.push_back(eventJson(e));
        human += when(e.atMs) + "  " + (e.fromState ? std::string(stateName(*e.fromState)) : std::string("(new)"))
                 + " -> " + std::string(stateName(e.toState)) + "  token=" + std::to_string(e.fencingToken)
                 + "  attempt=" + std::to_string(e.attempt) + "  " + escapedText(e.actor)
                 + (e.detail.empty() ? "" : "  " + escapedText(e.detail)) + '\n';
    }
    if (!human.empty())
        human.pop_back();
    c.print({{"key", op.key}, {"namespace", op.ns}, {"events", events}}, human);
    return ExitOk;
}

int cmdList(Context &c)
{
    ListFilter filter;
    filter.ns = c.ns;
    if (c.parser.isSet(QStringLiteral("state"))) {
        filter.state = parseState(c.parser.value(QStringLiteral("state")).toStdString());
        if (!filter.state)
            throw UsageError{"unknown --state " + quotedValue(c.parser.value(QStringLiteral("state")).toStdString())};
    }
    filter.runId = c.parser.value(QStringLiteral("run")).toStdString();
    filter.keyPrefix = c.parser.value(QStringLiteral("key-prefix")).toStdString();
    filter.afterId = c.integerOption(QStringLiteral("after"), 0, MaxWholeNumber, 0);
    filter.limit = static_cast<int>(c.integerOption(QStringLiteral("limit"), 1, 10'000, 50));
    const auto ops = c.engine().store().list(filter);
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const Operation &op : ops) {
        rows.push_back(operationJson(op));
        human += describe(op) + '\n';
    }
    const bool full = static_cast<int>(ops.size()) == filter.limit;
    nlohmann::json next = full ? nlohmann::json(ops.back().id) : nlohmann::json();
    if (full)
        human += "(more: --after " + std::to_string(ops.back().id) + ")\n";
    if (!human.empty())
        human.pop_back();
    c.print({{"operations", rows}, {"next_after", next}}, human.empty() ? "no operations" : human);
    return ExitOk;
}

int cmdPurge(Context &c)
{
    const std::int64_t purged = c.engine().store().purgeExpired(c.ns);
    c.print({{"purged", purged}}, "purged " + std::to_string(purged) + " expired operation(s)");
    return ExitOk;
}

int cmdMetrics(Context &c)
{
    LedgerStore &store = c.engine().store();
    const nlohmann::json m = metricsJson(store.metrics(c.ns), store.nowMs());
    std::string human;
    for (const auto &[state, count] : m["operations_by_state"].items())
        human += state + ": " + count.dump() + '\n';
    human += "suppressions: " + m["suppressions_total"].dump() + "  leases live/lapsed: " + m["leases_live"].dump()
             + "/" + m["leases_lapsed"].dump();
    c.print(m, human);
    return ExitOk;
}

/// The sandbox's namespace: --namespace or $IDEMPO_NAMESPACE when given, else "sandbox", so
/// that simulated runs stay apart from real work in the default namespace.
std::string sandboxNamespace(const Context &c)
{
    if (c.parser.isSet(QStringLiteral("namespace")) || qEnvironmentVariableIsSet("IDEMPO_NAMESPACE"))
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
    std::snprintf(line, sizeof line, "[%s] %d/%d runs settled, %lld deliveries, virtual t+%llds ", bar.c_str(),
                  p.settled, p.runs, static_cast<long long>(p.deliveries), static_cast<long long>(p.virtualMs / 1000));
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
    c.print(r, "sandbox queue '" + r.at("queue").get<std::string>() + "' of " + store->describe() + " reset: removed "
                   + r.at("messages_removed").dump() + " messages"
                   + (previous.is_null() ? std::string()
                                         : " of the run in namespace '" + previous.at("namespace").get<std::string>()
                                               + "' (driver " + previous.at("driver").get<std::string>() + ")"));
    return ExitOk;
}

int cmdSandbox(Context &c)
{
    const QString what = c.positional(1, "sandbox subcommand (run or reset)");
    if (what == QLatin1String("reset"))
        return cmdSandboxReset(c);
    if (what != QLatin1String("run"))
        throw UsageError{"unknown subcommand 'sandbox " + escapedText(what.toStdString()) + "': expected run or reset"};
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
    options.workers = static_cast<int>(c.integerOption(QStringLiteral("workers"), 1, 64, options.workers));
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
        sandbox::SandboxRunner runner(sandbox::SandboxRunner::openLedger(c.ledgerUrl(), clock, c.openMode()), clock,
                                      options);
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
        throw Error(ErrorCode::NotFound, "namespace '" + ns + "' of " + store->describe()
                                             + " holds no sandbox runs and no operations: nothing to check");
    }
    const auto results = sandbox::InvariantChecker(*store, *journal).check(ns);
    nlohmann::json report = sandbox::InvariantChecker::toJson(results);
    report["ledger"] = store->describe();
    report["namespace"] = ns;
    const bool ok = sandbox::InvariantChecker::allHold(results);
    c.print(report, "invariants of namespace '" + ns + "' in " + store->describe() + ": "
                        + (ok ? "all hold" : "VIOLATED") + "\n" + sandbox::InvariantChecker::toText(results)
                        + (ok ? "" : "exit 65: at least one invariant is violated"));
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
    options.owner = c.parser.isSet(QStringLiteral("owner")) ? c.parser.value(QStringLiteral("owner")).toStdString()
                                                            : defaultOwner();
    if (options.owner.empty())
        throw UsageError{"--owner must not be empty"};
    const auto bounded = [&](const char *name, std::int64_t low, std::int64_t high, std::int64_t fallback) {
        return c.integerOption(QString::fromUtf8(name), low, high, fallback);
    };
    options.index = static_cast<int>(bounded("index", 0, 1'000'000, 0));
    options.maxMessages = bounded("max-messages", 0, MaxWholeNumber, 0);
    options.idleExitMs = bounded("idle-exit-ms", 0, 86'400'000, 0);
    options.timings.leaseMs = bounded("lease-ms", 100, 3'600'000, options.timings.leaseMs);
    options.timings.visibilityTimeoutMs = bounded("vt-ms", 100, 3'600'000, options.timings.visibilityTimeoutMs);
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

/// `idempo bench queue`: send, read and delete throughput beside the same raw statements.
int cmdBenchQueue(Context &c)
{
    for (const QString &other : {QStringLiteral("cycles"), QStringLiteral("workers")})
        if (c.parser.isSet(other))
            throw UsageError{"--" + other.toStdString() + " does not apply to 'bench queue'"};
    QueueBenchOptions options;
    options.messages = static_cast<int>(c.integerOption(QStringLiteral("messages"), 1, 1'000'000, options.messages));
    const nlohmann::json report = benchQueue(openLedger(c.ledgerUrl(), nullptr, c.openMode()), options);
    c.print(report, queueBenchReportText(report));
    return ExitOk;
}

int cmdBench(Context &c)
{
    const QString what = c.positional(1, "what to benchmark (claim or queue)");
    if (what == QLatin1String("queue"))
        return cmdBenchQueue(c);
    if (what != QLatin1String("claim"))
        throw UsageError{"unknown benchmark " + quotedValue(what.toStdString()) + ": expected claim or queue"};
    if (c.parser.isSet(QStringLiteral("messages")))
        throw UsageError{"--messages does not apply to 'bench claim'"};
    BenchOptions options;
    options.cycles = static_cast<int>(
        c.integerOption(QStringLiteral("cycles"), 1, std::numeric_limits<int>::max(), options.cycles));
    options.workers = static_cast<int>(c.integerOption(QStringLiteral("workers"), 1, 64, options.workers));
    const nlohmann::json report = benchClaim(c.engine(), options);
    c.print(report, benchReportText(report));
    return ExitOk;
}

/// A subcommand of `idempo queue` / `idempo dlq`. The command's parser knows every
/// subcommand's options; each subcommand refuses the others' instead of ignoring them.
struct Subcommand
{
    int arguments;       ///< positional arguments after the subcommand word
    QStringList options; ///< the command's options this subcommand takes
    Handler handler;
};

int dispatch(Context &c, const std::string &command, const std::map<QString, Subcommand> &subcommands)
{
    const QString word = c.positional(1, "subcommand");
    const auto found = subcommands.find(word);
    if (found == subcommands.end())
        throw UsageError{"unknown subcommand '" + command + " " + escapedText(word.toStdString()) + "'"};
    const Subcommand &sub = found->second;
    const QStringList positionals = c.parser.positionalArguments();
    if (positionals.size() > sub.arguments + 2)
        throw UsageError{"unexpected argument " + quotedValue(positionals.at(sub.arguments + 2).toStdString())};
    for (const auto &[otherWord, other] : subcommands)
        for (const QString &name : other.options)
            if (c.parser.isSet(name) && !sub.options.contains(name))
                throw UsageError{"--" + name.toStdString() + " does not apply to '" + command + " "
                                 + word.toStdString() + "'"};
    return sub.handler(c);
}

std::string queueName(const Context &c) { return c.positional(2, "NAME").toStdString(); }

std::int64_t messageId(const Context &c)
{
    return parseWholeNumber("MSG_ID", c.positional(3, "MSG_ID").toStdString(), 1, MaxWholeNumber);
}

/// --limit for a browsing subcommand: 1..MaxQueueBatch, default 50.
int pageLimit(const Context &c)
{
    return static_cast<int>(c.integerOption(QStringLiteral("limit"), 1, MaxQueueBatch, 50));
}

std::int64_t afterId(const Context &c)
{
    return c.integerOption(QStringLiteral("after"), 0, MaxWholeNumber, 0);
}

nlohmann::json queueMessageJson(const QueueMessage &m)
{
    return {{"msg_id", m.msgId},
            {"read_ct", m.readCount},
            {"enqueued_at", timestampJson(m.enqueuedAtMs)},
            {"last_read_at", timestampJson(m.lastReadAtMs)},
            {"vt", timestampJson(m.vtMs)},
            {"message", nlohmann::json::parse(m.message)},
            {"headers", m.headers.empty() ? nlohmann::json() : nlohmann::json::parse(m.headers)}};
}

std::string describe(const QueueMessage &m)
{
    return "msg " + std::to_string(m.msgId) + "  read_ct=" + std::to_string(m.readCount) + "  vt=" + when(m.vtMs)
           + "  " + escapedJson(m.message) + (m.headers.empty() ? "" : "  headers=" + escapedJson(m.headers));
}

int cmdQueueCreate(Context &c)
{
    QueueOptions options;
    options.maxReads = static_cast<int>(
        c.integerOption(QStringLiteral("max-reads"), 1, std::numeric_limits<int>::max(), options.maxReads));
    const QueueInfo info = c.queue().createQueue(queueName(c), options);
    c.print({{"queue", info.name},
             {"max_reads", info.maxReads.value_or(0)},
             {"dead_letter_queue", info.deadLetterQueue},
             {"created_at", timestampJson(info.createdAtMs)}},
            "queue " + info.name + " ready: max reads " + std::to_string(info.maxReads.value_or(0))
                + ", dead letters go to " + info.deadLetterQueue);
    return ExitOk;
}

/// `queue send --envelope`: the message must be an envelope as `worker` and `dlq replay` read it
/// (docs/envelope.md, resources/schema/envelope.schema.json), judged by the engine's own parser.
void requireEnvelope(const std::string &message)
{
    const nlohmann::json parsed = nlohmann::json::parse(message, nullptr, false);
    if (parsed.is_discarded())
        throw Error(ErrorCode::InvalidJson, "--envelope: the message is not JSON text");
    try {
        QueueEnvelope::fromJson(parsed);
    } catch (const Error &e) {
        throw Error(e.code() == ErrorCode::InvalidKey ? ErrorCode::InvalidKey : ErrorCode::InvalidJson,
                    std::string("--envelope: the message is not a queue envelope (docs/envelope.md): ") + e.what());
    }
}

int cmdQueueSend(Context &c)
{
    const std::string name = queueName(c);
    if (!c.parser.isSet(QStringLiteral("message")))
        throw UsageError{"missing --message JSON (or @FILE)"};
    const std::string message = c.jsonArgument(QStringLiteral("message"));
    if (c.parser.isSet(QStringLiteral("envelope")))
        requireEnvelope(message);
    const std::string headers =
        c.parser.isSet(QStringLiteral("headers")) ? c.jsonArgument(QStringLiteral("headers")) : std::string();
    const std::int64_t delayMs =
        c.parser.isSet(QStringLiteral("delay")) ? c.secondsOption(QStringLiteral("delay"), 0, MaxSeconds) : 0;
    const std::int64_t msgId = c.queue().send(name, message, headers, delayMs);
    c.print({{"queue", name}, {"msg_id", msgId}}, "sent message " + std::to_string(msgId) + " to " + name);
    return ExitOk;
}

int cmdQueueRead(Context &c)
{
    const std::string name = queueName(c);
    const std::int64_t vtMs =
        c.parser.isSet(QStringLiteral("vt")) ? c.secondsOption(QStringLiteral("vt"), 0, MaxSeconds) : 30'000;
    const std::int64_t quantity = c.integerOption(QStringLiteral("qty"), 1, MaxQueueBatch, 1);
    const auto messages = c.queue().read(name, vtMs, static_cast<int>(quantity));
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const QueueMessage &m : messages) {
        rows.push_back(queueMessageJson(m));
        human += describe(m) + '\n';
    }
    if (!human.empty())
        human.pop_back();
    c.print({{"queue", name}, {"messages", rows}}, human.empty() ? "no visible message in " + name : human);
    return ExitOk;
}

int cmdQueueAck(Context &c)
{
    const std::string name = queueName(c);
    const std::int64_t msgId = messageId(c);
    if (!c.queue().deleteMessage(name, msgId))
        throw Error(ErrorCode::NotFound, "queue '" + name + "' holds no message " + std::to_string(msgId));
    c.print({{"queue", name}, {"msg_id", msgId}, {"deleted", true}},
            "deleted message " + std::to_string(msgId) + " from " + name);
    return ExitOk;
}

int cmdQueueArchive(Context &c)
{
    const std::string name = queueName(c);
    const std::int64_t msgId = messageId(c);
    if (!c.queue().archive(name, msgId))
        throw Error(ErrorCode::NotFound, "queue '" + name + "' holds no message " + std::to_string(msgId));
    c.print({{"queue", name}, {"msg_id", msgId}, {"archived", true}},
            "archived message " + std::to_string(msgId) + " of " + name);
    return ExitOk;
}

int cmdQueueNack(Context &c)
{
    const std::string name = queueName(c);
    const std::int64_t msgId = messageId(c);
    if (!c.parser.isSet(QStringLiteral("class")))
        throw UsageError{"missing --class (transient, rate_limited, validation, auth, policy_denied, unknown_outcome)"};
    const auto errorClass = parseErrorClass(c.parser.value(QStringLiteral("class")).toStdString());
    if (!errorClass)
        throw UsageError{"unknown --class " + quotedValue(c.parser.value(QStringLiteral("class")).toStdString())};
    const std::string detail = c.parser.value(QStringLiteral("detail")).toStdString();
    const std::int64_t retryMs = c.parser.isSet(QStringLiteral("retry-after"))
                                     ? c.secondsOption(QStringLiteral("retry-after"), 0, MaxSeconds)
                                     : 0;
    const QueueMessage m = c.queue().nack(name, msgId, *errorClass, detail, retryMs);
    c.print({{"queue", name},
             {"message", queueMessageJson(m)},
             {"error_class", errorClassName(*errorClass)},
             {"error_detail", detail}},
            "message " + std::to_string(msgId) + " of " + name + " failed (" + std::string(errorClassName(*errorClass))
                + (detail.empty() ? "" : ": " + escapedText(detail)) + "); visible again at " + when(m.vtMs));
    return ExitOk;
}

int cmdQueueList(Context &c)
{
    const std::string name = queueName(c);
    const int limit = pageLimit(c);
    const auto messages = c.queue().browse(name, afterId(c), limit);
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const QueueMessage &m : messages) {
        rows.push_back(queueMessageJson(m));
        human += describe(m) + '\n';
    }
    const bool full = static_cast<int>(messages.size()) == limit;
    if (full)
        human += "(more: --after " + std::to_string(messages.back().msgId) + ")\n";
    if (!human.empty())
        human.pop_back();
    c.print({{"queue", name}, {"messages", rows}, {"next_after", full ? nlohmann::json(messages.back().msgId) : nlohmann::json()}},
            human.empty() ? "no messages in " + name : human);
    return ExitOk;
}

int cmdQueueMetrics(Context &c)
{
    const QueueMetrics m = c.queue().metrics(queueName(c));
    const auto age = [](std::optional<std::int64_t> ms) { return ms ? nlohmann::json(*ms) : nlohmann::json(); };
    const auto ageText = [](std::optional<std::int64_t> ms) { return ms ? std::to_string(*ms) + " ms" : std::string("-"); };
    // pgmq's metric names, with ages in milliseconds instead of seconds.
    c.print({{"queue_name", m.queue},
             {"queue_length", m.length},
             {"queue_visible_length", m.visibleLength},
             {"newest_msg_age_ms", age(m.newestMessageAgeMs)},
             {"oldest_msg_age_ms", age(m.oldestMessageAgeMs)},
             {"total_messages", m.totalMessages},
             {"scrape_time", timestampJson(m.scrapeTimeMs)}},
            m.queue + ": " + std::to_string(m.length) + " message(s), " + std::to_string(m.visibleLength)
                + " visible, " + std::to_string(m.totalMessages) + " sent in all\noldest " + ageText(m.oldestMessageAgeMs)
                + ", newest " + ageText(m.newestMessageAgeMs));
    return ExitOk;
}

int cmdQueue(Context &c)
{
    return dispatch(c, "queue",
                    {{QStringLiteral("create"), {1, {QStringLiteral("max-reads")}, cmdQueueCreate}},
                     {QStringLiteral("send"),
                      {1,
                       {QStringLiteral("message"), QStringLiteral("headers"), QStringLiteral("delay"),
                        QStringLiteral("envelope")},
                       cmdQueueSend}},
                     {QStringLiteral("read"), {1, {QStringLiteral("vt"), QStringLiteral("qty")}, cmdQueueRead}},
                     {QStringLiteral("ack"), {2, {}, cmdQueueAck}},
                     {QStringLiteral("archive"), {2, {}, cmdQueueArchive}},
                     {QStringLiteral("nack"),
                      {2, {QStringLiteral("class"), QStringLiteral("detail"), QStringLiteral("retry-after")}, cmdQueueNack}},
                     {QStringLiteral("list"), {1, {QStringLiteral("after"), QStringLiteral("limit")}, cmdQueueList}},
                     {QStringLiteral("metrics"), {1, {}, cmdQueueMetrics}}});
}

int cmdDlqList(Context &c)
{
    const std::string name = queueName(c);
    const int limit = pageLimit(c);
    const auto letters = c.queue().deadLetters(name, afterId(c), limit);
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const DeadLetter &d : letters) {
        const DeadLetterProvenance &p = d.provenance;
        nlohmann::json row = queueMessageJson(d.message);
        row["source_queue"] = p.sourceQueue;
        row["source_msg_id"] = p.sourceMsgId;
        row["source_read_ct"] = p.readCount;
        row["last_error_class"] = p.lastErrorClass ? nlohmann::json(errorClassName(*p.lastErrorClass)) : nlohmann::json();
        row["last_error_detail"] = p.lastErrorClass ? nlohmann::json(p.lastErrorDetail) : nlohmann::json();
        row["dead_lettered_at"] = timestampJson(p.deadLetteredAtMs);
        rows.push_back(std::move(row));
        human += "msg " + std::to_string(d.message.msgId) + "  from " + p.sourceQueue + " msg "
                 + std::to_string(p.sourceMsgId) + " after " + std::to_string(p.readCount) + " read(s)  at "
                 + when(p.deadLetteredAtMs) + "  last error: "
                 + (p.lastErrorClass ? std::string(errorClassName(*p.lastErrorClass))
                                           + (p.lastErrorDetail.empty() ? "" : ": " + escapedText(p.lastErrorDetail))
                                     : std::string("none reported"))
                 + "\n  " + escapedJson(d.message.message) + '\n';
    }
    const bool full = static_cast<int>(letters.size()) == limit;
    if (full)
        human += "(more: --after " + std::to_string(letters.back().message.msgId) + ")\n";
    if (!human.empty())
        human.pop_back();
    c.print({{"queue", name},
             {"dead_letter_queue", name + std::string(QueueName::DeadLetterSuffix)},
             {"messages", rows},
             {"next_after", full ? nlohmann::json(letters.back().message.msgId) : nlohmann::json()}},
            human.empty() ? "no dead letters for " + name : human);
    return ExitOk;
}

// Guarded actions: each command object validates, describes and executes (approvecommand.h,
// reconcilecommand.h, dlqreplaycommand.h); the CLI only gathers arguments and prints.

/// --reason, required by every guarded action: a rule of the action (exit 65, like the command
/// object's own check), not a slip of the command line.
std::string requiredReason(const Context &c)
{
    if (!c.parser.isSet(QStringLiteral("reason")))
        throw Error(ErrorCode::Refused, "missing --reason TEXT: a guarded action records why in the audit log");
    const QString given = c.parser.value(QStringLiteral("reason"));
    const std::string reason = given.trimmed().toStdString();
    if (reason.empty())
        throw Error(ErrorCode::Refused, "--reason is blank (" + quotedValue(given.toStdString())
                                            + "): a guarded action records why in the audit log");
    return reason;
}

/// Refuses with every problem validate() found, nothing written.
void requireValid(const std::vector<std::string> &problems)
{
    if (problems.empty())
        return;
    std::string message;
    for (const std::string &p : problems)
        message += (message.empty() ? "" : "; ") + p;
    throw Error(ErrorCode::Refused, message);
}

/// `reference` is approve's --reference (reject has none).
int runApproval(Context &c, ApprovalDecision decision, const std::string &reference)
{
    ApproveCommand::Request request;
    request.ns = c.ns;
    request.key = c.key();
    request.decision = decision;
    request.reason = requiredReason(c);
    request.externalReference = reference;
    request.approvalId = c.parser.value(QStringLiteral("approval-id")).toStdString();
    LedgerStore &store = c.engine().store();
    ApproveCommand command(store, store.actor(), request,
                           {.extraAttempts = c.engine().settings().maxAttempts,
                            .retentionMs = c.engine().settings().retentionMs});
    requireValid(command.validate());
    const ActionPreview preview = command.describe();
    if (c.parser.isSet(QStringLiteral("dry-run"))) {
        c.print({{"dry_run", true}, {"action", preview.sentence}, {"preview", preview.details}},
                preview.sentence + "\n(dry run: nothing written; approval id " + escapedText(command.approvalId()) + ")");
        return ExitOk;
    }
    const nlohmann::json result = command.execute().toJson();
    const std::string status = result.at("status").get<std::string>();
    std::string human = preview.sentence + "\n" + status + ": approval " + escapedText(command.approvalId()) + ", revision "
                        + std::to_string(result.at("revision").get<int>());
    if (status == "pending")
        human += " (waiting for a second approver)";
    if (status == "replayed")
        human += " (submitted before: the first decision stands, nothing applied again)";
    c.print({{"action", preview.sentence}, {"result", result}}, human);
    return ExitOk;
}

int cmdApprove(Context &c)
{
    if (!c.parser.isSet(QStringLiteral("decision")))
        throw UsageError{"missing --decision redispatch|confirm|reject"};
    const auto decision = parseDecision(c.parser.value(QStringLiteral("decision")).toStdString());
    if (!decision)
        throw UsageError{"--decision must be redispatch, confirm or reject, not "
                         + quotedValue(c.parser.value(QStringLiteral("decision")).toStdString())};
    return runApproval(c, *decision, c.parser.value(QStringLiteral("reference")).toStdString());
}

int cmdReject(Context &c) { return runApproval(c, ApprovalDecision::Reject, std::string()); }

int cmdReconcile(Context &c)
{
    ReconcileCommand::Request request;
    request.ns = c.ns;
    const QStringList args = c.parser.positionalArguments();
    request.key = args.size() > 1 ? args.at(1).toStdString() : std::string();
    const bool bulk = request.key.empty();
    if (c.parser.isSet(QStringLiteral("state"))) {
        request.state = parseState(c.parser.value(QStringLiteral("state")).toStdString());
        if (!request.state)
            throw UsageError{"unknown --state " + quotedValue(c.parser.value(QStringLiteral("state")).toStdString())};
    }
    request.keyPrefix = c.parser.value(QStringLiteral("key-prefix")).toStdString();
    request.runId = c.parser.value(QStringLiteral("run")).toStdString();
    if (!bulk && (request.state || !request.keyPrefix.empty() || !request.runId.empty()))
        throw UsageError{"give a KEY or a filter (--state, --key-prefix, --run), not both"};
    if (bulk && !request.state && request.keyPrefix.empty() && request.runId.empty())
        throw UsageError{"missing KEY, or a filter: --state, --key-prefix or --run"};
    request.reason = requiredReason(c);
    LedgerStore &store = c.engine().store();
    const auto lookup = openProviderLookup(store);
    ReconcileCommand command(store, *lookup, store.actor(), request, {.retentionMs = c.engine().settings().retentionMs});
    requireValid(command.validate());
    const ActionPreview preview = command.describe();
    if (c.parser.isSet(QStringLiteral("dry-run")) || (bulk && !c.parser.isSet(QStringLiteral("yes")))) {
        c.print({{"dry_run", true}, {"action", preview.sentence}, {"preview", preview.details}},
                preview.sentence + "\n(nothing written" + (bulk ? std::string("; add --yes to reconcile them") : std::string())
                    + ")");
        return ExitOk;
    }
    const nlohmann::json result = command.execute().toJson();
    std::string human = preview.sentence;
    for (const auto &row : result.at("reconciled"))
        human += "\n" + row.at("key").get<std::string>() + ": " + row.at("from").get<std::string>() + " -> "
                 + row.at("to").get<std::string>() + " (provider: " + row.at("evidence").at("status").get<std::string>()
                 + ")";
    for (const auto &row : result.at("skipped"))
        human += "\n" + row.at("key").get<std::string>() + ": skipped, " + escapedText(row.at("why").get<std::string>());
    c.print({{"action", preview.sentence}, {"result", result}}, human);
    return ExitOk;
}

std::atomic<bool> g_interrupted{false};

int cmdDlqReplay(Context &c)
{
    DlqReplayCommand::Request request;
    request.ns = c.ns;
    const QStringList args = c.parser.positionalArguments();
    request.queue = c.parser.isSet(QStringLiteral("queue")) ? c.parser.value(QStringLiteral("queue")).toStdString()
                                                             : queueName(c);
    if (c.parser.isSet(QStringLiteral("queue")) && args.size() > 2)
        throw UsageError{"give the queue once: NAME or --queue NAME"};
    const bool byIds = c.parser.isSet(QStringLiteral("ids"));
    if (byIds == c.parser.isSet(QStringLiteral("filter")))
        throw UsageError{"give the set: --ids ID,ID,… or --filter all|error_class=C|key_prefix=P"};
    const bool dryRun = c.parser.isSet(QStringLiteral("dry-run"));
    if (dryRun == c.parser.isSet(QStringLiteral("confirm")))
        throw UsageError{"run --dry-run first, then --confirm COUNT --reason TEXT"};
    if (byIds) {
        for (const QString &id : c.parser.value(QStringLiteral("ids")).split(QLatin1Char(','), Qt::SkipEmptyParts))
            request.ids.push_back(
                parseWholeNumber("each msg_id of --ids", id.trimmed().toStdString(), 1, MaxWholeNumber));
    } else {
        request.ids = DlqReplayCommand::resolveFilter(c.queue(), request.queue,
                                                      c.parser.value(QStringLiteral("filter")).toStdString());
    }
    if (c.parser.isSet(QStringLiteral("rate")))
        request.ratePerSecond = parseNumber("--rate", c.parser.value(QStringLiteral("rate")).toStdString(), 0.001,
                                            DlqReplayCommand::MaxRatePerSecond, "messages per second");
    if (!dryRun) {
        request.confirmCount = c.integerOption(QStringLiteral("confirm"), 0, MaxWholeNumber);
        request.reason = requiredReason(c);
    }
    DlqReplayCommand::Options options;
    options.retentionMs = c.engine().settings().retentionMs;
    const bool bar = !c.json && isatty(STDERR_FILENO);
    if (bar)
        options.progress = [](std::int64_t done, std::int64_t total) {
            printProgress("replayed " + std::to_string(done) + "/" + std::to_string(total)
                          + " (Ctrl-C stops after the current message) ");
        };
    options.cancelled = [] { return g_interrupted.load(); };
    LedgerStore &store = c.engine().store();
    DlqReplayCommand command(store, c.queue(), store.actor(), request, options);
    if (dryRun) {
        const std::vector<std::string> problems = command.validate();
        const ActionPreview preview = command.describe();
        std::string human = preview.sentence + "\nreplay id " + command.replayId() + "\n";
        for (const auto &item : preview.details.at("items"))
            human += "  msg " + item.at("msg_id").dump() + "  " + item.at("class").get<std::string>() + "  "
                     + escapedText(item.at("key").get<std::string>()) + "\n";
        for (const std::string &p : problems)
            human += "cannot replay: " + p + "\n";
        human += "(dry run: nothing written; replay with --confirm " + preview.details.at("count").dump()
                 + " --reason TEXT)";
        nlohmann::json out = {{"dry_run", true}, {"action", preview.sentence}, {"preview", preview.details},
                              {"problems", problems}};
        c.print(out, human);
        return problems.empty() ? ExitOk : ExitRefused;
    }
    requireValid(command.validate());
    std::signal(SIGINT, [](int) { g_interrupted = true; });
    const nlohmann::json result = command.execute().toJson();
    std::signal(SIGINT, SIG_DFL);
    if (bar)
        printErr("");
    c.print(result, "replay " + command.replayId() + ": " + result.at("requeued").dump() + " requeued, "
                        + result.at("taken_by_other_replay").dump() + " taken by another replay, "
                        + result.at("not_replayed").dump() + " left in the dead-letter queue"
                        + (result.at("cancelled").get<bool>() ? " (cancelled)" : ""));
    return ExitOk;
}

nlohmann::json auditJson(const AuditRecord &r)
{
    const auto embedded = [](const std::string &text) {
        return text.empty() ? nlohmann::json() : nlohmann::json::parse(text, nullptr, false);
    };
    return {{"seq", r.seq},
            {"at", timestampJson(r.atMs)},
            {"who", r.entry.who},
            {"role", r.entry.role},
            {"action", r.entry.action},
            {"target", r.entry.target},
            {"reason", r.entry.reason},
            {"before", embedded(r.entry.beforeState)},
            {"after", embedded(r.entry.afterState)},
            {"approval_id", r.entry.approvalId},
            {"detail", embedded(r.entry.detail)},
            {"prev_hash", r.prevHash},
            {"hash", r.hash}};
}

int cmdAudit(Context &c)
{
    const QString what = c.positional(1, "audit subcommand (list, verify, head or export)");
    LedgerStore &store = c.engine().store();
    if (what == QLatin1String("verify")) {
        const std::string expected = c.parser.value(QStringLiteral("expect-head")).toStdString();
        if (c.parser.isSet(QStringLiteral("expect-head"))
            && (expected.size() != 64 || expected.find_first_not_of("0123456789abcdef") != std::string::npos))
            throw UsageError{"--expect-head takes a record hash as `audit head` prints it (64 hex digits), not '" + expected + "'"};
        const AuditVerify::Result result = AuditVerify(store).run(expected);
        c.print(AuditVerify::toJson(result),
                result.ok ? "audit log intact: " + std::to_string(result.records) + " record(s), head " + result.lastHash
                                + (result.anchorSeq ? "; expected head is record " + std::to_string(*result.anchorSeq) : "")
                          : "audit log BROKEN at record " + std::to_string(*result.firstBad) + ": " + result.problem);
        return result.ok ? ExitOk : ExitRefused;
    }
    if (what == QLatin1String("head")) {
        // Printed only for a chain that verifies: an anchor is worth keeping only if it is sound.
        const AuditVerify::Result result = AuditVerify(store).run();
        if (!result.ok) {
            c.print(AuditVerify::toJson(result), "audit log BROKEN at record " + std::to_string(*result.firstBad) + ": "
                                                     + result.problem + "; no head to keep");
            return ExitRefused;
        }
        const std::int64_t seq = result.head ? result.head->seq : result.records;
        c.print({{"seq", seq}, {"hash", result.lastHash}},
                "audit head: record " + std::to_string(seq) + ", hash " + result.lastHash
                    + "\nkeep it outside the ledger; `idempo audit verify --expect-head HASH` checks the chain still holds it");
        return ExitOk;
    }
    if (what == QLatin1String("list")) {
        const std::int64_t after = afterId(c);
        const int limit = pageLimit(c);
        const auto records = store.auditLog(after, limit);
        nlohmann::json rows = nlohmann::json::array();
        std::string human;
        for (const AuditRecord &r : records) {
            rows.push_back(auditJson(r));
            human += std::to_string(r.seq) + "  " + when(r.atMs) + "  " + escapedText(r.entry.who) + " ("
                     + escapedText(r.entry.role) + ")  " + r.entry.action + "  " + escapedText(r.entry.target) + "  "
                     + escapedText(r.entry.reason) + "\n";
        }
        const bool full = static_cast<int>(records.size()) == limit;
        if (full)
            human += "(more: --after " + std::to_string(records.back().seq) + ")\n";
        if (!human.empty())
            human.pop_back();
        c.print({{"records", rows}, {"next_after", full ? nlohmann::json(records.back().seq) : nlohmann::json()}},
                human.empty() ? "no audit records" : human);
        return ExitOk;
    }
    if (what == QLatin1String("export")) {
        const QString format = c.parser.value(QStringLiteral("format"));
        if (format != QLatin1String("csv") && format != QLatin1String("json"))
            throw UsageError{c.parser.isSet(QStringLiteral("format"))
                                 ? "--format must be csv or json, not " + quotedValue(format.toStdString())
                                 : std::string("missing --format csv|json")};
        if (c.json && format == QLatin1String("csv"))
            throw UsageError{"--json prints one JSON object: use --format json"};
        nlohmann::json rows = nlohmann::json::array();
        if (format == QLatin1String("csv"))
            printOut("seq,at,who,role,action,target,reason,before,after,approval_id,detail,prev_hash,hash");
        for (std::int64_t after = 0;;) {
            const auto page = store.auditLog(after, 1000);
            for (const AuditRecord &r : page) {
                if (format == QLatin1String("json")) {
                    rows.push_back(auditJson(r));
                    continue;
                }
                // csvField escapes text; the JSON-valued columns keep their JSON form.
                const std::vector<std::string> fields = {std::to_string(r.seq), when(r.atMs), r.entry.who,
                                                         r.entry.role, r.entry.action, r.entry.target,
                                                         r.entry.reason, escapedJson(r.entry.beforeState),
                                                         escapedJson(r.entry.afterState), r.entry.approvalId,
                                                         escapedJson(r.entry.detail), r.prevHash, r.hash};
                std::string line;
                for (const std::string &f : fields)
                    line += (line.empty() ? "" : ",") + csvField(f);
                printOut(line);
            }
            if (page.size() < 1000)
                break;
            after = page.back().seq;
        }
        if (format == QLatin1String("json"))
            printJson({{"records", rows}});
        return ExitOk;
    }
    throw UsageError{"unknown subcommand 'audit " + escapedText(what.toStdString())
                     + "': expected list, verify, head or export"};
}

int cmdFourEyes(Context &c)
{
    LedgerStore &store = c.engine().store();
    if (!c.parser.isSet(QStringLiteral("above"))) {
        const auto current = store.guardSetting(FourEyesSetting);
        c.print({{"four_eyes_above", current && !current->empty() ? nlohmann::json(*current) : nlohmann::json()}},
                current && !current->empty() ? "two approvers needed above " + *current
                                             : std::string("four-eyes approval is off"));
        return ExitOk;
    }
    std::string value = c.parser.value(QStringLiteral("above")).toStdString();
    if (value == "off")
        value.clear();
    GuardSettingCommand command(store, store.actor(), FourEyesSetting, value, requiredReason(c));
    requireValid(command.validate());
    const ActionPreview preview = command.describe();
    c.print(command.execute().toJson(), preview.sentence + ": done");
    return ExitOk;
}

int cmdDlq(Context &c)
{
    const QStringList replayOptions = {QStringLiteral("queue"), QStringLiteral("ids"), QStringLiteral("filter"),
                                       QStringLiteral("dry-run"), QStringLiteral("confirm"), QStringLiteral("reason"),
                                       QStringLiteral("rate")};
    // `dlq replay --queue NAME` has no positional name.
    const bool queueOption = c.parser.isSet(QStringLiteral("queue"));
    return dispatch(c, "dlq",
                    {{QStringLiteral("list"), {1, {QStringLiteral("after"), QStringLiteral("limit")}, cmdDlqList}},
                     {QStringLiteral("replay"), {queueOption ? 0 : 1, replayOptions, cmdDlqReplay}}});
}

std::map<QString, Command> commands()
{
    const QCommandLineOption token = opt("token", "Fencing token returned by the claim.", "N");
    const QCommandLineOption lease = opt("lease", "Lease length in seconds (default 30).", "S");
    return {
        {QStringLiteral("init"), {0, "init", "Create or migrate the ledger.", {}, cmdInit}},
        {QStringLiteral("claim"),
         {1, "claim KEY --payload JSON|@FILE [options]",
          "Claim the operation KEY: prints the outcome (claimed, replayed, in_progress, retry_later,\n"
          "reconcile_required, payload_mismatch).",
          {opt("payload", "The operation's payload: JSON text, @FILE, or @- for stdin.", "JSON"),
           opt("kind", "read, idempotent_write or protected_write (default).", "K"),
           opt("owner", "Lease owner (default host:pid).", "ID"), lease, opt("run", "Execution (run) id.", "R"),
           opt("step", "Step id.", "S"), opt("target", "Target of the step.", "T"),
           opt("fingerprint-fields", "Comma-separated JSON Pointers the fingerprint covers.", "PTRS"),
           opt("max-attempts", "Attempt limit (default 3).", "N"),
           opt("requires-approval", "A new operation waits in awaiting_approval."),
           opt("value", "What the operation moves, e.g. \"1250.00 EUR\" (ISO 4217; recorded by the\n"
                        "claim that creates the record).", "AMOUNT")},
          cmdClaim}},
        {QStringLiteral("complete"),
         {1, "complete KEY --token N [--result JSON] [--receipt JSON]",
          "Record success of the attempt holding the lease.",
          {token, opt("result", "Result JSON, @FILE or @-.", "JSON"),
           opt("receipt", "Provider receipt / external reference JSON.", "JSON")},
          cmdComplete}},
        {QStringLiteral("fail"),
         {1, "fail KEY --token N --class CLASS [--detail TEXT] [--retry-after S]",
          "Record a failed attempt; the retry policy decides what comes next.",
          {token, opt("class", "transient, rate_limited, validation, auth, policy_denied, unknown_outcome.", "CLASS"),
           opt("detail", "What went wrong.", "TEXT"), opt("retry-after", "Provider's Retry-After, seconds.", "S")},
          cmdFail}},
        {QStringLiteral("heartbeat"),
         {1, "heartbeat KEY --token N [--lease S]", "Extend the lease.", {token, lease}, cmdHeartbeat}},
        {QStringLiteral("show"), {1, "show KEY", "Print the operation record.", {}, cmdShow}},
        {QStringLiteral("history"), {1, "history KEY", "Print the operation's state history.", {}, cmdHistory}},
        {QStringLiteral("list"),
         {0, "list [--state S] [--run R] [--key-prefix P] [--limit N] [--after ID]",
          "List operations, oldest first, a page at a time.",
          {opt("state", "Only this state.", "S"), opt("run", "Only this run.", "R"),
           opt("key-prefix", "Only keys starting with P.", "P"), opt("limit", "Page size (default 50).", "N"),
           opt("after", "Continue after this id (the previous page's next_after).", "ID")},
          cmdList}},
        {QStringLiteral("purge"), {0, "purge", "Remove operations whose retention expired.", {}, cmdPurge}},
        {QStringLiteral("metrics"), {0, "metrics", "Counts by state, suppressions, leases.", {}, cmdMetrics}},
        {QStringLiteral("queue"),
         {3, "queue SUBCOMMAND NAME [ARGS]",
          "Message queues with a dead-letter queue each (pgmq's table layout):\n"
          "  create NAME [--max-reads N]        create NAME and NAME_dlq (idempotent)\n"
          "  send NAME --message JSON|@FILE [--headers JSON] [--delay S] [--envelope]\n"
          "  read NAME [--vt S] [--qty N]       deliver visible messages, hidden for S seconds\n"
          "  ack NAME MSG_ID                    delete a processed message\n"
          "  archive NAME MSG_ID                move a message to the archive a_NAME\n"
          "  nack NAME MSG_ID --class C [--detail T] [--retry-after S]\n"
          "                                     record a failure; visible again after S seconds\n"
          "  list NAME [--after ID] [--limit N] browse without counting as a read\n"
          "  metrics NAME                       lengths, ages and totals",
          {opt("max-reads", "create: deliveries before a message goes to NAME_dlq (default 5).", "N"),
           opt("message", "send: the message, JSON text, @FILE or @- for stdin.", "JSON"),
           opt("headers", "send: a JSON object of headers.", "JSON"),
           opt("delay", "send: seconds before the message becomes visible (default 0).", "S"),
           opt("envelope", "send: refuse a message that is not a queue envelope (docs/envelope.md)."),
           opt("vt", "read: visibility timeout in seconds (default 30).", "S"),
           opt("qty", "read: at most this many messages (default 1).", "N"),
           opt("class", "nack: transient, rate_limited, validation, auth, policy_denied, unknown_outcome.", "CLASS"),
           opt("detail", "nack: what went wrong.", "TEXT"),
           opt("retry-after", "nack: seconds before the message is visible again (default 0).", "S"),
           opt("after", "list: continue after this msg_id (the previous page's next_after).", "ID"),
           opt("limit", "list: page size (default 50).", "N")},
          cmdQueue}},
        {QStringLiteral("dlq"),
         {2, "dlq list|replay NAME [OPTIONS]",
          "Dead letters of queue NAME:\n"
          "  list NAME [--after ID] [--limit N]  with their source and last error, never counting as a read\n"
          "  replay NAME (--ids ID,… | --filter all|error_class=C|key_prefix=P) --dry-run\n"
          "  replay NAME (--ids … | --filter …) --confirm COUNT --reason TEXT [--rate N]\n"
          "      the dry run classifies each message (already_completed, will_execute, payload_mismatch,\n"
          "      expired_by_retention); the replay needs the count it printed, keeps every key, and\n"
          "      requeues at most N messages per second (default 50); Ctrl-C stops it",
          {opt("after", "list: continue after this msg_id (the previous page's next_after).", "ID"),
           opt("limit", "list: page size (default 50).", "N"),
           opt("queue", "replay: the source queue (instead of NAME).", "NAME"),
           opt("ids", "replay: the dead letters' msg_ids, comma-separated.", "IDS"),
           opt("filter", "replay: all, error_class=CLASS or key_prefix=PREFIX, resolved to ids once.", "F"),
           opt("dry-run", "replay: classify only, write nothing."),
           opt("confirm", "replay: the count the dry run printed.", "COUNT"),
           opt("reason", "replay: why, for the audit log.", "TEXT"),
           opt("rate", "replay: messages per second (default 50).", "N")},
          cmdDlq}},
        {QStringLiteral("approve"),
         {1, "approve KEY --decision redispatch|confirm|reject --reason TEXT [--reference REF] [--approval-id ID] [--dry-run]",
          "Decide an operation in awaiting_approval or confirmation_required: dispatch it again (a fresh\n"
          "attempt budget), confirm it succeeded with the provider's reference, or reject it. The same\n"
          "approval id again returns the first decision; above the four-eyes threshold a second approver\n"
          "applies it; whoever requested or last touched the operation cannot approve it.",
          {opt("decision", "redispatch, confirm or reject.", "D"), opt("reason", "Why (required).", "TEXT"),
           opt("reference", "confirm: the external reference that proves the effect.", "REF"),
           opt("approval-id", "Idempotency id of this submission (default: derived from it).", "ID"),
           opt("dry-run", "Show what would happen; write nothing.")},
          cmdApprove}},
        {QStringLiteral("reject"),
         {1, "reject KEY --reason TEXT [--approval-id ID] [--dry-run]",
          "Reject an operation in awaiting_approval or confirmation_required (to failed_terminal).",
          {opt("reason", "Why (required).", "TEXT"),
           opt("approval-id", "Idempotency id of this submission (default: derived from it).", "ID"),
           opt("dry-run", "Show what would happen; write nothing.")},
          cmdReject}},
        {QStringLiteral("reconcile"),
         {1, "reconcile KEY|--state S|--key-prefix P|--run R --reason TEXT [--yes] [--dry-run]",
          "Look operations up at their provider by key, record the answer as evidence and move them:\n"
          "found -> succeeded; not found at the operation's own provider -> received (unknown_outcome\n"
          "only); pending or no lookup for the operation -> confirmation_required. A filter prints the\n"
          "count first and acts only with --yes.",
          {opt("state", "Bulk: only this state.", "S"), opt("key-prefix", "Bulk: only keys starting with P.", "P"),
           opt("run", "Bulk: only this run.", "R"), opt("reason", "Why (required).", "TEXT"),
           opt("yes", "Bulk: reconcile the counted set."), opt("dry-run", "Look up and show; write nothing.")},
          cmdReconcile}},
        {QStringLiteral("audit"),
         {1, "audit list|verify|head|export [--after SEQ] [--limit N] [--format csv|json] [--expect-head HASH]",
          "The append-only audit log of guarded actions:\n"
          "  list     records, oldest first, a page at a time\n"
          "  verify   check the hash chain and the ledger's head; names the first edited, removed or\n"
          "           reordered record (exit 65); --expect-head: the chain must still hold that record\n"
          "  head     the newest record's hash, to keep outside the ledger as an anchor\n"
          "  export   every record as CSV or JSON on stdout",
          {opt("after", "list: continue after this seq.", "SEQ"), opt("limit", "list: page size (default 50).", "N"),
           opt("format", "export: csv or json.", "F"),
           opt("expect-head", "verify: a hash `audit head` printed earlier; the chain must still hold it.", "HASH")},
          cmdAudit}},
        {QStringLiteral("four-eyes"),
         {0, "four-eyes [--above AMOUNT|off --reason TEXT]",
          "Show or set the ledger's four-eyes threshold: above AMOUNT (major units, in the operation's\n"
          "own currency) a re-dispatch or confirm needs two different approvers. Admins only.",
          {opt("above", "The threshold, e.g. 1000.00, or off.", "AMOUNT"), opt("reason", "Why (required).", "TEXT")},
          cmdFourEyes}},
        {QStringLiteral("sandbox"),
         {1,
          "sandbox run [--scenario NAME|all] [--runs N] [--workers W] [--processes] [--faults LIST|all] [--seed S]\n"
          "              [--naive] [--reconnect-deadline S]; sandbox reset",
          "Run simulated multi-agent workflows under injected faults, then check the invariants (exit 65\n"
          "when one fails): worker threads on a virtual clock on the embedded ledger, or with --processes\n"
          "'idempo worker' processes on the real clock, killed with SIGKILL at the crash points and\n"
          "restarted (any ledger; PostgreSQL is the real thing). Scenarios: kyc-onboarding,\n"
          "payment-refund, travel-booking, invoice-email. Namespace 'sandbox' unless --namespace is\n"
          "given. SIGTERM or SIGINT stops the run: workers finish the message in hand, the report says\n"
          "cancelled and covers what ran, exit 75. A run killed without a word leaves the sandbox queue to\n"
          "the next run, which clears it once the killed driver is known gone; 'sandbox reset' clears it at\n"
          "once. See docs/sandbox.md for faults and rates.",
          {opt("scenario", "A scenario name, or all (default): runs are spread round-robin.", "NAME"),
           opt("runs", "Runs to start, 1..1000000 (default 100).", "N"),
           opt("workers", "Worker threads, or worker processes with --processes (default 2).", "W"),
           opt("processes", "Run the workers as 'idempo worker' processes and SIGKILL them at crash points."),
           opt("faults", "none (default), all, or a comma list of fault[=rate].", "LIST"),
           opt("seed", "Seed of every random choice (default 1): the same seed gives the same report.", "S"),
           opt("naive", "Use a consumer without the idempotency layer, to count the duplicates it makes."),
           opt("reconnect-deadline", "With --processes: how long the driver and its workers wait for a lost "
                                     "ledger before exit 69, seconds (default 60).", "S")},
          cmdSandbox}},
        {QStringLiteral("worker"),
         {0, "worker [--queue NAME] [--owner ID] [--max-messages N] [--idle-exit-ms MS] [--faults LIST] [--seed S]",
          "Consume sandbox envelopes from a queue of the ledger until SIGTERM or SIGINT (then finish the\n"
          "message in hand): claim, act only on 'claimed', record the outcome and send the next step's\n"
          "message in one transaction, ack last. At a crash point of --faults it prints a 'crash' line\n"
          "and blocks until killed. stdout is one JSON object per line (events), with or without --json.\n"
          "A lost ledger is waited for (a line on stderr says so) up to --reconnect-deadline, then exit 69.",
          {opt("queue", "The queue to consume (default sandbox).", "NAME"),
           opt("owner", "Lease owner (default host:pid).", "ID"),
           opt("index", "The worker's number, which picks its clock skew (default 0).", "N"),
           opt("max-messages", "Stop after this many deliveries (default: no limit).", "N"),
           opt("idle-exit-ms", "Stop after this many milliseconds without a visible message (default: never).", "MS"),
           opt("faults", "none (default), all, or a comma list of fault[=rate].", "LIST"),
           opt("seed", "Seed of every fault decision (default 1).", "S"),
           opt("lease-ms", "Lease length, milliseconds (default 2000).", "MS"),
           opt("vt-ms", "Visibility timeout of a read, milliseconds (default 2000).", "MS"),
           opt("naive", "Consume without the idempotency layer."),
           opt("reconnect-deadline", "How long to wait for a lost ledger before exit 69, seconds (default 60).",
               "S")},
          cmdWorker}},
        {QStringLiteral("check"),
         {0, "check",
          "Check the sandbox invariants of a namespace ('sandbox' unless --namespace is given) against\n"
          "the providers' effect journals; each violation names its operation; exit 65 when one fails,\n"
          "and when the namespace holds no sandbox runs and no operations (nothing to check).",
          {},
          cmdCheck}},
        {QStringLiteral("bench"),
         {1, "bench claim|queue [OPTIONS]",
          "Throughput beside the same raw SQL statements, measured in the same run:\n"
          "  claim [--cycles N] [--workers W]  claim/complete/duplicate-claim cycles\n"
          "  queue [--messages N]              queue send, read and delete, one client",
          {opt("cycles", "claim: claim/complete cycles per run (default 2000).", "N"),
           opt("workers", "claim: concurrent workers (default 1).", "W"),
           opt("messages", "queue: messages sent, read and deleted per round (default 2000).", "N")},
          cmdBench}},
    };
}

std::vector<QCommandLineOption> globalOptions()
{
    return {opt("ledger", "Ledger URL: sqlite:PATH (default $IDEMPO_LEDGER, else the embedded ledger).", "URL"),
            opt("namespace", "Key namespace (default $IDEMPO_NAMESPACE, else 'default').", "NS"),
            opt("json", "Print one JSON object on stdout."),
            opt("retention", "Keep final records this many seconds (default 86400).", "S"),
            opt("verbose", "Log engine activity on stderr.")};
}

HelpOption helpOption(const QCommandLineOption &o)
{
    return {o.names().first().toStdString(), o.valueName().toStdString(), o.description().toStdString()};
}

HelpCommand helpCommand(const Command &command)
{
    HelpCommand help{command.synopsis, command.summary, {}};
    for (const QCommandLineOption &o : command.options)
        help.options.push_back(helpOption(o));
    return help;
}

HelpDocument helpDocument(const std::map<QString, Command> &all)
{
    HelpDocument help;
    for (const auto &[name, command] : all)
        help.commands.push_back(helpCommand(command));
    for (const QCommandLineOption &o : globalOptions())
        help.globals.push_back(helpOption(o));
    return help;
}

void reportError(bool json, const std::string &code, const std::string &message)
{
    if (json)
        printJson({{"error", code}, {"message", message}});
    printErr("idempo: " + message);
}

} // namespace

int run(int argc, char **argv)
{
    QStringList arguments;
    for (int i = 0; i < argc; ++i) {
        const QByteArrayView raw(argv[i]);
        QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
        const QString decoded = decoder.decode(raw);
        if (decoder.hasError()) {
            // Decoding would turn every invalid byte into U+FFFD and merge different keys.
            bool json = false;
            for (int j = 1; j < argc; ++j)
                json = json || QByteArrayView(argv[j]) == "--json";
            reportError(json, "invalid_argument", "argument " + std::to_string(i) + " is not valid UTF-8");
            return ExitRefused;
        }
        arguments << decoded;
    }
    return run(arguments);
}

int run(const QStringList &arguments)
{
    captureQtMessages();
    const auto all = commands();
    const auto globals = globalOptions();

    // First pass: global options up to the command word; the rest is the command's.
    QCommandLineParser first;
    for (const auto &o : globals)
        first.addOption(o);
    first.addOption(opt("help", "Show help."));
    first.addOption(opt("version", "Show the version."));
    first.addOption(opt("help-man", "Print the help as a man page (roff); the build installs it as idempo(1)."));
    first.setOptionsAfterPositionalArgumentsMode(QCommandLineParser::ParseAsPositionalArguments);
    const bool wantsJson = arguments.contains(QStringLiteral("--json"));
    if (!first.parse(arguments)) {
        reportError(wantsJson, "usage", first.errorText().toStdString() + " (see idempo --help)");
        return ExitUsage;
    }
    if (first.isSet(QStringLiteral("version"))) {
        printOut("idempo " IDEMPO_VERSION);
        return ExitOk;
    }
    if (first.isSet(QStringLiteral("help-man"))) {
        printOut(manPage(helpDocument(all), IDEMPO_VERSION));
        return ExitOk;
    }
    const QStringList rest = first.positionalArguments();
    if (rest.isEmpty() && wantsJson) {
        reportError(true, "usage", "no command given (see idempo --help)");
        return ExitUsage;
    }
    if (rest.isEmpty() || first.isSet(QStringLiteral("help"))) {
        (rest.isEmpty() && !first.isSet(QStringLiteral("help")) ? printErr : printOut)(helpText(helpDocument(all)));
        return first.isSet(QStringLiteral("help")) ? ExitOk : ExitUsage;
    }
    const auto found = all.find(rest.first());
    if (found == all.end()) {
        reportError(wantsJson, "usage", "unknown command " + quotedValue(rest.first().toStdString()) + " (see idempo --help)");
        return ExitUsage;
    }
    const Command &command = found->second;

    Context c;
    for (const auto &o : globals)
        c.parser.addOption(o);
    for (const auto &o : command.options)
        c.parser.addOption(o);
    c.parser.addOption(opt("help", "Show help."));
    if (!c.parser.parse(arguments)) {
        reportError(wantsJson, "usage", c.parser.errorText().toStdString() + " (see idempo " + rest.first().toStdString() + " --help)");
        return ExitUsage;
    }
    if (c.parser.isSet(QStringLiteral("help"))) {
        printOut(commandHelpText(helpCommand(command)));
        return ExitOk;
    }
    c.json = c.parser.isSet(QStringLiteral("json"));
    const QStringList positionals = c.parser.positionalArguments();
    if (positionals.size() > command.arguments + 1) {
        reportError(c.json, "usage", "unexpected argument " + quotedValue(positionals.at(command.arguments + 1).toStdString())
                                         + " (see idempo " + rest.first().toStdString() + " --help)");
        return ExitUsage;
    }
    QString ns = c.parser.value(QStringLiteral("namespace"));
    if (ns.isEmpty())
        ns = qEnvironmentVariable("IDEMPO_NAMESPACE", QStringLiteral("default"));
    c.ns = ns.toStdString();
    setUpLogging(c.parser.isSet(QStringLiteral("verbose")));

    try {
        return command.handler(c);
    } catch (const UsageError &e) {
        reportError(c.json, "usage", e.message + " (see idempo " + rest.first().toStdString() + " --help)");
        return ExitUsage;
    } catch (const Error &e) {
        reportError(c.json, errorCodeName(e.code()), e.what());
        return exitFor(e.code());
    } catch (const std::exception &e) {
        reportError(c.json, "internal", e.what());
        return ExitInternal;
    }
}

} // namespace idempo::cli
