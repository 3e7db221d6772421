// SPDX-License-Identifier: Apache-2.0
// What only the PostgreSQL ledger has: notifications, the server's clock, connection strings and
// their errors, explicit migrations and least-privilege roles. Runs under
// tests/pg/with-postgres.sh.
#include <array>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include <QCryptographicHash>
#include <QtTest>

#include "approvecommand.h"
#include "auditverify.h"
#include "dlqreplaycommand.h"
#include "error.h"
#include "guardsettingcommand.h"
#include "ledgerfactory.h"
#include "ledgerfixture.h"
#include "ledgerrules.h"
#include "migrations.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "queueenvelope.h"
#include "reconcilecommand.h"
#include "recordjson.h"

using namespace idempo;
using idempo::test::LedgerFixture;

namespace {

const std::string kNs = "default";

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

/// The test server's URL with another user and database.
std::string urlFor(const std::string &user, const std::string &database)
{
    QUrl url(QString::fromStdString(testUrl()));
    url.setUserName(QString::fromStdString(user));
    url.setPath(QLatin1Char('/') + QString::fromStdString(database));
    return url.toString().toStdString();
}

ClaimInput claimInput(const std::string &key)
{
    ClaimInput in;
    in.ns = kNs;
    in.key = key;
    in.payloadJson = R"({"amount":100})";
    in.owner = "worker-a";
    in.runId = "run-42";
    return in;
}

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

Error errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorCode::Internal, "no error");
}

} // namespace

class TestPostgresLedgerStore final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        QVERIFY(m_passwords.isValid());
        PostgresLedgerStore(testUrl()).migrate(); // creates the idempo_* group roles
        PgConnection admin(testUrl());
        // Login roles that must authenticate with a password (with-postgres.sh trusts only the
        // superuser), one per least-privilege group.
        admin.execScript("create login roles", R"SQL(
            DROP ROLE IF EXISTS idempo_test_worker, idempo_test_viewer, idempo_test_approver,
                idempo_test_operator, idempo_test_admin;
            CREATE ROLE idempo_test_operator LOGIN PASSWORD 'operator-secret' IN ROLE idempo_operator;
            CREATE ROLE idempo_test_admin LOGIN PASSWORD 'admin-secret' IN ROLE idempo_admin;
            CREATE ROLE idempo_test_worker LOGIN PASSWORD 'worker-secret' IN ROLE idempo_worker;
            CREATE ROLE idempo_test_viewer LOGIN PASSWORD 'viewer-secret' IN ROLE idempo_viewer;
            CREATE ROLE idempo_test_approver LOGIN PASSWORD 'approver-secret' IN ROLE idempo_approver;
        )SQL");
    }

    /// The claim statement against planClaim() and the record changes the SQLite store makes,
    /// for every state, fingerprint, tool kind, and lease, backoff and retention expiry just
    /// before, at and without the clock's instant.
    void claimFollowsPlanClaimInEveryCase()
    {
        LedgerFixture f;
        const std::int64_t now = f.store().nowMs();
        PgConnection admin(testUrl());
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

    void passwordsComeFromPgpassOnly()
    {
        LedgerFixture f;
        const std::string url = urlFor("idempo_test_worker", "idempo_test");
        const QUrl parsed(QString::fromStdString(url));
        writePasswordFile("idempo_test_worker", "wrong");
        const Error refused = errorOf([&] { PostgresLedgerStore store(url); });
        QCOMPARE(refused.code(), ErrorCode::LedgerUnavailable);
        QVERIFY2(std::string(refused.what()).find("password authentication failed") !=
                     std::string::npos,
                 refused.what());

        writePasswordFile("idempo_test_worker", "worker-secret");
        PostgresLedgerStore store(url);
        QCOMPARE(store.schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        QCOMPARE(store.describe(), url);
        qunsetenv("PGPASSFILE");
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

    void rolesGrantLeastPrivilege()
    {
        LedgerFixture f;
        const Operation waiting = [&] {
            ClaimInput in = claimInput("run-44:refund");
            in.requiresApproval = true;
            return f.engine().claim(in).operation;
        }();
        writePasswordFile("idempo_test_viewer", "viewer-secret");
        appendPassword("idempo_test_worker", "worker-secret");
        appendPassword("idempo_test_approver", "approver-secret");

        Engine viewer(
            std::make_shared<PostgresLedgerStore>(urlFor("idempo_test_viewer", "idempo_test")));
        QCOMPARE(viewer.store().list({}).size(), std::size_t(1));
        QCOMPARE(viewer.store().history(kNs, waiting.key).size(), std::size_t(1));
        QCOMPARE(errorOf([&] { viewer.claim(claimInput("run-44:other")); }).code(),
                 ErrorCode::LedgerUnavailable);

        auto approverStore =
            std::make_shared<PostgresLedgerStore>(urlFor("idempo_test_approver", "idempo_test"));
        QCOMPARE(errorOf([&] {
                     approverStore->claim({.ns = kNs, .key = "run-44:other", .fingerprint = "x"});
                 }).code(),
                 ErrorCode::LedgerUnavailable);
        // A bare UPDATE is not an approval: the database wants the approval's audit record.
        QCOMPARE(errorOf([&] {
                     approverStore->transition({.ns = kNs,
                                                .key = waiting.key,
                                                .from = OperationState::AwaitingApproval,
                                                .fencingToken = waiting.fencingToken,
                                                .to = OperationState::Received,
                                                .actor = "approver"});
                 }).code(),
                 ErrorCode::LedgerUnavailable);
        ApproveCommand::Request approval;
        approval.key = waiting.key;
        approval.reason = "within policy";
        ApproveCommand approve(*approverStore, approverStore->actor(), approval);
        QVERIFY(approve.validate().empty());
        approve.execute();
        QCOMPARE(approverStore->find(kNs, waiting.key)->state, OperationState::Received);

        Engine worker(
            std::make_shared<PostgresLedgerStore>(urlFor("idempo_test_worker", "idempo_test")));
        const ClaimResult claimed = worker.claim(claimInput("run-44:refund"));
        QCOMPARE(claimed.outcome, ClaimOutcome::Claimed);
        QCOMPARE(worker.complete(kNs, waiting.key, claimed.operation.fencingToken, "{}", "").state,
                 OperationState::Succeeded);
        QCOMPARE(worker.claim(claimInput("run-44:refund")).outcome, ClaimOutcome::Replayed);
        QCOMPARE(errorOf([&] { worker.store().purgeExpired({}); }).code(),
                 ErrorCode::LedgerUnavailable);
        qunsetenv("PGPASSFILE");
    }

    /// The database itself enforces who may do what, whatever a client claims about itself.
    void guardedRolesAreEnforcedByTheDatabase()
    {
        LedgerFixture f;
        const auto unknownOutcome = [&](const std::string &key) {
            const ClaimResult r = f.engine().claim(claimInput(key));
            return f.engine().fail(kNs, key, r.operation.fencingToken, ErrorClass::UnknownOutcome,
                                   "timeout");
        };
        const auto needsConfirmation = [&](const std::string &key) {
            ClaimInput in = claimInput(key);
            in.maxAttempts = 1;
            const ClaimResult r = f.engine().claim(in);
            return f.engine().fail(kNs, key, r.operation.fencingToken, ErrorClass::Transient,
                                   "503");
        };
        needsConfirmation("run-50:refund");
        unknownOutcome("run-50:booking");
        writePasswordFile("idempo_test_viewer", "viewer-secret");
        appendPassword("idempo_test_approver", "approver-secret");
        appendPassword("idempo_test_operator", "operator-secret");
        appendPassword("idempo_test_admin", "admin-secret");
        const auto storeFor = [](const std::string &user) {
            return std::make_shared<PostgresLedgerStore>(urlFor(user, "idempo_test"));
        };
        auto viewer = storeFor("idempo_test_viewer");
        auto approver = storeFor("idempo_test_approver");
        auto operatorStore = storeFor("idempo_test_operator");
        auto admin = storeFor("idempo_test_admin");
        QCOMPARE(viewer->actor().role, std::string("viewer"));
        QCOMPARE(approver->actor().role, std::string("approver"));
        QCOMPARE(operatorStore->actor().role, std::string("operator"));
        QCOMPARE(admin->actor().role, std::string("admin"));
        QCOMPARE(f.store().actor().role, std::string("owner"));

        ApproveCommand::Request approval;
        approval.key = "run-50:refund";
        approval.reason = "customer confirmed";
        const QByteArray before = f.snapshot();
        // Each client lies about its role, skipping validate(): the server refuses all the same.
        for (const auto &[store, name] : {std::pair{viewer, "idempo_test_viewer"},
                                          std::pair{operatorStore, "idempo_test_operator"}}) {
            ApproveCommand lying(*store, {name, "approver"}, approval);
            QCOMPARE(errorOf([&] { lying.execute(); }).code(), ErrorCode::LedgerUnavailable);
        }
        ApproveCommand impostor(*approver, {"someone_else", "approver"}, approval);
        QCOMPARE(errorOf([&] { impostor.execute(); }).code(), ErrorCode::LedgerUnavailable);
        ScriptedFound lookup;
        ReconcileCommand::Request reconcile;
        reconcile.key = "run-50:booking";
        reconcile.reason = "provider answered";
        ReconcileCommand approverReconciling(*approver, lookup,
                                             {"idempo_test_approver", "operator"}, reconcile);
        QCOMPARE(errorOf([&] { approverReconciling.execute(); }).code(),
                 ErrorCode::LedgerUnavailable);
        QCOMPARE(f.snapshot(), before);

        ApproveCommand approve(*approver, approver->actor(), approval);
        QCOMPARE(approve.execute().status, std::string("applied"));
        ReconcileCommand reconciling(*operatorStore, lookup, operatorStore->actor(), reconcile);
        QVERIFY(reconciling.validate().empty());
        reconciling.execute();
        QCOMPARE(f.store().find(kNs, "run-50:booking")->state, OperationState::Succeeded);
        const auto audit = f.store().auditLog(0, 10);
        QCOMPARE(audit.size(), std::size_t(2));
        QCOMPARE(audit[0].entry.who, std::string("idempo_test_approver"));
        QCOMPARE(audit[1].entry.who, std::string("idempo_test_operator"));
        QCOMPARE(audit[1].entry.role, std::string("operator"));

        // Nobody edits the audit log, the admin included; only an admin changes guard settings.
        for (const auto &store : {approver, operatorStore, admin})
            QCOMPARE(errorOf([&] {
                         store->connection().exec(
                             "edit audit", "UPDATE audit_log SET reason = 'x' WHERE seq = 1");
                     }).code(),
                     ErrorCode::LedgerUnavailable);
        GuardSettingCommand byOperator(*operatorStore, {"idempo_test_operator", "admin"},
                                       FourEyesSetting, "10", "r");
        QCOMPARE(errorOf([&] { byOperator.execute(); }).code(), ErrorCode::LedgerUnavailable);
        GuardSettingCommand byAdmin(*admin, admin->actor(), FourEyesSetting, "10", "policy");
        byAdmin.execute();
        QCOMPARE(f.store().guardSetting(FourEyesSetting), std::optional<std::string>("10"));
        // Operators replay dead letters on queues the owner made; viewers may not.
        auto ownerQueue = std::make_shared<PostgresMessageQueue>(
            std::dynamic_pointer_cast<PostgresLedgerStore>(f.sharedStore()));
        ownerQueue->createQueue("roles_replay", {.maxReads = 1});
        QueueEnvelope envelope{.runId = "run-51",
                               .stepId = "mail",
                               .payload = {{"to", "a@example.org"}},
                               .producedAtMs = operatorStore->nowMs(),
                               .idempotencyKey = "run-51:mail"};
        ownerQueue->send("roles_replay", envelope.toJson().dump(), "", 0);
        ownerQueue->read("roles_replay", 0, 10);
        ownerQueue->read("roles_replay", 0, 10);
        const auto ids = DlqReplayCommand::resolveFilter(*ownerQueue, "roles_replay", "all");
        QCOMPARE(ids.size(), std::size_t(1));
        DlqReplayCommand::Request replay{
            .queue = "roles_replay", .ids = ids, .reason = "fixed", .confirmCount = 1};
        PostgresMessageQueue viewerQueue(viewer);
        DlqReplayCommand byViewer(*viewer, viewerQueue, {"idempo_test_viewer", "operator"}, replay,
                                  {});
        const Error viewerRefused = errorOf([&] { byViewer.execute(); });
        QVERIFY2(viewerRefused.code() == ErrorCode::LedgerUnavailable, viewerRefused.what());
        QCOMPARE(ownerQueue->deadLetters("roles_replay", 0, 10).size(), std::size_t(1));
        PostgresMessageQueue operatorQueue(operatorStore);
        DlqReplayCommand replayByOperator(*operatorStore, operatorQueue, operatorStore->actor(),
                                          replay, {});
        QCOMPARE(replayByOperator.execute().requeued, std::int64_t(1));
        QCOMPARE(ownerQueue->metrics("roles_replay").length, std::int64_t(1));
        QVERIFY(AuditVerify(f.store()).run().ok);
        qunsetenv("PGPASSFILE");
    }

private:
    /// A provider that has every effect.
    class ScriptedFound final : public ProviderLookup
    {
    public:
        ProviderEvidence lookup(const Operation &) override
        {
            ProviderEvidence e;
            e.status = ProviderEvidence::Status::Found;
            e.provider = "bank";
            e.reference = "BK-1";
            return e;
        }
    };

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

    /// Points libpq at a fresh password file (mode 0600, or libpq ignores it) holding one line.
    void writePasswordFile(const std::string &user, const std::string &password)
    {
        QFile file(m_passwords.filePath(QStringLiteral("pgpass")));
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.close();
        QVERIFY(file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        qputenv("PGPASSFILE", file.fileName().toLocal8Bit());
        appendPassword(user, password);
    }

    void appendPassword(const std::string &user, const std::string &password)
    {
        QFile file(m_passwords.filePath(QStringLiteral("pgpass")));
        QVERIFY(file.open(QIODevice::Append));
        file.write(QByteArray("*:*:*:") + QByteArray::fromStdString(user) + ':' +
                   QByteArray::fromStdString(password) + '\n');
    }

    QTemporaryDir m_passwords;
};

QTEST_GUILESS_MAIN(TestPostgresLedgerStore)
#include "tst_postgresledgerstore.moc"
