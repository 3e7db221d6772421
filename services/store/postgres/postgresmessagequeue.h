// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "messagequeue.h"
#include "postgresledgerstore.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace idempo {

class PgConnection;

/// The queues of the shared ledger, in pgmq's own tables: per queue `pgmq.q_<name>` (msg_id
/// bigint identity, read_ct, enqueued_at, last_read_at, vt, message jsonb, headers jsonb) and
/// the archive `pgmq.a_<name>` (the same plus archived_at), with pgmq's indexes. Columns are
/// selected by name, so a queue made by pgmq's own `pgmq.create()` is used as it is: createQueue()
/// on its name adopts it (keeps its messages, adds the last_read_at and headers columns older
/// pgmq versions did not have) and gives it a dead-letter queue; pgmq's functions keep working
/// on Idempo's queues.
///
/// Times are timestamptz in the tables and milliseconds in the API, on the ledger's clock: the
/// server's `clock_timestamp()` plus the store's offset (PostgresLedgerStore::ServerClockSql).
/// read() is one statement, like pgmq's: a CTE picks the oldest visible messages `FOR UPDATE
/// SKIP LOCKED` and an UPDATE … RETURNING hides each for the visibility timeout, so two readers
/// never get one message inside its timeout. A candidate that has used up its reads comes back
/// unread; one transaction then moves it, re-checked under its row lock, to `<name>_dlq` with
/// its last error taken from queue_errors and its provenance in the headers (queuerules.h), and
/// reads on for the slots it freed. Message and headers are stored as jsonb and returned in
/// RFC 8785 canonical form (jsonb reorders members and adds spaces).
///
/// Queue names come only from QueueName, every value is a bound parameter, and each queue's
/// statements are prepared once per connection under names that include the queue's. The
/// registry and last errors are the tables of migration 0002_queue.sql; a queue's registry row
/// is read once per PostgresMessageQueue (queues are never dropped through Idempo). Creating a
/// queue is schema work: it needs CREATE on the database (for the schema) or on the schema, like
/// `idempo init`; it grants the idempo_worker role SELECT, INSERT, UPDATE, DELETE on the new
/// tables and idempo_viewer and idempo_approver SELECT, where those roles exist.
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
    std::int64_t send(const std::string &queue, const std::string &messageJson, const std::string &headersJson,
                      std::int64_t delayMs) override;
    std::vector<QueueMessage> read(const std::string &queue, std::int64_t visibilityTimeoutMs, int quantity) override;
    QueueMessage setVt(const std::string &queue, std::int64_t msgId, std::int64_t vtOffsetMs) override;
    bool deleteMessage(const std::string &queue, std::int64_t msgId) override;
    bool archive(const std::string &queue, std::int64_t msgId) override;
    QueueMessage nack(const std::string &queue, std::int64_t msgId, ErrorClass errorClass, const std::string &detail,
                      std::int64_t retryDelayMs) override;
    std::vector<QueueMessage> browse(const std::string &queue, std::int64_t afterMsgId, int limit) override;
    std::vector<ArchivedMessage> browseArchive(const std::string &queue, std::int64_t afterMsgId, int limit) override;
    QueueMetrics metrics(const std::string &queue) override;
    std::vector<DeadLetter> deadLetters(const std::string &queue, std::int64_t afterMsgId, int limit) override;
    std::int64_t nowMs() override;
    std::optional<std::int64_t> requeueDeadLetter(const std::string &queue, std::int64_t msgId,
                                                  const std::string &headersJson) override;

    /// The SQL text of the statements a benchmark's raw baseline runs (bench.cpp), for queue
    /// `queue` (a valid name): exactly what send(), read() and deleteMessage() prepare.
    /// Parameters: send $1 pinned clock, $2 offset, $3 delay ms, $4 message, $5 headers;
    /// read $1, $2, $3 max reads, $4 visibility timeout ms, $5 quantity, $6 after msg_id;
    /// delete $1 msg_id, $2 queue name.
    static std::string sendSql(const std::string &queue);
    static std::string readSql(const std::string &queue);
    static std::string deleteSql(const std::string &queue);

private:
    /// The registry row of `queue`, cached once seen. Throws Error(NotFound) when there is none.
    QueueInfo requireQueue(PgConnection &connection, const std::string &queue);

    std::shared_ptr<PostgresLedgerStore> m_ledger;
    std::mutex m_knownMutex;
    std::unordered_map<std::string, QueueInfo> m_known;
};

} // namespace idempo
