// SPDX-License-Identifier: Apache-2.0
#include "queuefixture.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QtTest>

#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "sqliteledgerstore.h"
#include "sqlitemessagequeue.h"

namespace idempo::test {
namespace {

/// The PostgreSQL ledger to run against (tests/pg/with-postgres.sh sets it); empty = SQLite.
std::string postgresUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

/// The connection the fixture resets and inspects the PostgreSQL ledger on: one for the whole
/// run, as connecting costs more than emptying.
PgConnection &adminConnection()
{
    static PgConnection connection(postgresUrl());
    return connection;
}

/// A fresh ledger for every test: migrated on first use, then emptied, its queues dropped.
void resetPostgresLedger()
{
    PostgresLedgerStore(postgresUrl()).migrate();
    adminConnection().execScript(
        "empty the test ledger",
        "DROP SCHEMA IF EXISTS \"" + std::string(PostgresMessageQueue::Schema) +
            "\" CASCADE; "
            "TRUNCATE idempo.queue_registry, idempo.queue_errors, idempo.queue_acks, "
            "idempo.operations, "
            "idempo.operation_events, idempo.suppressions RESTART IDENTITY; "
            "ALTER SEQUENCE idempo.fencing_sequence RESTART");
}

} // namespace

QueueFixture::QueueFixture() : m_clock(std::make_shared<ManualClock>())
{
    if (postgresUrl().empty()) {
        QVERIFY(m_dir.isValid());
        m_sqlite = std::make_shared<SqliteLedgerStore>(m_dir.filePath(QStringLiteral("ledger.db")),
                                                       m_clock);
        m_ledger = m_sqlite;
        m_queue = std::make_shared<SqliteMessageQueue>(m_sqlite);
    } else {
        resetPostgresLedger();
        // The server's clock, pinned to the fixture's: the contract checks expiries to the
        // millisecond.
        m_postgres = std::make_shared<PostgresLedgerStore>(
            postgresUrl(), PostgresLedgerStore::Options{.pinnedClockMs = m_clock->nowMs()});
        m_ledger = m_postgres;
        m_queue = std::make_shared<PostgresMessageQueue>(m_postgres);
    }
    m_engine = std::make_unique<Engine>(m_ledger);
}

QueueFixture::~QueueFixture() = default;

const char *QueueFixture::storeName()
{
    return postgresUrl().empty() ? "sqlite" : "postgresql";
}

void QueueFixture::advanceMs(std::int64_t ms)
{
    m_clock->advanceMs(ms);
    if (m_postgres)
        m_postgres->advanceClockMs(ms);
}

void QueueFixture::execAsOwner(const std::string &sql)
{
    if (m_postgres) {
        adminConnection().execScript("test statement", sql);
        return;
    }
    QSqlQuery q(m_sqlite->connection().db);
    if (!q.exec(QString::fromStdString(sql)))
        qFatal("cannot run %s: %s", sql.c_str(), qPrintable(q.lastError().text()));
}

QStringList QueueFixture::queueTables()
{
    QStringList tables;
    if (m_postgres) {
        const PgResult r = adminConnection().exec(
            "list queue tables",
            "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
            "WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND (c.relname LIKE 'q\\_%' OR "
            "c.relname LIKE 'a\\_%') "
            "ORDER BY c.relname COLLATE \"C\"",
            PgParams().text(PostgresMessageQueue::Schema));
        for (int row = 0; row < r.rows(); ++row)
            tables << QString::fromStdString(r.text(row, 0));
        return tables;
    }
    QSqlQuery q(m_sqlite->connection().db);
    if (!q.exec(QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'table' "
                               "AND substr(name, 1, 2) IN ('q_', 'a_') ORDER BY name")))
        qFatal("cannot list tables: %s", qPrintable(q.lastError().text()));
    while (q.next())
        tables << q.value(0).toString();
    return tables;
}

} // namespace idempo::test
