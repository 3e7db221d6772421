// SPDX-License-Identifier: Apache-2.0
#include "bench.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include <QElapsedTimer>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QVariant>

#include "engine.h"
#include "error.h"
#include "pgbench.h"
#include "sqliteledgerstore.h"

namespace idempo::cli {
namespace {

constexpr int kRounds = 3;

std::string payloadFor(int i)
{
    return R"({"amount":1250,"currency":"EUR","to":"acct-)" + std::to_string(i) + R"("})";
}

/// Runs `body(worker, index)` for `cycles` indices spread over `workers` threads; returns cycles/s.
template <typename Body> double measure(int cycles, int workers, Body body)
{
    std::atomic<int> next{0};
    std::atomic<bool> failed{false};
    std::string failure;
    QElapsedTimer timer;
    timer.start();
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) {
        threads.emplace_back([&, w] {
            try {
                for (int i = next++; i < cycles; i = next++)
                    body(w, i);
            } catch (const std::exception &e) {
                if (!failed.exchange(true))
                    failure = e.what();
            }
        });
    }
    for (auto &t : threads)
        t.join();
    if (failed)
        throw Error(ErrorCode::Internal, "benchmark failed: " + failure);
    return cycles * 1000.0 / std::max<qint64>(1, timer.elapsed());
}

void exec(QSqlQuery &q, const QVariantList &binds)
{
    for (int i = 0; i < binds.size(); ++i)
        q.bindValue(i, binds.at(i));
    if (!q.exec())
        throw Error(ErrorCode::Internal,
                    "raw statement failed: " + q.lastError().text().toStdString());
}

/// The statements SqliteLedgerStore issues for one cycle, prepared once per thread.
struct RawStatements
{
    explicit RawStatements(QSqlDatabase db)
        : begin(db), commit(db), select(db), token(db), insert(db), event(db), update(db),
          suppression(db)
    {
        begin.prepare(QStringLiteral("BEGIN IMMEDIATE"));
        commit.prepare(QStringLiteral("COMMIT"));
        select.prepare(QStringLiteral("SELECT id, namespace, operation_key, run_id, step_id, "
                                      "target, tool_kind, state, payload, "
                                      "payload_fingerprint, fingerprint_fields, attempt, "
                                      "max_attempts, lease_owner, lease_expires_at_ms, "
                                      "fencing_token, next_attempt_at_ms, error_class, "
                                      "error_detail, result, receipt, created_at_ms, "
                                      "updated_at_ms, retention_expires_at_ms, operation_version, "
                                      "schema_version, value_minor, value_currency "
                                      "FROM operations "
                                      "WHERE namespace = ? AND operation_key = ?"));
        token.prepare(
            QStringLiteral("UPDATE fencing_sequence SET last_token = last_token + 1 WHERE id = 1 "
                           "RETURNING last_token"));
        insert.prepare(QStringLiteral(
            "INSERT INTO operations (namespace, operation_key, run_id, step_id, target, tool_kind, "
            "state, "
            "payload, payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner, "
            "lease_expires_at_ms, fencing_token, created_at_ms, updated_at_ms, operation_version, "
            "schema_version, value_minor, value_currency) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
        event.prepare(QStringLiteral(
            "INSERT INTO operation_events (operation_id, at_ms, from_state, to_state, "
            "fencing_token, attempt, actor, error_class, detail) VALUES (?,?,?,?,?,?,?,?,?)"));
        update.prepare(QStringLiteral(
            "UPDATE operations SET state = ?, attempt = ?, max_attempts = ?, lease_owner = ?, "
            "lease_expires_at_ms = ?, fencing_token = ?, next_attempt_at_ms = ?, error_class = ?, "
            "error_detail = ?, result = ?, receipt = ?, updated_at_ms = ?, retention_expires_at_ms "
            "= ?, "
            "operation_version = ?, schema_version = ? WHERE id = ? AND operation_version = ?"));
        suppression.prepare(
            QStringLiteral("INSERT INTO suppressions (namespace, operation_key, at_ms, outcome, "
                           "state, source, fingerprint) VALUES (?,?,?,?,?,?,?)"));
    }

    void cycle(const QString &ns, int i)
    {
        const QString key = QStringLiteral("run-%1:provision_account").arg(i);
        const qlonglong now = QDateTime::currentMSecsSinceEpoch();
        const QString payload = QString::fromStdString(payloadFor(i));
        const QString fingerprint(64, QLatin1Char('a'));
        const QString owner = QStringLiteral("bench");
        // claim
        exec(begin, {});
        exec(select, {ns, key});
        exec(token, {});
        token.next();
        const qlonglong fencing = token.value(0).toLongLong();
        token.finish();
        const QString none = QStringLiteral("");
        exec(insert, {ns,
                      key,
                      none,
                      none,
                      none,
                      QStringLiteral("protected_write"),
                      QStringLiteral("dispatching"),
                      payload,
                      fingerprint,
                      QStringLiteral("[]"),
                      1,
                      3,
                      owner,
                      now + 30000,
                      fencing,
                      now,
                      now,
                      1,
                      1,
                      QVariant(),
                      QVariant()});
        const qlonglong id = insert.lastInsertId().toLongLong();
        exec(event, {id, now, QVariant(), QStringLiteral("dispatching"), fencing, 1, owner,
                     QVariant(), QStringLiteral("created")});
        exec(commit, {});
        // complete
        exec(begin, {});
        exec(select, {ns, key});
        select.finish();
        exec(update, {QStringLiteral("succeeded"), 1, 3, owner, QVariant(), fencing, QVariant(),
                      QVariant(), none, QStringLiteral("{\"account\":\"A-1\"}"), none, now,
                      now + 86400000, 2, 1, id, 1});
        exec(event, {id, now, QStringLiteral("dispatching"), QStringLiteral("succeeded"), fencing,
                     1, owner, QVariant(), QStringLiteral("completed")});
        exec(commit, {});
        // duplicate claim → replayed
        exec(begin, {});
        exec(select, {ns, key});
        select.finish();
        exec(suppression, {ns, key, now, QStringLiteral("replayed"), QStringLiteral("succeeded"),
                           owner, fingerprint});
        exec(commit, {});
    }

    QSqlQuery begin, commit, select, token, insert, event, update, suppression;
};

} // namespace

ClaimInput benchClaimInput(int i, BenchRun run, int worker)
{
    ClaimInput in;
    in.key = "run-" + std::to_string(i) + ":provision_account";
    in.payloadJson = payloadFor(i);
    switch (run) {
    case BenchRun::PerCycle:
        in.runId = "run-" + std::to_string(i);
        break;
    case BenchRun::None:
        break;
    case BenchRun::Charged:
        in.cost = Amount{1, "EUR"};
        in.tokens = 10;
        [[fallthrough]];
    case BenchRun::Budgeted:
        in.runId = "budgeted-" + std::to_string(worker);
        break;
    }
    return in;
}

void BudgetRates::keepBest(const BudgetRates &round)
{
    noRun = std::max(noRun, round.noRun);
    budgeted = std::max(budgeted, round.budgeted);
    charged = std::max(charged, round.charged);
}

nlohmann::json BudgetRates::toJson() const
{
    const auto ratio = [this](double rate) { return noRun > 0 ? rate / noRun : 0.0; };
    return {{"no_run_cycles_per_s", noRun},
            {"budgeted_run_cycles_per_s", budgeted},
            {"charged_run_cycles_per_s", charged},
            {"budgeted_ratio", ratio(budgeted)},
            {"charged_ratio", ratio(charged)}};
}

nlohmann::json benchClaim(Engine &engine, const BenchOptions &options)
{
    if (engine.store().dialect() == "postgresql")
        return benchClaimPostgres(engine, options);
    if (engine.store().dialect() != "sqlite")
        throw Error(ErrorCode::InvalidArgument,
                    "bench claim needs an sqlite: or postgresql:// ledger");
    // A fresh ledger of the same kind, so the figures do not depend on (or pollute) the user's.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bench.db"));
    auto store = std::make_shared<SqliteLedgerStore>(path, std::make_shared<SystemClock>());
    Engine benchEngine(store, engine.settings(), RetryPolicy{});

    double bestEngine = 0;
    double bestRaw = 0;
    BudgetRates budget;
    nlohmann::json rounds = nlohmann::json::array();
    for (int round = 0; round < kRounds; ++round) {
        const QString rawNs = QStringLiteral("raw%1").arg(round);
        std::vector<std::unique_ptr<RawStatements>> raw(options.workers);
        const double rawRate = measure(options.cycles, options.workers, [&](int w, int i) {
            if (!raw[w])
                raw[w] = std::make_unique<RawStatements>(store->connection().db);
            raw[w]->cycle(rawNs, i);
        });
        raw.clear();
        const auto engineCycles = [&](const std::string &ns, BenchRun run) {
            return measure(options.cycles, options.workers, [&](int w, int i) {
                ClaimInput in = benchClaimInput(i, run, w);
                in.ns = ns;
                in.owner = "bench";
                const ClaimResult claimed = benchEngine.claim(in);
                if (claimed.outcome != ClaimOutcome::Claimed)
                    throw Error(ErrorCode::Internal,
                                "expected claimed, got " +
                                    std::string(claimOutcomeName(claimed.outcome)));
                benchEngine.complete(ns, in.key, claimed.operation.fencingToken,
                                     R"({"account":"A-1"})", "");
                if (benchEngine.claim(in).outcome != ClaimOutcome::Replayed)
                    throw Error(ErrorCode::Internal, "expected replayed");
            });
        };
        const std::string ns = "engine" + std::to_string(round);
        const double engineRate = engineCycles(ns, BenchRun::None);
        const BudgetRates budgetRound{engineRate,
                                      engineCycles(ns + "-budgeted", BenchRun::Budgeted),
                                      engineCycles(ns + "-charged", BenchRun::Charged)};
        budget.keepBest(budgetRound);
        bestRaw = std::max(bestRaw, rawRate);
        bestEngine = std::max(bestEngine, engineRate);
        rounds.push_back({{"raw_cycles_per_s", rawRate},
                          {"engine_cycles_per_s", engineRate},
                          {"budget", budgetRound.toJson()}});
    }
    return {{"ledger", "sqlite (fresh temporary file, synchronous=FULL, WAL)"},
            {"workers", options.workers},
            {"cycles", options.cycles},
            {"engine_cycles_per_s", bestEngine},
            {"raw_cycles_per_s", bestRaw},
            {"ratio", bestRaw > 0 ? bestEngine / bestRaw : 0.0},
            {"budget", budget.toJson()},
            {"rounds", rounds}};
}

std::string benchReportText(const nlohmann::json &report)
{
    char line[1024]; // room for a long PostgreSQL connection string
    std::snprintf(line, sizeof line,
                  "bench claim on %s, %d worker(s), %d cycles x %d rounds (claim -> complete -> "
                  "duplicate claim)\n"
                  "  engine: %10.0f cycles/s\n  raw SQL: %9.0f cycles/s\n  ratio:   %9.2f",
                  report["ledger"].get<std::string>().c_str(), report["workers"].get<int>(),
                  report["cycles"].get<int>(), kRounds, report["engine_cycles_per_s"].get<double>(),
                  report["raw_cycles_per_s"].get<double>(), report["ratio"].get<double>());
    std::string text = line;
    if (report.contains("budget")) {
        const nlohmann::json &b = report["budget"];
        std::snprintf(
            line, sizeof line,
            "\nrun budgets (same rounds): no run %8.0f cycles/s, budgeted run %8.0f "
            "(%4.2f), charged %8.0f (%4.2f)",
            b["no_run_cycles_per_s"].get<double>(), b["budgeted_run_cycles_per_s"].get<double>(),
            b["budgeted_ratio"].get<double>(), b["charged_run_cycles_per_s"].get<double>(),
            b["charged_ratio"].get<double>());
        text += line;
    }
    if (report.contains("floor_ratio")) {
        std::snprintf(
            line, sizeof line,
            "\nagainst the floor (shared/baselines/claim.sql, same run):\n"
            "  claim+complete: %8.0f /s, floor %8.0f /s, ratio %5.2f\n"
            "  replayed claim: %8.0f /s, primary-key SELECT %8.0f /s, ratio %5.2f",
            report["engine_claim_complete_per_s"].get<double>(),
            report["floor_cycles_per_s"].get<double>(), report["floor_ratio"].get<double>(),
            report["engine_duplicates_per_s"].get<double>(),
            report["floor_lookups_per_s"].get<double>(), report["duplicate_ratio"].get<double>());
        text += line;
    }
    return text;
}

} // namespace idempo::cli
