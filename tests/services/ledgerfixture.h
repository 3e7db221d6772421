// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <memory>

#include <QTemporaryDir>

#include "clock.h"
#include "engine.h"
#include "ledgerstore.h"
#include "messagequeue.h"

namespace idempo::test {

/// A fresh, empty ledger for one test, on the store the suite runs against: SQLite in a
/// temporary directory by default, PostgreSQL when IDEMPO_TEST_POSTGRES_URL is set.
/// Time moves only when the test advances it.
class LedgerFixture final
{
public:
    LedgerFixture();
    ~LedgerFixture();

    LedgerStore &store() { return *m_store; }
    Engine &engine() { return *m_engine; }

    /// Moves the ledger's clock forward by `ms` milliseconds.
    void advanceMs(std::int64_t ms);

    /// Drops the engine and store and opens the same ledger again (an engine restart).
    void reopen();

    /// The message queues of `store` (one of this fixture's stores).
    static std::shared_ptr<MessageQueue> openQueue(const std::shared_ptr<LedgerStore> &store);

    /// The fixture's own store, shared.
    std::shared_ptr<LedgerStore> sharedStore() { return m_store; }

    /// Every row the ledger holds, as text: operations with their history and approvals,
    /// suppressions and the audit log. Two equal
    /// snapshots mean nothing was written in between.
    QByteArray snapshot();

    /// The store's name for test output ("sqlite" or "postgresql").
    static const char *storeName();

    /// A retry policy without jitter: delays are exactly 1 s, 4 s, 16 s.
    static RetryPolicy steadyPolicy();

    /// Opens another store on the same ledger (a second worker process's view).
    std::shared_ptr<LedgerStore> openAnother();

private:
    void open();

    QTemporaryDir m_dir;
    std::shared_ptr<ManualClock> m_clock;
    std::shared_ptr<LedgerStore> m_store;
    std::unique_ptr<Engine> m_engine;
};

} // namespace idempo::test
