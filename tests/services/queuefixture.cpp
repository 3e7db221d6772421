// SPDX-License-Identifier: Apache-2.0
#include "queuefixture.h"

#include "sqlitemessagequeue.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QtTest>

namespace idempo::test {

QueueFixture::QueueFixture() : m_clock(std::make_shared<ManualClock>())
{
    open();
}

QueueFixture::~QueueFixture() = default;

const char *QueueFixture::storeName()
{
    return qEnvironmentVariableIsEmpty("IDEMPO_TEST_POSTGRES_URL") ? "sqlite" : "postgresql";
}

bool QueueFixture::storeHasQueues() { return qstrcmp(storeName(), "sqlite") == 0; }

void QueueFixture::open()
{
    QVERIFY(m_dir.isValid());
    m_ledger = std::make_shared<SqliteLedgerStore>(m_dir.filePath(QStringLiteral("ledger.db")), m_clock);
    m_queue = std::make_shared<SqliteMessageQueue>(m_ledger);
    m_engine = std::make_unique<Engine>(m_ledger);
}

void QueueFixture::advanceMs(std::int64_t ms) { m_clock->advanceMs(ms); }

QStringList QueueFixture::queueTables()
{
    QSqlQuery q(m_ledger->connection().db);
    if (!q.exec(QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'table' "
                               "AND substr(name, 1, 2) IN ('q_', 'a_') ORDER BY name")))
        qFatal("cannot list tables: %s", qPrintable(q.lastError().text()));
    QStringList tables;
    while (q.next())
        tables << q.value(0).toString();
    return tables;
}

} // namespace idempo::test
