// SPDX-License-Identifier: Apache-2.0
// A ledger of the schema before payload search (SQLite 7, PostgreSQL 13), with operations in it,
// migrated in place: the migration fills the side table from the payloads already recorded, so
// the old operations are found by field and customer, and new claims join them.
// PostgreSQL runs under tests/pg/with-postgres.sh.
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "engine.h"
#include "migrations.h"
#include "oldschemaledger.h"
#include "operationkeys.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "sqliteledgerstore.h"

using namespace idempo;
using test::keysOf;

namespace {

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

/// The old operations (old-1 for cust-42 with a refund order o-7, old-2 for client 99) are found.
void checkTheOldOperationsAreFound(const std::shared_ptr<LedgerStore> &store)
{
    ListFilter byCustomer;
    byCustomer.customer = "cust-42";
    QCOMPARE(keysOf(store->list(byCustomer)), std::vector<std::string>{"old-1"});
    ListFilter byField;
    byField.payload.push_back({"/refund/order_id", "o-7"});
    QCOMPARE(keysOf(store->list(byField)), std::vector<std::string>{"old-1"});
    ListFilter byClient;
    byClient.customer = "99";
    QCOMPARE(keysOf(store->list(byClient)), std::vector<std::string>{"old-2"});

    Engine engine(store);
    ClaimInput in;
    in.key = "new-1";
    in.payloadJson = R"({"customer":"cust-42"})";
    in.owner = "worker";
    engine.claim(in);
    QCOMPARE(keysOf(store->list(byCustomer)), (std::vector<std::string>{"old-1", "new-1"}));
}

const char *const kOldPayloads[][2] = {
    {"old-1", R"({"customer":"cust-42","refund":{"order_id":"o-7"}})"},
    {"old-2", R"({"client":99})"},
};

} // namespace

class TestPayloadSearchMigration final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sqliteSchema7IsBackfilled()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("ledger.db"));
        {
            QSqlDatabase db =
                QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("schema7"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            const QString problem = test::migrateSqliteTo(q, 7);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
            for (const auto &[key, payload] : kOldPayloads) {
                QVERIFY(q.prepare(QStringLiteral(
                    "INSERT INTO operations (namespace, operation_key, tool_kind, state, payload, "
                    "payload_fingerprint, attempt, max_attempts, fencing_token, created_at_ms, "
                    "updated_at_ms, schema_version) VALUES ('default', ?, 'protected_write', "
                    "'succeeded', ?, '00', 1, 3, 1, 0, 0, 1)")));
                q.addBindValue(QString::fromUtf8(key));
                q.addBindValue(QString::fromUtf8(payload));
                QVERIFY(q.exec());
            }
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("schema7"));
        auto store = std::make_shared<SqliteLedgerStore>(path, std::make_shared<SystemClock>());
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("sqlite")));
        checkTheOldOperationsAreFound(store);
    }

    void postgresSchema13IsBackfilled()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        const std::string ledger = test::freshPostgresDatabase("idempo_search_migration");
        {
            PgConnection c(ledger);
            test::migratePostgresTo(c, 13);
            // The old build's claims.
            for (const auto &[key, payload] : kOldPayloads)
                c.exec("claim",
                       "SELECT * FROM idempo.claim('default', $1, $2, idempo.sha256_hex($2), "
                       "'worker')",
                       PgParams().text(key).text(payload));
        }
        auto store = std::make_shared<PostgresLedgerStore>(ledger);
        QCOMPARE(store->schemaVersion(), 13);
        store->migrate();
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        checkTheOldOperationsAreFound(store);
    }
};

QTEST_GUILESS_MAIN(TestPayloadSearchMigration)
#include "tst_payloadsearchmigration.moc"
