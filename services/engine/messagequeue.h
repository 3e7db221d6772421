// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vocabulary.h"

namespace idempo {

/// One message, as pgmq's `q_<name>` table holds it. Times are milliseconds since the Unix
/// epoch (UTC) on the store's clock; JSON fields hold RFC 8785 canonical text.
struct QueueMessage
{
    std::int64_t msgId = 0;                   ///< msg_id: increasing per queue, never reused
    int readCount = 0;                        ///< read_ct: deliveries by read() so far
    std::int64_t enqueuedAtMs = 0;            ///< enqueued_at
    std::optional<std::int64_t> lastReadAtMs; ///< last_read_at; unset until the first delivery
    std::int64_t vtMs = 0; ///< vt: read() may deliver the message from this time on
    std::string message;   ///< the message body (JSON)
    std::string headers;   ///< a JSON object; empty when the message has none
};

/// Names one delivery of a message: its msg_id and the read_ct that read() answered with it.
/// Every read raises read_ct by one in the read's own transaction, so the pair is one delivery
/// and no other; ack(), nack() and archive() given it refuse to act on a later delivery.
struct ReadReceipt
{
    std::int64_t msgId = 0;
    int readCount = 0;

    static ReadReceipt of(const QueueMessage &m) { return {m.msgId, m.readCount}; }
};

/// A message in pgmq's archive `a_<name>`.
struct ArchivedMessage
{
    QueueMessage message;
    std::int64_t archivedAtMs = 0; ///< archived_at
};

/// A queue in the registry.
struct QueueInfo
{
    std::string name;
    std::optional<int>
        maxReads; ///< deliveries before dead-lettering; unset for a dead-letter queue
    std::string deadLetterQueue; ///< `<name>_dlq`; empty for a dead-letter queue itself
    std::int64_t createdAtMs = 0;
};

/// Settings of a new queue.
struct QueueOptions
{
    /// How many times read() may deliver a message; the read that would deliver it once more
    /// moves it to the dead-letter queue instead. At least 1.
    int maxReads = 5;
};

/// pgmq's metrics() of one queue, with ages in milliseconds.
struct QueueMetrics
{
    std::string queue;
    std::int64_t length = 0;        ///< queue_length: messages in q_<name>
    std::int64_t visibleLength = 0; ///< queue_visible_length: of those, readable now
    std::optional<std::int64_t> newestMessageAgeMs; ///< now - newest enqueued_at; unset when empty
    std::optional<std::int64_t> oldestMessageAgeMs; ///< now - oldest enqueued_at; unset when empty
    std::int64_t totalMessages = 0;                 ///< messages ever sent to the queue
    std::int64_t scrapeTimeMs = 0;                  ///< the store's clock when measured
};

/// Where a dead letter came from and why: the `dlq` header its copy carries (see queuerules.h).
struct DeadLetterProvenance
{
    std::string sourceQueue;
    std::int64_t sourceMsgId = 0;
    int readCount = 0;                        ///< read_ct in the source queue when it was moved
    std::optional<ErrorClass> lastErrorClass; ///< the last nack()'s class; unset when never nacked
    std::string lastErrorDetail;
    std::int64_t deadLetteredAtMs = 0;
};

/// A message in a dead-letter queue with its provenance.
struct DeadLetter
{
    QueueMessage message; ///< the row in `<name>_dlq`; its headers include the provenance
    DeadLetterProvenance provenance;
};

/// A message queue with a dead-letter queue, in pgmq's table layout (per queue `q_<name>` and
/// the archive `a_<name>`), so that a console can also watch an existing pgmq queue. Both
/// stores implement it: the embedded SQLite ledger (sqlitemessagequeue.h) and PostgreSQL
/// (postgresmessagequeue.h, where reads use FOR UPDATE SKIP LOCKED). Delivery is at least
/// once: a message read and not deleted or archived within its visibility timeout is delivered
/// again, so consumers claim the operation its envelope names before acting on it
/// (queueenvelope.h).
///
/// Queue names follow QueueName's rule; a bad name is refused with Error(InvalidArgument)
/// before anything is touched. Every method is safe to call from many threads at once, and
/// each write is atomic. Every method may throw Error(LedgerUnavailable) or Error(Internal)
/// on storage failure, and Error(NotFound) when the queue does not exist.
class MessageQueue
{
public:
    virtual ~MessageQueue() = default;

    /// The store's address without secrets, e.g. "sqlite:/home/me/ledger.db".
    virtual std::string describe() const = 0;

    /// Creates the queue `name` and its dead-letter queue `<name>_dlq`; creating an existing
    /// queue again with the same options returns it unchanged. Throws Error(InvalidArgument)
    /// for a bad name, a name ending in `_dlq` (reserved), one too long to leave room for
    /// `_dlq`, maxReads < 1, or an existing queue whose options differ.
    virtual QueueInfo createQueue(const std::string &name, const QueueOptions &options) = 0;

    /// Every queue, dead-letter queues included, ordered by name.
    virtual std::vector<QueueInfo> listQueues() = 0;

    /// Enqueues `messageJson` with optional `headersJson` (a JSON object, or empty for none),
    /// readable after `delayMs` milliseconds (>= 0). Returns its msg_id. Throws
    /// Error(InvalidJson) or Error(PayloadTooLarge) for an unacceptable body or headers, and
    /// Error(InvalidArgument) for a negative delay; nothing is written then.
    virtual std::int64_t send(const std::string &queue, const std::string &messageJson,
                              const std::string &headersJson, std::int64_t delayMs) = 0;

    /// Delivers up to `quantity` (1..10000) messages that are visible now, oldest first: each
    /// becomes invisible for `visibilityTimeoutMs` (>= 0) milliseconds, its read_ct grows by
    /// one and last_read_at becomes now. Two readers never get the same message within its
    /// visibility timeout. A message whose read_ct would exceed the queue's maxReads is moved
    /// to the dead-letter queue in the same transaction instead of being delivered, and the
    /// read goes on to the next one. Throws Error(InvalidArgument) for a bad timeout or quantity.
    virtual std::vector<QueueMessage> read(const std::string &queue,
                                           std::int64_t visibilityTimeoutMs, int quantity) = 0;

    /// read() that first acknowledges the deliveries `acks` (as ack() would, with its refusals),
    /// in the same transaction: a consumer's "done with these, give me the next", one commit
    /// where ack() and read() take two. A refused ack refuses the read too: nothing is written.
    virtual std::vector<QueueMessage> readAndAck(const std::string &queue,
                                                 std::int64_t visibilityTimeoutMs, int quantity,
                                                 const std::vector<ReadReceipt> &acks) = 0;

    /// Acknowledges one delivery: deletes the message when `receipt` is its latest read, and
    /// keeps a receipt (a day) so that the same ack repeated after a lost answer is done again
    /// rather than not found. Throws Error(StaleLease), naming the message and the read that
    /// came after, when the message was read again since (its visibility timeout lapsed and
    /// another consumer has it, or had it and acknowledged it): nothing is deleted then.
    /// Throws Error(NotFound) when the queue holds no such message and acknowledged none
    /// (deleted, archived or dead-lettered), Error(InvalidArgument) for a read the message has
    /// not had (read_ct below `receipt.readCount`, or readCount < 1).
    virtual void ack(const std::string &queue, const ReadReceipt &receipt) = 0;

    /// Makes the message visible `vtOffsetMs` (>= 0) milliseconds from now, whatever its vt
    /// was. Returns it. Throws Error(NotFound) when the queue holds no such message.
    virtual QueueMessage setVt(const std::string &queue, std::int64_t msgId,
                               std::int64_t vtOffsetMs) = 0;

    /// Removes the message (the consumer's acknowledgement). Returns false when the queue
    /// holds no such message, e.g. it was already deleted or archived.
    virtual bool deleteMessage(const std::string &queue, std::int64_t msgId) = 0;

    /// Moves the message to the archive `a_<name>`, stamped with archived_at. Returns false
    /// when the queue holds no such message.
    virtual bool archive(const std::string &queue, std::int64_t msgId) = 0;

    /// archive() of one delivery: moves the message when `receipt` is its latest read, and is
    /// done again when the archive already holds it under that read (a retry after a lost
    /// answer). Throws like ack(): Error(StaleLease) when the message was read again since,
    /// Error(NotFound) when neither the queue nor its archive holds it.
    virtual void archive(const std::string &queue, const ReadReceipt &receipt) = 0;

    /// A failed processing attempt: keeps `errorClass` and `detail` as the message's last
    /// error (carried into the dead-letter queue should it end there) and makes it visible
    /// again `retryDelayMs` (>= 0) milliseconds from now. Returns the message. Throws
    /// Error(NotFound) when the queue holds no such message.
    virtual QueueMessage nack(const std::string &queue, std::int64_t msgId, ErrorClass errorClass,
                              const std::string &detail, std::int64_t retryDelayMs) = 0;

    /// nack() of one delivery: throws Error(StaleLease), naming the message and the later read,
    /// when the message was read again since, and changes nothing then. Repeated after a lost
    /// answer it records the same error and delay again.
    virtual QueueMessage nack(const std::string &queue, const ReadReceipt &receipt,
                              ErrorClass errorClass, const std::string &detail,
                              std::int64_t retryDelayMs) = 0;

    /// Messages with msg_id > afterMsgId, oldest first, at most `limit` (1..10000), visible or
    /// not. Never counts as a read: read_ct, vt and last_read_at stay as they are.
    virtual std::vector<QueueMessage> browse(const std::string &queue, std::int64_t afterMsgId,
                                             int limit) = 0;

    /// Archived messages with msg_id > afterMsgId, oldest first, at most `limit` (1..10000).
    virtual std::vector<ArchivedMessage> browseArchive(const std::string &queue,
                                                       std::int64_t afterMsgId, int limit) = 0;

    virtual QueueMetrics metrics(const std::string &queue) = 0;

    /// The dead letters of `queue` (a queue that has a dead-letter queue) with msg_id >
    /// afterMsgId in `<queue>_dlq`, oldest first, at most `limit` (1..10000). Never counts
    /// as a read. Throws Error(InvalidArgument) when `queue` is itself a dead-letter queue.
    virtual std::vector<DeadLetter> deadLetters(const std::string &queue, std::int64_t afterMsgId,
                                                int limit) = 0;

    /// The store's clock in milliseconds since the Unix epoch: the one vt is judged on.
    virtual std::int64_t nowMs() = 0;

    /// Puts a dead letter back on its queue (a DLQ replay): message `msgId` of `<queue>_dlq` is
    /// archived in the dead-letter queue's archive and its body sent to `queue` with
    /// `headersJson` (a JSON object, or empty), in one transaction. Returns the new msg_id, or
    /// std::nullopt when the dead-letter queue no longer holds the message (another replay took
    /// it first): a dead letter is requeued at most once, however many replays run at once.
    /// Throws Error(InvalidArgument) when `queue` is itself a dead-letter queue, and like send().
    virtual std::optional<std::int64_t> requeueDeadLetter(const std::string &queue,
                                                          std::int64_t msgId,
                                                          const std::string &headersJson) = 0;
};

} // namespace idempo
