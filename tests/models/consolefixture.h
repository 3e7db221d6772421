// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>

#include <QString>
#include <QTemporaryDir>

#include "clock.h"
#include "engine.h"
#include "sqliteledgerstore.h"
#include "sqlitemessagequeue.h"

namespace idempo::test {

/// A prepared embedded ledger for the console's tests, screenshots and demo. populate() writes
/// (on a ManualClock ending near the real time, so ages and countdowns look real):
/// - 3 operations in `dispatching`: run-7005:lookup_rates (taken over by worker-b),
///   run-7006:capture_payment (live), run-7007:charge_card (lease lapsed);
/// - 1 `confirmation_required` (run-7004:send_invoice, three transient failures, 8,400.00 EUR)
///   and 1 `awaiting_approval` (run-7002:refund, 1,250.00 EUR, older);
/// - 1 `unknown_outcome` (run-7003:book_flight), 1 `failed_terminal`, 1 `failed_retryable`;
/// - 6 suppressions: 2 replays, 1 payload mismatch, 2 in progress (the refund gated for
///   approval and a redelivered capture), 1 reconcile required;
/// - 1 dead letter in queue `payments`;
/// - 36 succeeded operations of runs run-7100..run-7111 plus the 3 of run-7001.
class ConsoleFixture final
{
public:
    /// A ledger at `path`, or in a temporary directory when empty.
    explicit ConsoleFixture(const QString &path = {});

    QString url() const { return QStringLiteral("sqlite:") + m_path; }
    QString path() const { return m_path; }
    Engine &engine() { return *m_engine; }
    ManualClock &clock() { return *m_clock; }
    SqliteLedgerStore &store() { return *m_store; }
    SqliteMessageQueue &queues() { return *m_queues; }

    void populate();
    /// After populate(): four-eyes above 1,000 (set by olga, owner) and carol's (approver) first
    /// approval to re-dispatch the 1,250.00 EUR refund run-7002:refund, which now waits for a
    /// second approver. Returns the approval's status, "pending" when it waits.
    std::string approveRefundOnce();

    /// Claims `key` (protected write, run `runId`) and leaves it dispatching: a live change.
    ClaimResult claimNew(const std::string &key, const std::string &runId,
                         std::int64_t leaseMs = 600'000);

    static constexpr int Dispatching = 3;
    static constexpr int NeedsPerson = 2;
    static constexpr int Suppressions = 6;

private:
    QTemporaryDir m_dir;
    QString m_path;
    std::shared_ptr<ManualClock> m_clock;
    std::shared_ptr<SqliteLedgerStore> m_store;
    std::unique_ptr<SqliteMessageQueue> m_queues;
    std::unique_ptr<Engine> m_engine;
};

} // namespace idempo::test
