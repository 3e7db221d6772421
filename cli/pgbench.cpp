// SPDX-License-Identifier: Apache-2.0
#include "pgbench.h"

#include <algorithm>
#include <barrier>
#include <charconv>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include <QDateTime>
#include <QElapsedTimer>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryFile>

#include "canonicaljson.h"
#include "engine.h"
#include "error.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"

namespace idempo::cli {
namespace {

constexpr int kRounds = 3; // as the SQLite bench: benchReportText() prints this count
constexpr const char *kStep = "provision_account";
constexpr const char *kTarget = "core-banking";
constexpr const char *kOwner = "bench";
constexpr const char *kResult = R"({"account":"A-1"})";

std::string payloadFor(int i)
{
    return R"({"amount":1250,"currency":"EUR","to":"acct-)" + std::to_string(i) + R"("})";
}

/// What one engine round measures.
enum class EngineStep
{
    ClaimAndComplete, ///< a fresh key claimed (claimed) and completed
    Duplicate,        ///< the same key claimed again after it completed (replayed)
    Cycle,            ///< both: claim, complete, duplicate claim
};

ClaimInput claimFor(const std::string &ns, int i, BenchRun run, int worker)
{
    ClaimInput in = benchClaimInput(i, run, worker);
    in.ns = ns;
    in.stepId = kStep;
    in.target = kTarget;
    in.owner = kOwner;
    return in;
}

/// One step through the engine, checking each answer as a worker would.
void engineStep(Engine &engine, const std::string &ns, int i, EngineStep step, BenchRun run,
                int worker)
{
    const ClaimInput in = claimFor(ns, i, run, worker);
    if (step != EngineStep::Duplicate) {
        const ClaimResult claimed = engine.claim(in);
        if (claimed.outcome != ClaimOutcome::Claimed)
            throw Error(ErrorCode::Internal,
                        "expected claimed, got " + std::string(claimOutcomeName(claimed.outcome)));
        engine.complete(ns, in.key, claimed.operation.fencingToken, kResult, "");
    }
    if (step == EngineStep::ClaimAndComplete)
        return;
    if (const ClaimOutcome again = engine.claim(in).outcome; again != ClaimOutcome::Replayed)
        throw Error(ErrorCode::Internal,
                    "expected replayed, got " + std::string(claimOutcomeName(again)));
}

/// Runs `workers` × `perWorker` engine cycles on `workers` threads; returns cycles/s. Each
/// thread opens its connection before the clock starts, as pgbench leaves out connection time.
double measureEngine(Engine &engine, const std::string &ns, int workers, int perWorker,
                     EngineStep step, BenchRun run = BenchRun::PerCycle)
{
    std::barrier ready(workers + 1);
    std::mutex mutex;
    std::string failure;
    const auto fail = [&](const std::exception &e) {
        const std::lock_guard lock(mutex);
        if (failure.empty())
            failure = e.what();
    };
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            try {
                engine.store().nowMs();
            } catch (const std::exception &e) {
                fail(e);
            }
            ready.arrive_and_wait();
            try {
                for (int i = w * perWorker; i < (w + 1) * perWorker; ++i)
                    engineStep(engine, ns, i, step, run, w);
            } catch (const std::exception &e) {
                fail(e);
            }
        });
    }
    ready.arrive_and_wait();
    QElapsedTimer timer;
    timer.start();
    for (auto &t : threads)
        t.join();
    const qint64 elapsedNs = std::max<qint64>(1, timer.nsecsElapsed());
    if (!failure.empty())
        throw Error(ErrorCode::Internal, "engine benchmark failed: " + failure);
    return workers * static_cast<double>(perWorker) * 1e9 / static_cast<double>(elapsedNs);
}

/// The first line of pgbench's output that names an error, else its last line.
QString pgbenchFailure(const QString &output)
{
    const QStringList lines = output.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    for (const QString &line : lines)
        if (line.contains(QLatin1String("error")))
            return line.trimmed();
    return lines.isEmpty() ? QStringLiteral("no output") : lines.last().trimmed();
}

/// Throws unless namespace `ns` holds `cycles` succeeded operations and as many replays: what
/// the engine's cycles leave, so pgbench did the same work and not less.
void checkPgbenchWork(PgConnection &c, const std::string &ns, int cycles)
{
    const PgResult r = c.exec(
        "check pgbench's work",
        "SELECT (SELECT count(*) FROM idempo.operations WHERE namespace = $1 AND state = "
        "'succeeded'), "
        "(SELECT count(*) FROM idempo.suppressions WHERE namespace = $1 AND outcome = 'replayed')",
        PgParams().text(ns));
    if (r.integer(0, 0) != cycles || r.integer(0, 1) != cycles)
        throw Error(ErrorCode::Internal, "pgbench left " + std::to_string(r.integer(0, 0)) +
                                             " succeeded operations and " +
                                             std::to_string(r.integer(0, 1)) + " replays in " + ns +
                                             ", not " + std::to_string(cycles) + " of each");
}

/// Deletes the operations, history and suppressions of the namespaces starting with `prefix`;
/// returns what happened, for the report.
std::string cleanUp(PgConnection &c, const std::string &prefix)
{
    try {
        const PgResult r = c.exec("delete the benchmark's rows", R"SQL(
WITH gone AS (DELETE FROM idempo.operations WHERE namespace ^@ $1 RETURNING id),
history_gone AS (DELETE FROM idempo.operation_events WHERE operation_id IN (SELECT id FROM gone)),
suppressions_gone AS (DELETE FROM idempo.suppressions WHERE namespace ^@ $1),
runs_gone AS (DELETE FROM idempo.runs WHERE namespace ^@ $1)
SELECT count(*) FROM gone
)SQL",
                                  PgParams().text(prefix));
        return "deleted " + std::to_string(r.integer(0, 0)) + " operations of namespaces " +
               prefix + "*";
    } catch (const Error &e) {
        const std::string left = "left in namespaces " + prefix + "* (" + e.what() + ")";
        spdlog::warn("bench claim: rows {}", left);
        return left;
    }
}

// The floor (shared/baselines/claim-schema.sql and claim.sql): the simplest claim+complete, one
// table and two autocommit statements; its table lives in a schema of its own for the run.
constexpr const char *kFloorTable =
    "CREATE TABLE {s}.ops(key text primary key, payload_hash text not null, status text not null, "
    "lease_owner text, "
    "lease_expires_at timestamptz, fencing_token bigint not null default 1, attempts int not null "
    "default 0, "
    "result jsonb, created_at timestamptz not null default now(), updated_at timestamptz not null "
    "default now());\n"
    "CREATE INDEX ON {s}.ops(status, updated_at);\n"
    "INSERT INTO {s}.ops(key, payload_hash, status) VALUES ('hot', 'abc', 'succeeded')";
constexpr const char *kFloorCycle =
    "\\set k random(1, 1000000000)\n"
    "INSERT INTO {s}.ops(key, payload_hash, status, lease_owner, lease_expires_at) VALUES ('r' || "
    "CAST(:k AS bigint) "
    "|| '-s' || CAST(:client_id AS int), 'abc', 'dispatching', 'w', clock_timestamp() + interval "
    "'30 s') "
    "ON CONFLICT (key) DO NOTHING RETURNING fencing_token;\n"
    "UPDATE {s}.ops SET status = 'succeeded', result = jsonb_build_object('ok', true), updated_at "
    "= clock_timestamp() "
    "WHERE key = 'r' || CAST(:k AS bigint) || '-s' || CAST(:client_id AS int) AND fencing_token = "
    "1 "
    "AND status = 'dispatching';\n";
// A primary-key read of the floor's table: the floor of a replayed claim.
constexpr const char *kFloorLookup = "SELECT fencing_token FROM {s}.ops WHERE key = 'hot';\n";

/// `text` with every {s} replaced by the quoted schema name `schema` (a name this file makes).
std::string inSchema(std::string text, const std::string &schema)
{
    for (std::size_t at = text.find("{s}"); at != std::string::npos; at = text.find("{s}", at))
        text.replace(at, 3, "\"" + schema + "\"");
    return text;
}

/// pgbench's side of the cycle: a script and the variables it reads (`-D NAME=VALUE` each).
struct PgbenchCycle
{
    std::string script;
    std::vector<std::string> defines;
};

/// `arguments` as pgbench values: a define named `prefix` + position for each, except NULL, the
/// empty string (which pgbench cannot define) and the positions `fixed` names (1-based).
std::vector<std::string> pgbenchValues(const PgParams &arguments, const std::string &prefix,
                                       const std::map<std::size_t, std::string> &fixed,
                                       std::vector<std::string> &defines)
{
    std::vector<std::string> values;
    const auto &all = arguments.values();
    for (std::size_t i = 0; i < all.size(); ++i) {
        const std::string name = prefix + std::to_string(i + 1);
        if (const auto it = fixed.find(i + 1); it != fixed.end())
            values.push_back(it->second);
        else if (!all[i])
            values.emplace_back("NULL");
        else if (all[i]->empty())
            values.emplace_back("''");
        else {
            defines.push_back(name + '=' + *all[i]);
            values.push_back(':' + name);
        }
    }
    return values;
}

/// The very calls claim() and transition() send, as one pgbench transaction: `claim`, then
/// `completion` under the token the claim answered, then `claim` again (replayed), so that the
/// baseline follows any change to them. The key is a number unique per client and cycle in place
/// of `claim.key`, so namespace `claim.ns` must hold no such keys yet; the clock is unpinned.
PgbenchCycle pgbenchCycle(const ClaimRequest &claim, const TransitionRequest &completion)
{
    if (completion.to != OperationState::Succeeded || completion.errorClass)
        throw Error(ErrorCode::InvalidArgument,
                    "the pgbench cycle's transition is a completion: to succeeded, no error");
    PgbenchCycle cycle;
    const std::vector<std::string> clock = {"NULL", "0"};
    std::vector<std::string> claimArgs = pgbenchValues(PostgresLedgerStore::claimArguments(claim),
                                                       "c", {{2, ":key"}}, cycle.defines);
    claimArgs.insert(claimArgs.end(), clock.begin(), clock.end());
    TransitionRequest request = completion;
    request.ns = claim.ns;
    request.from = OperationState::Dispatching;
    std::vector<std::string> transitionArgs =
        pgbenchValues(PostgresLedgerStore::transitionArguments(request), "t",
                      {{2, ":key"}, {4, ":token"}}, cycle.defines);
    transitionArgs.insert(transitionArgs.end(), clock.begin(), clock.end());
    const std::string claimSql = PostgresLedgerStore::claimSql();
    const std::string claimStatement = pgbenchStatement(claimSql, claimArgs);
    cycle.defines.push_back("cycle=0");
    cycle.script =
        "\\set cycle :cycle + 1\n"
        "\\set key :client_id * 1000000000 + :cycle\n" +
        pgbenchStatement("SELECT fencing_token AS token FROM (" + claimSql + ") AS c", claimArgs) +
        " \\gset\n" + pgbenchStatement(PostgresLedgerStore::transitionSql(), transitionArgs) +
        ";\n" + claimStatement + ";\n";
    return cycle;
}

/// What a pgbench cycle sends: the engine's first cycle's claim (same payload, run, owner and
/// lease) and its completion.
struct PgbenchCalls
{
    ClaimRequest claim;
    TransitionRequest completion;
};

PgbenchCalls pgbenchCalls(Engine &engine)
{
    PgbenchCalls calls;
    ClaimRequest &claim = calls.claim;
    claim.runId = "run-0";
    claim.stepId = kStep;
    claim.target = kTarget;
    const nlohmann::json payload = parseStrictJson(payloadFor(0));
    claim.payload = canonicalJson(payload);
    claim.fingerprint = payloadFingerprint(payload);
    claim.owner = kOwner;
    claim.leaseMs = engine.settings().leaseMs;
    claim.maxAttempts = engine.settings().maxAttempts;
    TransitionRequest &completion = calls.completion;
    completion.to = OperationState::Succeeded;
    completion.actor = defaultOwner();
    completion.detail = "completed";
    completion.result = canonicalJson(parseStrictJson(kResult));
    completion.retentionMs = engine.settings().retentionMs;
    return calls;
}

/// One `bench claim` on PostgreSQL: where it runs, the names it writes under, its size and the
/// calls pgbench sends.
struct ClaimBench
{
    Engine &engine;
    QString program; ///< pgbench
    std::string conninfo;
    PgConnection &admin;     ///< checks pgbench's work, creates and drops what the rounds write
    std::string prefix;      ///< of every namespace the rounds write
    std::string floorSchema; ///< the floor's table's schema, for the run
    int workers = 1;
    int perWorker = 1;
    PgbenchCalls calls;
};

/// One round's rates, per second.
struct RoundRates
{
    double own = 0;         ///< pgbench running the store's own statements: a whole cycle
    double engineCycle = 0; ///< the engine: claim, complete, duplicate claim
    double floor = 0;       ///< the floor's claim and complete
    double engineClaim = 0; ///< the engine: claim and complete
    double lookup = 0;      ///< the floor's primary-key read
    double duplicate = 0;   ///< the engine: a duplicate claim, replayed
    BudgetRates budget;

    void keepBest(const RoundRates &round)
    {
        own = std::max(own, round.own);
        engineCycle = std::max(engineCycle, round.engineCycle);
        floor = std::max(floor, round.floor);
        engineClaim = std::max(engineClaim, round.engineClaim);
        lookup = std::max(lookup, round.lookup);
        duplicate = std::max(duplicate, round.duplicate);
        budget.keepBest(round.budget);
    }
    nlohmann::json toJson() const
    {
        return {{"raw_cycles_per_s", own},       {"engine_cycles_per_s", engineCycle},
                {"floor_cycles_per_s", floor},   {"engine_claim_complete_per_s", engineClaim},
                {"floor_lookups_per_s", lookup}, {"engine_duplicates_per_s", duplicate},
                {"budget", budget.toJson()}};
    }
};

/// Runs pgbench on `script` (text) with `workers` clients, `perWorker` transactions each.
double pgbenchScript(const QString &program, const std::string &conninfo, const std::string &script,
                     const std::vector<std::string> &defines, int workers, int perWorker);

/// Round `round`: pgbench's cycle and the engine's, the floor and the engine's claim and
/// complete, the floor's lookup and the engine's duplicate, then the engine's cycle without a
/// run, budgeted and charged; each side in turn, in namespaces of the round's own.
RoundRates measureRound(ClaimBench &b, int round)
{
    const std::string n = std::to_string(round);
    const auto floorScript = [&b](const char *script) {
        return pgbenchScript(b.program, b.conninfo, inSchema(script, b.floorSchema), {}, b.workers,
                             b.perWorker);
    };
    RoundRates rates;
    b.calls.claim.ns = b.prefix + "pgbench" + n;
    const PgbenchCycle cycle = pgbenchCycle(b.calls.claim, b.calls.completion);
    rates.own =
        pgbenchScript(b.program, b.conninfo, cycle.script, cycle.defines, b.workers, b.perWorker);
    checkPgbenchWork(b.admin, b.calls.claim.ns, b.workers * b.perWorker);
    rates.engineCycle =
        measureEngine(b.engine, b.prefix + "engine" + n, b.workers, b.perWorker, EngineStep::Cycle);
    rates.floor = floorScript(kFloorCycle);
    const std::string ns = b.prefix + "steps" + n;
    rates.engineClaim =
        measureEngine(b.engine, ns, b.workers, b.perWorker, EngineStep::ClaimAndComplete);
    rates.lookup = floorScript(kFloorLookup);
    rates.duplicate = measureEngine(b.engine, ns, b.workers, b.perWorker, EngineStep::Duplicate);
    const std::string runs = b.prefix + "runs" + n;
    rates.budget = {measureEngine(b.engine, runs + "-none", b.workers, b.perWorker,
                                  EngineStep::Cycle, BenchRun::None),
                    measureEngine(b.engine, runs + "-budgeted", b.workers, b.perWorker,
                                  EngineStep::Cycle, BenchRun::Budgeted),
                    measureEngine(b.engine, runs + "-charged", b.workers, b.perWorker,
                                  EngineStep::Cycle, BenchRun::Charged)};
    return rates;
}

/// Deletes what the rounds wrote and the floor's schema; returns what happened to the rows, for
/// the report.
std::string dropBenchData(ClaimBench &b)
{
    const std::string cleanup = cleanUp(b.admin, b.prefix);
    b.admin.execScript("drop the floor's table",
                       "DROP SCHEMA IF EXISTS \"" + b.floorSchema + "\" CASCADE");
    return cleanup;
}

/// The report of benchClaimPostgres(): the best of each side over the rounds, and each round.
nlohmann::json claimReport(const ClaimBench &b, const RoundRates &best,
                           const nlohmann::json &rounds, const std::string &cleanup)
{
    const auto ratio = [](double a, double c) { return c > 0 ? a / c : 0.0; };
    return {{"ledger",
             b.conninfo +
                 " (raw SQL: pgbench -M prepared, same calls; floor: shared/baselines/claim.sql)"},
            {"baseline", "pgbench"},
            {"workers", b.workers},
            {"cycles", b.workers * b.perWorker},
            {"engine_cycles_per_s", best.engineCycle},
            {"raw_cycles_per_s", best.own},
            {"ratio", ratio(best.engineCycle, best.own)},
            {"floor_cycles_per_s", best.floor},
            {"engine_claim_complete_per_s", best.engineClaim},
            {"floor_ratio", ratio(best.engineClaim, best.floor)},
            {"floor_lookups_per_s", best.lookup},
            {"engine_duplicates_per_s", best.duplicate},
            {"duplicate_ratio", ratio(best.duplicate, best.lookup)},
            {"budget", best.budget.toJson()},
            {"rounds", rounds},
            {"cleanup", cleanup}};
}

} // namespace

std::string pgbenchStatement(std::string_view statement, const std::vector<std::string> &args)
{
    std::string out;
    std::size_t at = 0;
    for (std::size_t dollar = statement.find('$'); dollar != std::string_view::npos;
         dollar = statement.find('$', at)) {
        std::size_t n = 0;
        std::size_t end = dollar + 1;
        for (; end < statement.size() && statement[end] >= '0' && statement[end] <= '9'; ++end)
            n = n * 10 + static_cast<std::size_t>(statement[end] - '0');
        if (n < 1 || n > args.size())
            throw Error(ErrorCode::Internal,
                        "pgbench script: no value for " +
                            std::string(statement.substr(dollar, end - dollar)));
        out.append(statement.substr(at, dollar - at)).append(args[n - 1]);
        at = end;
    }
    out.append(statement.substr(at));
    // The script ends the statement itself, with ';' or \gset.
    while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
        out.pop_back();
    return out;
}

double measurePgbench(const QString &program, const QString &conninfo, const QString &scriptPath,
                      const std::vector<std::string> &defines, int workers, int perWorker)
{
    QStringList arguments{QStringLiteral("-n"),
                          QStringLiteral("-M"),
                          QStringLiteral("prepared"),
                          QStringLiteral("-c"),
                          QString::number(workers),
                          QStringLiteral("-j"),
                          QString::number(workers),
                          QStringLiteral("-t"),
                          QString::number(perWorker),
                          QStringLiteral("-f"),
                          scriptPath};
    for (const std::string &define : defines)
        arguments << QStringLiteral("-D") << QString::fromStdString(define);
    arguments << conninfo;
    QProcess pgbench;
    pgbench.start(program, arguments);
    if (!pgbench.waitForStarted())
        throw Error(ErrorCode::LedgerUnavailable, "cannot start " + program.toStdString() + ": " +
                                                      pgbench.errorString().toStdString());
    pgbench.waitForFinished(-1);
    const QString out = QString::fromLocal8Bit(pgbench.readAllStandardOutput());
    static const QRegularExpression tps(
        QStringLiteral(R"(^tps = ([0-9.]+) \(without initial connection time\)$)"),
        QRegularExpression::MultilineOption);
    const QRegularExpressionMatch match = tps.match(out);
    if (pgbench.exitStatus() != QProcess::NormalExit || pgbench.exitCode() != 0 ||
        !match.hasMatch()) {
        const QString err = QString::fromLocal8Bit(pgbench.readAllStandardError());
        throw Error(ErrorCode::Internal,
                    "pgbench failed (exit " + std::to_string(pgbench.exitCode()) +
                        "): " + pgbenchFailure(err + QLatin1Char('\n') + out).toStdString());
    }
    // from_chars: pgbench writes a C-locale number whatever this process's locale.
    const std::string rate = match.captured(1).toStdString();
    double cyclesPerS = 0;
    std::from_chars(rate.data(), rate.data() + rate.size(), cyclesPerS);
    return cyclesPerS;
}

nlohmann::json benchClaimPostgres(Engine &engine, const BenchOptions &options)
{
    const QString program = QStandardPaths::findExecutable(QStringLiteral("pgbench"));
    if (program.isEmpty())
        throw Error(ErrorCode::LedgerUnavailable,
                    "bench claim on PostgreSQL compares against pgbench, which is not on PATH "
                    "(Debian: apt install postgresql-client)");
    // Without its password: pgbench and the check connection find it as idempo does (.pgpass).
    const std::string conninfo = engine.store().describe();
    PgConnection admin(conninfo);
    const int workers = options.workers;
    const std::string prefix = "bench-" + std::to_string(QDateTime::currentMSecsSinceEpoch()) + "-";
    ClaimBench bench{engine,
                     program,
                     conninfo,
                     admin,
                     prefix,
                     "idempo_bench_floor_" + std::to_string(QDateTime::currentMSecsSinceEpoch()),
                     workers,
                     (options.cycles + workers - 1) / workers,
                     pgbenchCalls(engine)};
    admin.execScript("create the floor's table", "CREATE SCHEMA \"" + bench.floorSchema + "\";\n" +
                                                     inSchema(kFloorTable, bench.floorSchema));
    RoundRates best;
    nlohmann::json rounds = nlohmann::json::array();
    try {
        for (int round = 0; round < kRounds; ++round) {
            const RoundRates rates = measureRound(bench, round);
            best.keepBest(rates);
            rounds.push_back(rates.toJson());
        }
    } catch (...) {
        dropBenchData(bench);
        throw;
    }
    const std::string cleanup = dropBenchData(bench);
    return claimReport(bench, best, rounds, cleanup);
}

namespace {

double pgbenchScript(const QString &program, const std::string &conninfo, const std::string &script,
                     const std::vector<std::string> &defines, int workers, int perWorker)
{
    QTemporaryFile file;
    if (!file.open() || file.write(QByteArray::fromStdString(script)) < 0 || !file.flush())
        throw Error(ErrorCode::Internal,
                    "cannot write the pgbench script: " + file.errorString().toStdString());
    return measurePgbench(program, QString::fromStdString(conninfo), file.fileName(), defines,
                          workers, perWorker);
}

} // namespace

} // namespace idempo::cli
