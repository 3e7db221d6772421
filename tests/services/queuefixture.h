// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>

#include <QStringList>
#include <QTemporaryDir>

#include "clock.h"
#include "engine.h"
#include "ledgerstore.h"
#include "messagequeue.h"

namespace idempo {
class PostgresLedgerStore;
class SqliteLedgerStore;
} // namespace idempo

namespace idempo::test {

/// A fresh ledger with its message queues for one test, on the store the suite runs against:
/// SQLite in a temporary directory by default, PostgreSQL when IDEMPO_TEST_POSTGRES_URL is set
/// (the ledger emptied and the queue schema dropped before every test, the server's clock
/// pinned to the fixture's). Time moves only when the test advances it.
class QueueFixture final
{
public:
    QueueFixture();
    ~QueueFixture();

    MessageQueue &queue() { return *m_queue; }

    /// An engine on the same ledger, to claim the operations an outbox write completes.
    Engine &engine() { return *m_engine; }

    /// The ledger the queues live in, for its transactional outbox.
    LedgerStore &ledger() { return *m_ledger; }

    /// Moves the store's clock forward by `ms` milliseconds.
    void advanceMs(std::int64_t ms);

    /// Runs `sql` (one statement) on the ledger as its owner, beside the store: how a test
    /// breaks the ledger on purpose (a trigger that fails a write, say).
    void execAsOwner(const std::string &sql);

    /// The per-queue tables the store holds (names starting with q_ or a_), sorted bytewise.
    QStringList queueTables();

    /// The store's name for test output ("sqlite" or "postgresql").
    static const char *storeName();

private:
    QTemporaryDir m_dir;
    std::shared_ptr<ManualClock> m_clock;
    std::shared_ptr<SqliteLedgerStore> m_sqlite;     ///< set on SQLite
    std::shared_ptr<PostgresLedgerStore> m_postgres; ///< set on PostgreSQL
    std::shared_ptr<LedgerStore> m_ledger;
    std::shared_ptr<MessageQueue> m_queue;
    std::unique_ptr<Engine> m_engine;
};

} // namespace idempo::test
