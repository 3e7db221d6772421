// SPDX-License-Identifier: Apache-2.0
#include "sqlitemessagequeue.h"

#include <spdlog/spdlog.h>

#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "error.h"
#include "queuename.h"
#include "queuerules.h"
#include "sqlitedlqreplays.h"
#include "sqliteledgerstore.h"
#include "sqliteoutbox.h"
#include "sqlitequeuerows.h"
#include "sqlitesupport.h"

namespace idempo {
namespace {

const QString kRegistryColumns =
    QStringLiteral("queue_name, max_reads, dead_letter_queue, created_at");

QVariant text(const std::string &s)
{
    return QString::fromStdString(s);
}
QVariant integer(std::int64_t v)
{
    return static_cast<qlonglong>(v);
}

QueueInfo readQueueInfo(const QSqlQuery &q)
{
    QueueInfo info;
    info.name = q.value(0).toString().toStdString();
    if (!q.value(1).isNull())
        info.maxReads = q.value(1).toInt();
    info.deadLetterQueue = q.value(2).toString().toStdString();
    info.createdAtMs = q.value(3).toLongLong();
    return info;
}

std::optional<QueueInfo> selectQueue(SqliteConnection &db, const QueueName &name)
{
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kRegistryColumns +
                          QStringLiteral(" FROM queue_registry WHERE queue_name = ?"),
                      {text(name.str())}, "read queue registry");
    if (!q->next())
        return std::nullopt;
    return readQueueInfo(*q);
}

QueueInfo requireQueue(SqliteConnection &db, const QueueName &name)
{
    std::optional<QueueInfo> info = selectQueue(db, name);
    if (!info)
        throw Error(ErrorCode::NotFound, "no queue '" + name.str() + "'");
    return *info;
}

void createTables(SqliteConnection &db, const QueueName &name)
{
    const QString queue = queueIdentifier(name.queueTable());
    const QString archive = queueIdentifier(name.archiveTable());
    // AUTOINCREMENT: msg_id must never be reused, or an archived or dead-lettered message's
    // id, and its last error, would be handed to a new message.
    run(db,
        QStringLiteral("CREATE TABLE IF NOT EXISTS ") + queue +
            QStringLiteral(
                " (msg_id INTEGER PRIMARY KEY AUTOINCREMENT, read_ct INTEGER NOT NULL DEFAULT 0, "
                "enqueued_at INTEGER NOT NULL, last_read_at INTEGER, vt INTEGER NOT NULL, "
                "message TEXT NOT NULL, headers TEXT)"),
        {}, "create queue table");
    run(db,
        QStringLiteral("CREATE INDEX IF NOT EXISTS ") +
            queueIdentifier(name.queueTable() + "_vt_idx") + QStringLiteral(" ON ") + queue +
            QStringLiteral(" (vt)"),
        {}, "create queue index");
    run(db,
        QStringLiteral("CREATE TABLE IF NOT EXISTS ") + archive +
            QStringLiteral(
                " (msg_id INTEGER PRIMARY KEY, read_ct INTEGER NOT NULL DEFAULT 0, "
                "enqueued_at INTEGER NOT NULL, last_read_at INTEGER, archived_at INTEGER NOT NULL, "
                "vt INTEGER NOT NULL, message TEXT NOT NULL, headers TEXT)"),
        {}, "create archive table");
    run(db,
        QStringLiteral("CREATE INDEX IF NOT EXISTS ") +
            queueIdentifier("archived_at_idx_" + name.str()) + QStringLiteral(" ON ") + archive +
            QStringLiteral(" (archived_at)"),
        {}, "create archive index");
}

void registerQueue(SqliteConnection &db, const QueueInfo &info)
{
    run(db,
        QStringLiteral(
            "INSERT INTO queue_registry (queue_name, max_reads, dead_letter_queue, created_at) "
            "VALUES (?,?,?,?)"),
        {text(info.name), info.maxReads ? QVariant(*info.maxReads) : QVariant(),
         info.deadLetterQueue.empty() ? QVariant() : text(info.deadLetterQueue),
         integer(info.createdAtMs)},
        "register queue");
}

/// Moves `m` to the queue's dead-letter queue with its provenance in the copy's headers.
void deadLetter(SqliteConnection &db, const QueueName &name, const QueueInfo &info,
                const QueueMessage &m, std::int64_t nowMs)
{
    DeadLetterProvenance provenance{.sourceQueue = name.str(),
                                    .sourceMsgId = m.msgId,
                                    .readCount = m.readCount,
                                    .deadLetteredAtMs = nowMs};
    Statement error = run(db,
                          QStringLiteral("SELECT error_class, error_detail FROM queue_errors "
                                         "WHERE queue_name = ? AND msg_id = ?"),
                          {text(name.str()), integer(m.msgId)}, "read message error");
    if (error->next()) {
        provenance.lastErrorClass = parseErrorClass(error->value(0).toString().toStdString());
        provenance.lastErrorDetail = error->value(1).toString().toStdString();
    }
    const QueueName dlq(info.deadLetterQueue);
    const std::int64_t copyId =
        insertMessage(db, dlq, {m.message, deadLetterHeaders(m.headers, provenance)}, 0, nowMs);
    run(db,
        QStringLiteral("DELETE FROM ") + queueIdentifier(name.queueTable()) +
            QStringLiteral(" WHERE msg_id = ?"),
        {integer(m.msgId)}, "dead-letter message");
    forgetMessageError(db, name, m.msgId);
    spdlog::warn("queue {}: message {} moved to {} as message {} after {} reads", name.str(),
                 m.msgId, dlq.str(), copyId, m.readCount);
}

} // namespace

SqliteMessageQueue::SqliteMessageQueue(std::shared_ptr<SqliteLedgerStore> ledger)
    : m_ledger(std::move(ledger))
{
}

std::string SqliteMessageQueue::describe() const
{
    return m_ledger->describe();
}

std::int64_t SqliteMessageQueue::nowMs()
{
    return m_ledger->nowMs();
}

QueueInfo SqliteMessageQueue::createQueue(const std::string &queue, const QueueOptions &options)
{
    const QueueName name(queue);
    const QueueName dlq = name.deadLetterQueue();
    if (options.maxReads < 1)
        throw Error(ErrorCode::InvalidArgument,
                    "max reads must be at least 1, not " + std::to_string(options.maxReads));

    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    if (std::optional<QueueInfo> existing = selectQueue(db, name)) {
        if (existing->maxReads != options.maxReads) {
            throw Error(ErrorCode::InvalidArgument,
                        "queue '" + name.str() + "' already exists with max reads " +
                            std::to_string(existing->maxReads.value_or(0)) + ", not " +
                            std::to_string(options.maxReads));
        }
        return *existing;
    }
    const std::int64_t now = m_ledger->nowMs();
    createTables(db, name);
    createTables(db, dlq);
    registerQueue(db, {.name = dlq.str(), .createdAtMs = now});
    const QueueInfo info{.name = name.str(),
                         .maxReads = options.maxReads,
                         .deadLetterQueue = dlq.str(),
                         .createdAtMs = now};
    registerQueue(db, info);
    tx.commit();
    spdlog::info("queue {} created (max reads {}, dead letters to {})", name.str(),
                 options.maxReads, dlq.str());
    return info;
}

std::vector<QueueInfo> SqliteMessageQueue::listQueues()
{
    SqliteConnection &db = m_ledger->connection();
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kRegistryColumns +
                          QStringLiteral(" FROM queue_registry ORDER BY queue_name"),
                      {}, "list queues");
    std::vector<QueueInfo> queues;
    while (q->next())
        queues.push_back(readQueueInfo(*q));
    return queues;
}

std::int64_t SqliteMessageQueue::send(const std::string &queue, const std::string &messageJson,
                                      const std::string &headersJson, std::int64_t delayMs)
{
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    const std::int64_t msgId =
        sendInTransaction(db, queue, messageJson, headersJson, delayMs, m_ledger->nowMs());
    tx.commit();
    return msgId;
}

std::vector<QueueMessage> SqliteMessageQueue::read(const std::string &queue,
                                                   std::int64_t visibilityTimeoutMs, int quantity)
{
    return readAndAck(queue, visibilityTimeoutMs, quantity, {});
}

std::vector<QueueMessage> SqliteMessageQueue::readAndAck(const std::string &queue,
                                                         std::int64_t visibilityTimeoutMs,
                                                         int quantity,
                                                         const std::vector<ReadReceipt> &acks)
{
    const QueueName name(queue);
    checkDuration(visibilityTimeoutMs, "visibility timeout");
    checkBatch(quantity, "quantity");
    for (const ReadReceipt &receipt : acks)
        checkReceipt(receipt);

    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    const QueueInfo info = requireQueue(db, name);
    const std::int64_t now = m_ledger->nowMs();
    for (const ReadReceipt &receipt : acks)
        acknowledgeRead(db, name, receipt, now);
    const QString table = queueIdentifier(name.queueTable());
    std::vector<QueueMessage> delivered;
    // Keyset over msg_id: a dead-lettered candidate frees its slot, and the next round fills
    // it from the messages after the last one seen (those delivered may still be visible when
    // the timeout is 0, so "vt <= now" alone would find them again).
    std::int64_t afterId = 0;
    while (static_cast<int>(delivered.size()) < quantity) {
        const int wanted = quantity - static_cast<int>(delivered.size());
        Statement q =
            run(db,
                QStringLiteral("SELECT ") + kQueueMessageColumns + QStringLiteral(" FROM ") +
                    table + QStringLiteral(" WHERE vt <= ? AND msg_id > ? ORDER BY msg_id LIMIT ?"),
                {integer(now), integer(afterId), wanted}, "read messages");
        std::vector<QueueMessage> candidates = readQueueMessages(*q);
        for (QueueMessage &m : candidates) {
            afterId = m.msgId;
            if (info.maxReads && m.readCount >= *info.maxReads) {
                deadLetter(db, name, info, m, now);
                continue;
            }
            m.readCount += 1;
            m.vtMs = now + visibilityTimeoutMs;
            m.lastReadAtMs = now;
            run(db,
                QStringLiteral("UPDATE ") + table +
                    QStringLiteral(" SET vt = ?, read_ct = ?, last_read_at = ? WHERE msg_id = ?"),
                {integer(m.vtMs), m.readCount, integer(now), integer(m.msgId)},
                "mark message read");
            delivered.push_back(std::move(m));
        }
        if (static_cast<int>(candidates.size()) < wanted)
            break;
    }
    tx.commit();
    return delivered;
}

QueueMessage SqliteMessageQueue::setVt(const std::string &queue, std::int64_t msgId,
                                       std::int64_t vtOffsetMs)
{
    const QueueName name(queue);
    checkDuration(vtOffsetMs, "visibility offset");
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    requireQueue(db, name);
    Statement q =
        run(db,
            QStringLiteral("UPDATE ") + queueIdentifier(name.queueTable()) +
                QStringLiteral(" SET vt = ? WHERE msg_id = ? RETURNING ") + kQueueMessageColumns,
            {integer(m_ledger->nowMs() + vtOffsetMs), integer(msgId)}, "set visibility");
    if (!q->next())
        throw noSuchMessage(name.str(), msgId);
    QueueMessage m = readQueueMessage(*q);
    q->finish();
    tx.commit();
    return m;
}

void SqliteMessageQueue::ack(const std::string &queue, const ReadReceipt &receipt)
{
    const QueueName name(queue);
    checkReceipt(receipt);
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    requireQueue(db, name);
    acknowledgeRead(db, name, receipt, m_ledger->nowMs());
    tx.commit();
}

bool SqliteMessageQueue::deleteMessage(const std::string &queue, std::int64_t msgId)
{
    const QueueName name(queue);
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    requireQueue(db, name);
    Statement q = run(db,
                      QStringLiteral("DELETE FROM ") + queueIdentifier(name.queueTable()) +
                          QStringLiteral(" WHERE msg_id = ?"),
                      {integer(msgId)}, "delete message");
    const bool deleted = q->numRowsAffected() == 1;
    forgetMessageError(db, name, msgId);
    tx.commit();
    return deleted;
}

bool SqliteMessageQueue::archive(const std::string &queue, std::int64_t msgId)
{
    const QueueName name(queue);
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    requireQueue(db, name);
    if (!archiveMessage(db, name, msgId, m_ledger->nowMs()))
        return false;
    tx.commit();
    return true;
}

void SqliteMessageQueue::archive(const std::string &queue, const ReadReceipt &receipt)
{
    const QueueName name(queue);
    checkReceipt(receipt);
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    requireQueue(db, name);
    if (const std::optional<int> current = readCountIn(db, name.queueTable(), receipt.msgId)) {
        if (*current != receipt.readCount)
            refuseRead(name, receipt, *current, "archive");
        archiveMessage(db, name, receipt.msgId, m_ledger->nowMs());
        tx.commit();
        return;
    }
    // Not in the queue: done when the archive holds it under this read (a retried archive).
    const std::optional<int> archived = readCountIn(db, name.archiveTable(), receipt.msgId);
    if (!archived)
        throw noSuchMessage(name.str(), receipt.msgId);
    if (*archived != receipt.readCount)
        refuseRead(name, receipt, *archived, "archive");
}

QueueMessage SqliteMessageQueue::nack(const std::string &queue, std::int64_t msgId,
                                      ErrorClass errorClass, const std::string &detail,
                                      std::int64_t retryDelayMs)
{
    const QueueName name(queue);
    checkDuration(retryDelayMs, "retry delay");
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    requireQueue(db, name);
    QueueMessage m = nackMessage(db, name, msgId, std::nullopt, errorClass, detail, retryDelayMs,
                                 m_ledger->nowMs());
    tx.commit();
    return m;
}

QueueMessage SqliteMessageQueue::nack(const std::string &queue, const ReadReceipt &receipt,
                                      ErrorClass errorClass, const std::string &detail,
                                      std::int64_t retryDelayMs)
{
    const QueueName name(queue);
    checkReceipt(receipt);
    checkDuration(retryDelayMs, "retry delay");
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    requireQueue(db, name);
    QueueMessage m = nackMessage(db, name, receipt.msgId, receipt.readCount, errorClass, detail,
                                 retryDelayMs, m_ledger->nowMs());
    tx.commit();
    return m;
}

std::vector<QueueMessage> SqliteMessageQueue::browse(const std::string &queue,
                                                     std::int64_t afterMsgId, int limit)
{
    const QueueName name(queue);
    checkBatch(limit, "limit");
    SqliteConnection &db = m_ledger->connection();
    requireQueue(db, name);
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kQueueMessageColumns + QStringLiteral(" FROM ") +
                          queueIdentifier(name.queueTable()) +
                          QStringLiteral(" WHERE msg_id > ? ORDER BY msg_id LIMIT ?"),
                      {integer(afterMsgId), limit}, "browse messages");
    return readQueueMessages(*q);
}

std::vector<ArchivedMessage> SqliteMessageQueue::browseArchive(const std::string &queue,
                                                               std::int64_t afterMsgId, int limit)
{
    const QueueName name(queue);
    checkBatch(limit, "limit");
    SqliteConnection &db = m_ledger->connection();
    requireQueue(db, name);
    Statement q =
        run(db,
            QStringLiteral("SELECT ") + kQueueMessageColumns +
                QStringLiteral(", archived_at FROM ") + queueIdentifier(name.archiveTable()) +
                QStringLiteral(" WHERE msg_id > ? ORDER BY msg_id LIMIT ?"),
            {integer(afterMsgId), limit}, "browse archive");
    std::vector<ArchivedMessage> archived;
    while (q->next())
        archived.push_back({readQueueMessage(*q), q->value(7).toLongLong()});
    return archived;
}

QueueMetrics SqliteMessageQueue::metrics(const std::string &queue)
{
    const QueueName name(queue);
    SqliteConnection &db = m_ledger->connection();
    requireQueue(db, name);
    QueueMetrics m;
    m.queue = name.str();
    m.scrapeTimeMs = m_ledger->nowMs();
    Statement q = run(db,
                      QStringLiteral("SELECT count(*), coalesce(sum(vt <= ?), 0), "
                                     "max(enqueued_at), min(enqueued_at) FROM ") +
                          queueIdentifier(name.queueTable()),
                      {integer(m.scrapeTimeMs)}, "queue metrics");
    q->next();
    m.length = q->value(0).toLongLong();
    m.visibleLength = q->value(1).toLongLong();
    if (!q->value(2).isNull()) {
        m.newestMessageAgeMs = m.scrapeTimeMs - q->value(2).toLongLong();
        m.oldestMessageAgeMs = m.scrapeTimeMs - q->value(3).toLongLong();
    }
    // pgmq counts from the msg_id sequence; AUTOINCREMENT keeps the same in sqlite_sequence.
    // Read after the count, so a concurrent send can only make the total larger, never smaller
    // than the length.
    Statement seq = run(db, QStringLiteral("SELECT seq FROM sqlite_sequence WHERE name = ?"),
                        {text(name.queueTable())}, "queue metrics");
    m.totalMessages = seq->next() ? seq->value(0).toLongLong() : 0;
    return m;
}

std::vector<DeadLetter> SqliteMessageQueue::deadLetters(const std::string &queue,
                                                        std::int64_t afterMsgId, int limit)
{
    const QueueName name(queue);
    const QueueName dlq = name.deadLetterQueue();
    checkBatch(limit, "limit");
    SqliteConnection &db = m_ledger->connection();
    requireQueue(db, name);
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kQueueMessageColumns + QStringLiteral(" FROM ") +
                          queueIdentifier(dlq.queueTable()) +
                          QStringLiteral(" WHERE msg_id > ? ORDER BY msg_id LIMIT ?"),
                      {integer(afterMsgId), limit}, "list dead letters");
    std::vector<DeadLetter> letters;
    for (QueueMessage &m : readQueueMessages(*q))
        letters.push_back(deadLetterFrom(std::move(m)));
    return letters;
}

std::optional<std::int64_t> SqliteMessageQueue::requeueDeadLetter(const std::string &queue,
                                                                  std::int64_t msgId,
                                                                  const std::string &headersJson)
{
    const QueueName name(queue);
    SqliteConnection &db = m_ledger->connection();
    WriteTransaction tx(db);
    const QueueInfo info = requireQueue(db, name);
    if (info.deadLetterQueue.empty())
        throw Error(ErrorCode::InvalidArgument,
                    "'" + queue + "' is a dead-letter queue: replay to its source queue");
    const QueueName dlq(info.deadLetterQueue);
    const std::int64_t now = m_ledger->nowMs();
    sqlitedlqreplays::checkRequeue(db, queue, headersJson, now);
    std::string body;
    {
        Statement q =
            run(db,
                QStringLiteral("SELECT message FROM ") + queueIdentifier(dlq.queueTable()) +
                    QStringLiteral(" WHERE msg_id = ?"),
                {integer(msgId)}, "read dead letter");
        if (!q->next()) {
            q->finish();
            tx.commit(); // the replay's stamp
            return std::nullopt;
        }
        body = q->value(0).toString().toStdString();
    }
    run(db,
        QStringLiteral("INSERT INTO ") + queueIdentifier(dlq.archiveTable()) +
            QStringLiteral(
                " (msg_id, read_ct, enqueued_at, last_read_at, archived_at, vt, message, headers) "
                "SELECT msg_id, read_ct, enqueued_at, last_read_at, ?, vt, message, headers "
                "FROM ") +
            queueIdentifier(dlq.queueTable()) + QStringLiteral(" WHERE msg_id = ?"),
        {integer(now), integer(msgId)}, "archive dead letter");
    run(db,
        QStringLiteral("DELETE FROM ") + queueIdentifier(dlq.queueTable()) +
            QStringLiteral(" WHERE msg_id = ?"),
        {integer(msgId)}, "archive dead letter");
    forgetMessageError(db, dlq, msgId);
    const std::int64_t sent = sendInTransaction(db, queue, body, headersJson, 0, now);
    tx.commit();
    return sent;
}

} // namespace idempo
