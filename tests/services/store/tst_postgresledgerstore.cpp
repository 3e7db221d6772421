// SPDX-License-Identifier: Apache-2.0
// What only the PostgreSQL ledger has: the claim statement, notifications, the server's clock,
// connection strings and their errors, explicit migrations. Runs under tests/pg/with-postgres.sh;
// passwords and least-privilege roles are in tst_postgresroles.cpp.
#include <array>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include <QCryptographicHash>
#include <QtTest>

#include "error.h"
#include "ledgerfactory.h"
#include "ledgerfixture.h"
#include "ledgerrules.h"
#include "migrations.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgrestesthelpers.h"
#include "recordjson.h"

using namespace idempo;
using namespace idempo::test::pg;
using idempo::test::LedgerFixture;

namespace {

/// An existing record and a claim on it.
struct ClaimCase
{
    OperationState state;
    bool sameFingerprint;
    ToolKind kind;
    std::optional<std::int64_t> leaseExpiresAtMs;
    std::optional<std::int64_t> nextAttemptAtMs;
    std::optional<std::int64_t> retentionExpiresAtMs;
    bool requiresApproval;
};

std::vector<ClaimCase> everyClaimCase(std::int64_t now)
{
    const std::optional<std::int64_t> instants[] = {std::nullopt, now, now + 1};
    const ToolKind kinds[] = {ToolKind::Read, ToolKind::IdempotentWrite, ToolKind::ProtectedWrite};
    std::vector<ClaimCase> cases;
    for (int state = 0; state < OperationStateCount; ++state)
        for (const bool sameFingerprint : {true, false})
            for (const ToolKind kind : kinds)
                for (const auto lease : instants)
                    for (const auto nextAttempt : instants)
                        for (const auto retention : instants)
                            for (const bool approval : {false, true})
                                cases.push_back({OperationState(state), sameFingerprint, kind,
                                                 lease, nextAttempt, retention, approval});
    return cases;
}

/// The payloads of the claim cases: the seeded record's and another one, with their SHA-256.
const char *kOldPayload = R"({"a":1})";
const char *kNewPayload = R"({"a":2})";
std::string sha256Of(const char *text)
{
    return QCryptographicHash::hash(QByteArrayView(text), QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

/// Writes a record as an earlier claim would have left it (as the owner): $1 namespace, $2 key,
/// $3 kind, $4 state, $5 lease expiry, $6 next attempt, $7 now, $8 retention expiry, $9
/// fingerprint.
const char *kSeedSql = R"SQL(
INSERT INTO idempo.operations (namespace, operation_key, run_id, tool_kind, state, payload,
    payload_fingerprint, attempt, max_attempts, lease_owner, lease_expires_at_ms, fencing_token,
    next_attempt_at_ms, error_class, error_detail, created_at_ms, updated_at_ms,
    retention_expires_at_ms, operation_version, schema_version)
VALUES ($1, $2, 'run-old', $3, $4, '{"a":1}', $9, 1, 3, 'old-owner', $5::bigint,
    nextval('idempo.fencing_sequence'), $6::bigint, 'transient', '503', $7::bigint - 10,
    $7::bigint - 5, $8::bigint, 3, 1)
)SQL";

} // namespace

class TestPostgresLedgerStore final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
    }

    /// The claim statement against planClaim() and the record changes the SQLite store makes,
    /// for every state, fingerprint, tool kind, and lease, backoff and retention expiry just
    /// before, at and without the clock's instant.
    void claimFollowsPlanClaimInEveryCase()
    {
        LedgerFixture f;
        const std::int64_t now = f.store().nowMs();
        PgConnection admin(testUrl());
        // planClaim() is the rule before run budgets: the seeded records' run has none (its
        // seeded failures would halt it otherwise; tst_runbudgetcontract covers budgets).
        admin.exec("no run budgets", "INSERT INTO idempo.guard_settings (name, value) VALUES "
                                     "('run_failed_dispatches', ''), ('run_no_progress_s', '') "
                                     "ON CONFLICT (name) DO UPDATE SET value = excluded.value");
        const std::vector<ClaimCase> cases = everyClaimCase(now);
        QCOMPARE(cases.size(), std::size_t(OperationStateCount * 2 * 3 * 3 * 3 * 3 * 2));
        std::int64_t lastSuppression = 0;
        for (std::size_t i = 0; i < cases.size(); ++i) {
            checkClaim(f.store(), admin, now, cases[i], "case-" + std::to_string(i) + ":step",
                       lastSuppression);
            if (QTest::currentTestFailed())
                return;
        }
    }

    /// Workers racing for a few keys on the server's running clock, with leases short enough
    /// to lapse mid-step: takeovers fence the lapsed holders, and every key succeeds at most once.
    void takeoversUnderLoadKeepOneWinner()
    {
        LedgerFixture f; // a migrated, empty ledger
        auto store = std::make_shared<PostgresLedgerStore>(testUrl());
        Engine engine(store, Engine::Settings{}, LedgerFixture::steadyPolicy());
        constexpr int kThreads = 8;
        constexpr int kKeys = 40;
        constexpr int kClaimsPerThread = 120;
        std::array<std::atomic<int>, kKeys> successes{};
        std::atomic<int> stale{0};
        std::atomic<int> unexpected{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                std::minstd_rand random(static_cast<unsigned>(t + 1));
                for (int i = 0; i < kClaimsPerThread; ++i) {
                    const int k = static_cast<int>(random() % kKeys);
                    ClaimInput in = claimInput("load:" + std::to_string(k));
                    in.kind = ToolKind::IdempotentWrite;
                    in.owner = "worker-" + std::to_string(t);
                    in.leaseMs = 2;
                    try {
                        const ClaimResult r = engine.claim(in);
                        if (r.outcome != ClaimOutcome::Claimed)
                            continue;
                        std::this_thread::sleep_for(std::chrono::microseconds(random() % 6'000));
                        engine.complete(kNs, in.key, r.operation.fencingToken, "{}", "");
                        ++successes[static_cast<std::size_t>(k)];
                    } catch (const Error &e) {
                        ++(e.code() == ErrorCode::StaleLease ? stale : unexpected);
                    }
                }
            });
        }
        for (auto &thread : threads)
            thread.join();
        QCOMPARE(unexpected.load(), 0);
        for (int k = 0; k < kKeys; ++k) {
            const std::string key = "load:" + std::to_string(k);
            const Operation op = *store->find(kNs, key);
            QCOMPARE(successes[static_cast<std::size_t>(k)].load(),
                     op.state == OperationState::Succeeded ? 1 : 0);
            std::int64_t token = 0;
            for (const OperationEvent &e : store->history(kNs, key)) {
                QVERIFY(e.fencingToken >= token);
                token = e.fencingToken;
            }
        }
        qInfo("lapsed holders fenced off: %d", stale.load());
    }

    void notifiesCreationsAndTransitions()
    {
        LedgerFixture f;
        auto &store = dynamic_cast<PostgresLedgerStore &>(f.store());
        const auto listener = store.listen();

        const ClaimResult claimed = f.engine().claim(claimInput("run-42:charge"));
        auto arrived = listener->waitForNotification(5'000);
        QCOMPARE(arrived.size(), std::size_t(1));
        QCOMPARE(arrived[0].channel, std::string(PostgresLedgerStore::NotificationChannel));
        auto n = parseOperationNotification(arrived[0].payload);
        QVERIFY(n);
        QCOMPARE(n->ns, kNs);
        QCOMPARE(n->key, std::string("run-42:charge"));
        QCOMPARE(n->runId, std::string("run-42"));
        QCOMPARE(n->state, OperationState::Dispatching);
        QCOMPARE(n->version, std::int64_t(1));

        // Answers without a write notify nothing; neither do refused transitions.
        QCOMPARE(f.engine().claim(claimInput("run-42:charge")).outcome, ClaimOutcome::InProgress);
        QCOMPARE(errorOf([&] { f.engine().complete(kNs, "run-42:charge", 999, "{}", ""); }).code(),
                 ErrorCode::StaleLease);
        QVERIFY(listener->waitForNotification(200).empty());

        f.engine().complete(kNs, "run-42:charge", claimed.operation.fencingToken, R"({"ok":true})",
                            "");
        arrived = listener->waitForNotification(5'000);
        QCOMPARE(arrived.size(), std::size_t(1));
        n = parseOperationNotification(arrived[0].payload);
        QVERIFY(n);
        QCOMPARE(n->state, OperationState::Succeeded);
        QCOMPARE(n->version, std::int64_t(2));

        QVERIFY(!parseOperationNotification("not json"));
        QVERIFY(!parseOperationNotification(
            R"({"ns":"a","key":"b","run_id":"","state":"gone","version":1})"));
    }

    void listenerTimesOut()
    {
        LedgerFixture f;
        const auto listener = dynamic_cast<PostgresLedgerStore &>(f.store()).listen();
        const auto start = std::chrono::steady_clock::now();
        QVERIFY(listener->waitForNotification(150).empty());
        const auto waited = std::chrono::steady_clock::now() - start;
        QVERIFY(waited >= std::chrono::milliseconds(140));
        QVERIFY(waited < std::chrono::milliseconds(2'000));
    }

    void serverClockDecides()
    {
        LedgerFixture f; // a migrated, empty ledger
        PostgresLedgerStore store(testUrl());
        const auto system = [] {
            return std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                .count();
        };
        // The server runs on this machine: its clock_timestamp() is the system clock.
        QVERIFY(std::abs(store.nowMs() - system()) < 5'000);

        Engine engine(std::shared_ptr<LedgerStore>(&store, [](LedgerStore *) {}));
        ClaimInput in = claimInput("run-43:lookup");
        in.leaseMs = 5'000;
        const std::int64_t before = store.nowMs();
        const ClaimResult r = engine.claim(in);
        const std::int64_t after = store.nowMs();
        QVERIFY(r.operation.updatedAtMs >= before && r.operation.updatedAtMs <= after);
        QCOMPARE(*r.operation.leaseExpiresAtMs - r.operation.updatedAtMs, std::int64_t(5'000));

        // A skewed server clock: the offset applies to every expiry judged in SQL.
        PostgresLedgerStore skewed(testUrl(),
                                   PostgresLedgerStore::Options{.clockOffsetMs = 3'600'000});
        QVERIFY(std::abs(skewed.nowMs() - system() - 3'600'000) < 5'000);
        in.owner = "worker-b";
        Engine late(std::shared_ptr<LedgerStore>(&skewed, [](LedgerStore *) {}));
        QCOMPARE(late.claim(in).outcome, ClaimOutcome::ReconcileRequired);

        PostgresLedgerStore pinned(testUrl(), PostgresLedgerStore::Options{.pinnedClockMs = 1'000});
        QCOMPARE(pinned.nowMs(), std::int64_t(1'000));
        pinned.advanceClockMs(250);
        QCOMPARE(pinned.nowMs(), std::int64_t(1'250));
    }

    void unreachableServerFailsFastOnOneLine_data()
    {
        QTest::addColumn<QString>("conninfo");
        QTest::newRow("refused port")
            << QStringLiteral("postgresql://idempo@127.0.0.1:1/idempo_test");
        QTest::newRow("unroutable host")
            << QStringLiteral("host=192.0.2.1 dbname=idempo_test connect_timeout=1");
    }

    void unreachableServerFailsFastOnOneLine()
    {
        QFETCH(QString, conninfo);
        const auto start = std::chrono::steady_clock::now();
        const Error e = errorOf([&] { PostgresLedgerStore store(conninfo.toStdString()); });
        QCOMPARE(e.code(), ErrorCode::LedgerUnavailable);
        QVERIFY(std::chrono::steady_clock::now() - start < std::chrono::seconds(4));
        const std::string message = e.what();
        QVERIFY2(message.find('\n') == std::string::npos, message.c_str());
        QVERIFY2(message.size() > 20, message.c_str());
    }

    void openLedgerTakesUrisKeywordsAndServices()
    {
        LedgerFixture f;
        const QUrl url(QString::fromStdString(testUrl()));
        const QString keywords = QStringLiteral("host=%1 port=%2 dbname=idempo_test user=%3")
                                     .arg(url.host())
                                     .arg(url.port())
                                     .arg(url.userName());
        QTemporaryDir dir;
        QFile services(dir.filePath(QStringLiteral("pg_service.conf")));
        QVERIFY(services.open(QIODevice::WriteOnly));
        services.write("[idempo-ledger]\n" +
                       keywords.split(QLatin1Char(' ')).join(QLatin1Char('\n')).toUtf8() + "\n");
        services.close();
        qputenv("PGSERVICEFILE", services.fileName().toLocal8Bit());

        for (const QString &name : {QString::fromStdString(testUrl()), keywords,
                                    QStringLiteral("service=idempo-ledger")}) {
            const auto store = openLedger(name);
            QVERIFY2(dynamic_cast<PostgresLedgerStore *>(store.get()), qPrintable(name));
            QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        }
        qunsetenv("PGSERVICEFILE");
        QCOMPARE(errorOf([] { openLedger(QStringLiteral("mysql://x")); }).code(),
                 ErrorCode::InvalidArgument);
    }

    void schemaIsExplicit()
    {
        PgConnection admin(testUrl());
        admin.execScript("drop database",
                         "DROP DATABASE IF EXISTS idempo_schema_test WITH (FORCE)");
        admin.execScript("create database", "CREATE DATABASE idempo_schema_test");
        const std::string url = urlFor("idempo", "idempo_schema_test");
        Engine engine(std::make_shared<PostgresLedgerStore>(url));
        QCOMPARE(engine.store().schemaVersion(), 0);
        const Error missing = errorOf([&] { engine.claim(claimInput("run-1:x")); });
        QCOMPARE(missing.code(), ErrorCode::SchemaMismatch);
        QVERIFY2(std::string(missing.what()).find("idempo init") != std::string::npos,
                 missing.what());

        engine.store().migrate();
        engine.store().migrate(); // applying twice changes nothing
        QCOMPARE(engine.store().schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        QCOMPARE(engine.claim(claimInput("run-1:x")).outcome, ClaimOutcome::Claimed);

        PgConnection(url).execScript(
            "a newer build migrated",
            "INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future')");
        PostgresLedgerStore newer(url);
        const Error refused = errorOf([&] { newer.find(kNs, "run-1:x"); });
        QCOMPARE(refused.code(), ErrorCode::SchemaMismatch);
        QVERIFY2(std::string(refused.what()).find("newer") != std::string::npos, refused.what());
        QCOMPARE(errorOf([&] { newer.migrate(); }).code(), ErrorCode::SchemaMismatch);
    }

private:
    /// Seeds `c` under `key`, claims it and compares with planClaim() and the SQLite store's
    /// writes.
    void checkClaim(LedgerStore &store, PgConnection &admin, std::int64_t now, const ClaimCase &c,
                    const std::string &key, std::int64_t &lastSuppression)
    {
        admin.exec("seed", kSeedSql,
                   PgParams()
                       .text(kNs)
                       .text(key)
                       .text(toolKindName(c.kind))
                       .text(stateName(c.state))
                       .optionalInteger(c.leaseExpiresAtMs)
                       .optionalInteger(c.nextAttemptAtMs)
                       .integer(now)
                       .optionalInteger(c.retentionExpiresAtMs)
                       .text(sha256Of(kOldPayload)));
        const Operation existing = *store.find(kNs, key);
        const std::size_t eventsBefore = store.history(kNs, key).size();
        const ClaimRequest request{.ns = kNs,
                                   .key = key,
                                   .runId = "run-new",
                                   .stepId = "step",
                                   .kind = c.kind,
                                   .payload = c.sameFingerprint ? kOldPayload : kNewPayload,
                                   .fingerprint =
                                       sha256Of(c.sameFingerprint ? kOldPayload : kNewPayload),
                                   .owner = "worker-new",
                                   .leaseMs = 7'000,
                                   .requiresApproval = c.requiresApproval};
        const ClaimResult r = store.claim(request);
        const ClaimPlan plan = planClaim(&existing, request, now);
        const std::string where = key + " " + operationJson(existing).dump();
        QVERIFY2(r.outcome == plan.outcome, where.c_str());

        Operation expected = existing;
        const std::int64_t token = r.operation.fencingToken;
        switch (plan.write) {
        case ClaimWrite::None:
            break;
        case ClaimWrite::Create:
            expected = newOperation(request, now);
            if (!c.requiresApproval)
                startDispatch(expected, request.owner, request.leaseMs, now, token);
            expected.id = r.operation.id;
            break;
        case ClaimWrite::Dispatch:
            startDispatch(expected, request.owner, request.leaseMs, now, token);
            expected.version += 1;
            break;
        case ClaimWrite::Revoke:
            revokeLease(expected, now, token);
            expected.version += 1;
            break;
        }
        const bool newToken = plan.write == ClaimWrite::Dispatch ||
                              plan.write == ClaimWrite::Revoke ||
                              (plan.write == ClaimWrite::Create && !c.requiresApproval);
        QVERIFY2(!newToken || token > existing.fencingToken, where.c_str());
        QCOMPARE(operationJson(r.operation), operationJson(expected));
        QCOMPARE(operationJson(*store.find(kNs, key)), operationJson(expected));

        const std::size_t events = store.history(kNs, key).size();
        if (plan.write == ClaimWrite::Create)
            QCOMPARE(events, std::size_t(1)); // a record whose retention expired loses its history
        else
            QCOMPARE(events, eventsBefore + (plan.write == ClaimWrite::None ? 0 : 1));

        const auto suppressed = store.suppressions(kNs, lastSuppression, 10);
        QCOMPARE(suppressed.size(), std::size_t(r.outcome == ClaimOutcome::Claimed ? 0 : 1));
        if (!suppressed.empty()) {
            QCOMPARE(suppressed[0].key, key);
            QCOMPARE(suppressed[0].outcome, r.outcome);
            QCOMPARE(suppressed[0].state, expected.state);
            QCOMPARE(suppressed[0].fingerprint, request.fingerprint);
            lastSuppression = suppressed[0].id;
        }
    }
};

QTEST_GUILESS_MAIN(TestPostgresLedgerStore)
#include "tst_postgresledgerstore.moc"
