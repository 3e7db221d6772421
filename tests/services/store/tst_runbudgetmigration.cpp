// SPDX-License-Identifier: Apache-2.0
// A ledger of the schema before run budgets (SQLite 5, PostgreSQL 9), with a run's operations in
// it, migrated in place: its rows are kept, and the run's next claim makes its run record and
// counts its failed dispatches. PostgreSQL runs under tests/pg/with-postgres.sh.
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "engine.h"
#include "migrations.h"
#include "oldschemaledger.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "sqliteledgerstore.h"

using namespace idempo;

namespace {

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

ClaimInput inOldRun(const std::string &step)
{
    ClaimInput in;
    in.key = "run-old:" + step;
    in.runId = "run-old";
    in.stepId = step;
    in.payloadJson = R"({"step":")" + step + R"("})";
    in.owner = "worker";
    return in;
}

/// The old run's operations, claimed and failed by the build before run budgets.
void checkTheRunContinues(const std::shared_ptr<LedgerStore> &store)
{
    Engine engine(store);
    const std::optional<Operation> old = store->find("default", "run-old:a");
    QVERIFY(old);
    QCOMPARE(old->state, OperationState::FailedRetryable);
    QVERIFY(!store->findRun("default", "run-old"));
    const ClaimResult next = engine.claim(inOldRun("b"));
    QCOMPARE(next.outcome, ClaimOutcome::Claimed);
    const std::optional<RunRecord> run = store->findRun("default", "run-old");
    QVERIFY(run);
    QCOMPARE(run->state, RunState::Active);
    QCOMPARE(run->failedDispatches, std::int64_t(0));
    engine.fail("default", next.operation.key, next.operation.fencingToken, ErrorClass::Transient,
                "503");
    QCOMPARE(store->findRun("default", "run-old")->failedDispatches, std::int64_t(1));
}

} // namespace

class TestRunBudgetMigration final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sqliteSchema5MigratesInPlace()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("ledger.db"));
        {
            QSqlDatabase db =
                QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("schema5"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            const QString problem = test::migrateSqliteTo(q, 5);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
            QVERIFY(q.exec(QStringLiteral(
                "INSERT INTO operations (namespace, operation_key, run_id, step_id, tool_kind, "
                "state, payload, payload_fingerprint, attempt, max_attempts, fencing_token, "
                "created_at_ms, updated_at_ms, schema_version) VALUES ('default', 'run-old:a', "
                "'run-old', 'a', 'protected_write', 'failed_retryable', '{}', '00', 1, 3, 1, 0, 0, "
                "1)")));
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("schema5"));
        auto store = std::make_shared<SqliteLedgerStore>(path, std::make_shared<SystemClock>());
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("sqlite")));
        checkTheRunContinues(store);
    }

    void postgresSchemaBeforeBudgetsMigratesInPlace()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        const std::string ledger = test::freshPostgresDatabase("idempo_budget_migration");
        {
            PgConnection c(ledger);
            test::migratePostgresTo(c, 11);
            // The old build's claim (its signature) and fail of the run's first step.
            const std::int64_t token =
                c.exec("claim", "SELECT fencing_token FROM idempo.claim('default', 'run-old:a', "
                                "'{\"step\":\"a\"}', idempo.sha256_hex('{\"step\":\"a\"}'), "
                                "'worker', 'protected_write', 30000, 3, false, 'run-old', 'a')")
                    .integer(0, 0);
            c.exec("fail",
                   "SELECT * FROM idempo.fail('default', 'run-old:a', $1::bigint, "
                   "'transient', '503')",
                   PgParams().integer(token));
        }
        auto store = std::make_shared<PostgresLedgerStore>(ledger);
        QVERIFY(store->schemaVersion() < latestSchemaVersion(QStringLiteral("postgresql")));
        store->migrate();
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        checkTheRunContinues(store);
    }
};

QTEST_GUILESS_MAIN(TestRunBudgetMigration)
#include "tst_runbudgetmigration.moc"
