// SPDX-License-Identifier: Apache-2.0
// Who may do what on the PostgreSQL ledger: passwords from .pgpass only, least-privilege roles,
// and guarded actions the database itself enforces whatever a client claims. Runs under
// tests/pg/with-postgres.sh.
#include <QtTest>

#include "approvecommand.h"
#include "auditverify.h"
#include "dlqreplaycommand.h"
#include "error.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"
#include "migrations.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "postgrestesthelpers.h"
#include "queueenvelope.h"
#include "reconcilecommand.h"

using namespace idempo;
using namespace idempo::test::pg;
using idempo::test::LedgerFixture;

class TestPostgresRoles final : public QObject
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

QTEST_GUILESS_MAIN(TestPostgresRoles)
#include "tst_postgresroles.moc"
