// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "clock.h"
#include "engine.h"
#include "messagequeue.h"
#include "sqliteledgerstore.h"

#include <QStringList>
#include <QTemporaryDir>

#include <memory>

namespace idempo::test {

/// A fresh ledger with its message queues for one test, on the store the suite runs against.
/// Only SQLite (in a temporary directory) has queues so far; IDEMPO_TEST_POSTGRES_URL selects
/// PostgreSQL as it does for LedgerFixture, and open() is where its queue will be plugged in.
/// Time moves only when the test advances it.
class QueueFixture final
{
public:
    QueueFixture();
    ~QueueFixture();

    MessageQueue &queue() { return *m_queue; }

    /// An engine on the same ledger, to claim the operations an outbox write completes.
    Engine &engine() { return *m_engine; }

    /// The embedded ledger the queues live in; null on stores without one.
    SqliteLedgerStore *sqliteLedger() { return m_ledger.get(); }

    /// Moves the store's clock forward by `ms` milliseconds.
    void advanceMs(std::int64_t ms);

    /// The per-queue tables the store holds (names starting with q_ or a_), sorted.
    QStringList queueTables();

    /// The store's name for test output ("sqlite" or "postgresql").
    static const char *storeName();

    /// True when the store under test has queues (false until the PostgreSQL queue exists).
    static bool storeHasQueues();

private:
    void open();

    QTemporaryDir m_dir;
    std::shared_ptr<ManualClock> m_clock;
    std::shared_ptr<SqliteLedgerStore> m_ledger;
    std::shared_ptr<MessageQueue> m_queue;
    std::unique_ptr<Engine> m_engine;
};

} // namespace idempo::test
