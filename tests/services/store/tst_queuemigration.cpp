// SPDX-License-Identifier: Apache-2.0
// A ledger made by the schema before deliveries had receipts everywhere (SQLite 5, PostgreSQL 10),
// with a queue holding messages read before the upgrade, migrated in place: the messages stay,
// and their deliveries are acknowledged, archived and refused by read as on a new ledger. The
// PostgreSQL case runs under tests/pg/with-postgres.sh.
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

#include "clock.h"
#include "error.h"
#include "migrations.h"
#include "oldschemaledger.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "sqliteledgerstore.h"
#include "sqlitemessagequeue.h"

using namespace idempo;

namespace {

/// The schema version each store had before this one's queue deliveries.
constexpr int kSqliteBefore = 5;
constexpr int kPostgresBefore = 10;

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

ErrorCode errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.code();
    }
    return ErrorCode::Internal;
}

void exec(QSqlDatabase &db, const QString &sql)
{
    QSqlQuery q(db);
    if (!q.exec(sql))
        qFatal("%s: %s", qPrintable(sql), qPrintable(q.lastError().text()));
}

/// What both stores must do with the messages of queue `jobs` migrated in place: message 1 read
/// twice (a lapsed timeout between), message 2 read once, message 3 never.
void verifyDeliveries(MessageQueue &queue)
{
    QCOMPARE(queue.browse("jobs", 0, 10).size(), std::size_t(3));
    QCOMPARE(errorOf([&] { queue.ack("jobs", {1, 1}); }), ErrorCode::StaleLease);
    queue.ack("jobs", {1, 2});
    queue.ack("jobs", {1, 2}); // retried: done
    queue.archive("jobs", ReadReceipt{2, 1});
    queue.archive("jobs", ReadReceipt{2, 1});
    QCOMPARE(errorOf([&] { queue.ack("jobs", {3, 1}); }), ErrorCode::InvalidArgument);
    QCOMPARE(queue.browse("jobs", 0, 10).size(), std::size_t(1));
    QCOMPARE(queue.browseArchive("jobs", 0, 10).size(), std::size_t(1));
}

} // namespace

class TestQueueMigration final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sqliteLedgerMigratesInPlace()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("ledger.db"));
        {
            // A schema-5 file as that build left it: migrations 1-5, then the queue its
            // createQueue made and three messages.
            QSqlDatabase db =
                QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("before"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            exec(db, QStringLiteral("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                                    "name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)"));
            for (const Migration &m : migrations(QStringLiteral("sqlite"))) {
                if (m.version > kSqliteBefore)
                    break;
                for (const QString &statement : m.statements)
                    exec(db, statement);
                exec(db, QStringLiteral("INSERT INTO schema_migrations VALUES (%1, '%2', 0)")
                             .arg(m.version)
                             .arg(m.name));
            }
            for (const char *name : {"jobs", "jobs_dlq"}) {
                exec(db, QStringLiteral("CREATE TABLE \"q_%1\" (msg_id INTEGER PRIMARY KEY "
                                        "AUTOINCREMENT, read_ct INTEGER NOT NULL DEFAULT 0, "
                                        "enqueued_at INTEGER NOT NULL, last_read_at INTEGER, "
                                        "vt INTEGER NOT NULL, message TEXT NOT NULL, headers TEXT)")
                             .arg(QLatin1String(name)));
                exec(db, QStringLiteral("CREATE TABLE \"a_%1\" (msg_id INTEGER PRIMARY KEY, "
                                        "read_ct INTEGER NOT NULL DEFAULT 0, enqueued_at INTEGER "
                                        "NOT NULL, last_read_at INTEGER, archived_at INTEGER NOT "
                                        "NULL, vt INTEGER NOT NULL, message TEXT NOT NULL, "
                                        "headers TEXT)")
                             .arg(QLatin1String(name)));
            }
            exec(db, QStringLiteral("INSERT INTO queue_registry VALUES ('jobs_dlq', NULL, NULL, "
                                    "0), ('jobs', 5, 'jobs_dlq', 0)"));
            exec(db, QStringLiteral("INSERT INTO q_jobs (read_ct, enqueued_at, last_read_at, vt, "
                                    "message) VALUES (2, 0, 10, 1000, '{}'), (1, 0, 10, 1000, "
                                    "'{}'), (0, 0, NULL, 0, '{}')"));
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("before"));

        auto clock = std::make_shared<ManualClock>();
        auto store = std::make_shared<SqliteLedgerStore>(path, clock);
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("sqlite")));
        SqliteMessageQueue queue(store);
        verifyDeliveries(queue);
    }

    void postgresLedgerMigratesInPlace()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        PgConnection admin(testUrl());
        admin.execScript("drop database",
                         "DROP DATABASE IF EXISTS idempo_queue_migration_test WITH (FORCE)");
        admin.execScript("create database", "CREATE DATABASE idempo_queue_migration_test");
        QUrl url(QString::fromStdString(testUrl()));
        url.setPath(QStringLiteral("/idempo_queue_migration_test"));
        const std::string ledgerUrl = url.toString().toStdString();
        {
            // `idempo init` of the schema-10 build, then its functions' own queue work.
            PgConnection c(ledgerUrl);
            test::migratePostgresTo(c, kPostgresBefore);
            c.execScript("queue work", "SELECT * FROM idempo.queue_create('jobs', 5);"
                                       "SELECT idempo.queue_send('jobs', '{}') FROM "
                                       "generate_series(1, 3);"
                                       "SELECT * FROM idempo.queue_read('jobs', 0, 1);"
                                       "SELECT * FROM idempo.queue_read('jobs', 60000, 2);");
        }
        auto store = std::make_shared<PostgresLedgerStore>(ledgerUrl);
        QVERIFY(store->schemaVersion() <= kPostgresBefore);
        store->migrate();
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        PostgresMessageQueue queue(store);
        verifyDeliveries(queue);
    }
};

QTEST_GUILESS_MAIN(TestQueueMigration)
#include "tst_queuemigration.moc"
