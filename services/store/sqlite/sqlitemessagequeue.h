// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "messagequeue.h"
#include "sqliteledgerstore.h"
#include "sqlitesupport.h"

namespace idempo {

/// The queues of the embedded ledger: pgmq's tables inside the ledger's SQLite file, used
/// through the ledger's per-thread connections and judged on its clock. Times are stored as
/// integer milliseconds under pgmq's column names (enqueued_at, last_read_at, vt, archived_at).
/// Every write runs in `BEGIN IMMEDIATE`, which takes SQLite's single write lock before the
/// first read, so one reader's select-then-update cannot interleave with another's: what
/// FOR UPDATE SKIP LOCKED achieves on PostgreSQL. The registry and last errors live in the
/// tables of migration 0002_queue.sql, the receipts of acknowledged deliveries that of
/// 0006_queue_acks.sql. Every message enters a queue through sqliteoutbox.h,
/// which the ledger's outbox shares.
class SqliteMessageQueue final : public MessageQueue
{
public:
    /// Queues in `ledger`'s file (already migrated by the ledger's constructor).
    explicit SqliteMessageQueue(std::shared_ptr<SqliteLedgerStore> ledger);

    std::string describe() const override;
    QueueInfo createQueue(const std::string &name, const QueueOptions &options) override;
    std::vector<QueueInfo> listQueues() override;
    std::int64_t send(const std::string &queue, const std::string &messageJson,
                      const std::string &headersJson, std::int64_t delayMs) override;
    std::vector<QueueMessage> read(const std::string &queue, std::int64_t visibilityTimeoutMs,
                                   int quantity) override;
    std::vector<QueueMessage> readAndAck(const std::string &queue, std::int64_t visibilityTimeoutMs,
                                         int quantity,
                                         const std::vector<ReadReceipt> &acks) override;
    void ack(const std::string &queue, const ReadReceipt &receipt) override;
    QueueMessage setVt(const std::string &queue, std::int64_t msgId,
                       std::int64_t vtOffsetMs) override;
    bool deleteMessage(const std::string &queue, std::int64_t msgId) override;
    bool archive(const std::string &queue, std::int64_t msgId) override;
    void archive(const std::string &queue, const ReadReceipt &receipt) override;
    QueueMessage nack(const std::string &queue, std::int64_t msgId, ErrorClass errorClass,
                      const std::string &detail, std::int64_t retryDelayMs) override;
    QueueMessage nack(const std::string &queue, const ReadReceipt &receipt, ErrorClass errorClass,
                      const std::string &detail, std::int64_t retryDelayMs) override;
    std::vector<QueueMessage> browse(const std::string &queue, std::int64_t afterMsgId,
                                     int limit) override;
    std::vector<ArchivedMessage> browseArchive(const std::string &queue, std::int64_t afterMsgId,
                                               int limit) override;
    QueueMetrics metrics(const std::string &queue) override;
    std::vector<DeadLetter> deadLetters(const std::string &queue, std::int64_t afterMsgId,
                                        int limit) override;
    std::int64_t nowMs() override;
    std::optional<std::int64_t> requeueDeadLetter(const std::string &queue, std::int64_t msgId,
                                                  const std::string &headersJson) override;

private:
    std::shared_ptr<SqliteLedgerStore> m_ledger;
};

} // namespace idempo
