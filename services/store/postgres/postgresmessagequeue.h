// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "messagequeue.h"
#include "postgresledgerstore.h"

namespace idempo {

class PgConnection;

/// The queues of the shared ledger, in pgmq's own tables: per queue `pgmq.q_<name>` (msg_id
/// bigint identity, read_ct, enqueued_at, last_read_at, vt, message jsonb, headers jsonb) and
/// the archive `pgmq.a_<name>` (the same plus archived_at), with pgmq's indexes. Columns are
/// selected by name, so a queue made by pgmq's own `pgmq.create()` is used as it is: createQueue()
/// on its name adopts it (keeps its messages, adds the last_read_at and headers columns older
/// pgmq versions did not have) and gives it a dead-letter queue.
///
/// Every write is one call of a function of schema idempo (functions/queue/): a read
/// picks the oldest visible messages `FOR UPDATE SKIP LOCKED`, hides them for the visibility
/// timeout and moves those past the queue's max reads to `<name>_dlq` in the same transaction,
/// with their provenance and last error in the copy's headers (queuerules.h). Roles read the
/// tables and write only through the functions. Times are timestamptz in the tables and
/// milliseconds in the API, on the ledger's clock (PostgresLedgerStore::clockParams()). Message
/// and headers are stored as jsonb and returned in RFC 8785 canonical form (jsonb reorders
/// members and adds spaces).
///
/// Queue names come only from QueueName, every value is a bound parameter. The registry and
/// last errors are the tables of migration 0002_queue.sql; a queue's registry row is read once
/// per PostgresMessageQueue (queues are never dropped through Idempo). Creating a queue is
/// schema work: idempo.queue_create() is the owner's.
///
/// The tables of every ledger in one database share the schema, as pgmq's do: give each ledger
/// that has queues a database of its own.
class PostgresMessageQueue final : public MessageQueue
{
public:
    /// The schema of the per-queue tables: pgmq's, so its tools and Idempo see the same queues.
    static constexpr std::string_view Schema = "pgmq";

    /// Queues beside `ledger`'s tables, on its per-thread connections and clock. The ledger
    /// must be migrated (`idempo init`); until then every method throws Error(SchemaMismatch).
    explicit PostgresMessageQueue(std::shared_ptr<PostgresLedgerStore> ledger);

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

    /// The statements send(), read() / readAndAck() and ack() prepare, for a benchmark's
    /// own-statement baseline (queuebenchpostgres.cpp). Parameters: send $1 queue, $2 message,
    /// $3 headers, $4 delay ms, $5 $6 clock; read $1 queue, $2 visibility timeout ms, $3
    /// quantity, $4 acks (JSON), $5 $6 clock; ack $1 queue, $2 msg_id, $3 read_ct, $4 $5 clock.
    static constexpr const char *SendSql =
        "SELECT idempo.queue_send($1, $2, $3, $4::bigint, $5::bigint, $6::bigint)";
    static constexpr const char *ReadSql =
        "SELECT msg_id, read_ct, enqueued_at_ms, last_read_at_ms, vt_ms, message::text, "
        "headers::text FROM idempo.queue_read($1, $2::bigint, $3::integer, $4, $5::bigint, "
        "$6::bigint)";
    static constexpr const char *AckSql =
        "SELECT idempo.queue_ack($1, $2::bigint, $3::integer, $4::bigint, $5::bigint)";

private:
    /// archive() and nack() of any read (`readCount` unset) or of one.
    bool archiveRead(const std::string &queue, std::int64_t msgId, std::optional<int> readCount);
    QueueMessage nackRead(const std::string &queue, std::int64_t msgId,
                          std::optional<int> readCount, ErrorClass errorClass,
                          const std::string &detail, std::int64_t retryDelayMs);

    /// The registry row of `queue`, cached once seen. Throws Error(NotFound) when there is none.
    QueueInfo requireQueue(PgConnection &connection, const std::string &queue);

    std::shared_ptr<PostgresLedgerStore> m_ledger;
    std::mutex m_knownMutex;
    std::unordered_map<std::string, QueueInfo> m_known;
};

} // namespace idempo
