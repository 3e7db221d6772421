// SPDX-License-Identifier: Apache-2.0
#include "postgresmessagequeue.h"

#include <utility>

#include <nlohmann/json.hpp>

#include "canonicaljson.h"
#include "error.h"
#include "pgconnection.h"
#include "queuename.h"
#include "queuerules.h"

namespace idempo {
namespace {

/// A table of the queue schema as SQL text. Only ever given names derived from a QueueName,
/// whose characters ([a-z0-9_]) need no escaping; the quotes keep them from reading as keywords.
std::string qualified(const std::string &table)
{
    return "\"" + std::string(PostgresMessageQueue::Schema) + "\".\"" + table + "\"";
}

/// Milliseconds since the epoch of a timestamptz expression, rounded down like the clock.
std::string ms(const std::string &timestamp)
{
    return "floor(extract(epoch FROM " + timestamp + ") * 1000)::bigint";
}

/// A message's columns by name, in readMessage() order, as the tables hold them.
std::string tableColumns()
{
    return "msg_id, read_ct, " + ms("enqueued_at") + " AS enqueued_at_ms, " + ms("last_read_at") +
           " AS last_read_at_ms, " + ms("vt") +
           " AS vt_ms, message::text AS message, headers::text AS headers";
}

/// The same columns of an idempo.queue_message the functions answer.
constexpr const char *kMessageColumns =
    "msg_id, read_ct, enqueued_at_ms, last_read_at_ms, vt_ms, message::text, headers::text";
constexpr int kMessageColumnCount = 7;

/// A prepared statement's name: one per statement and queue. PostgreSQL keeps 63 bytes of a
/// name; the longest here ("iq_abrowse_" and a 47-character queue name) has 58.
std::string statementName(const char *statement, const QueueName &name)
{
    return std::string("iq_") + statement + "_" + name.str();
}

std::string browseSql(const std::string &table)
{
    return "SELECT " + tableColumns() + " FROM " + qualified(table) +
           " WHERE msg_id > $1::bigint ORDER BY msg_id LIMIT $2::integer";
}

// pgmq's metrics(): total_messages is the msg_id sequence's last value. $3 names the table for
// pg_get_serial_sequence(), which finds an identity's sequence and a bigserial's alike.
// Parameters: $1 $2 clock, $3 the table as text.
std::string metricsSql(const QueueName &name)
{
    return "WITH clock AS MATERIALIZED (SELECT idempo.now_ms($1::bigint, $2::bigint) AS now_ms) "
           "SELECT clock.now_ms, s.length, s.visible, s.newest, s.oldest, "
           "coalesce(pg_sequence_last_value(pg_get_serial_sequence($3, 'msg_id')::regclass), 0) "
           "FROM clock CROSS JOIN LATERAL (SELECT count(*) AS length, count(*) FILTER (WHERE vt <= "
           "idempo.ms_at(clock.now_ms)) AS visible, " +
           ms("max(enqueued_at)") + " AS newest, " + ms("min(enqueued_at)") + " AS oldest FROM " +
           qualified(name.queueTable()) + ") AS s";
}

/// jsonb's text (members reordered, spaces added) in the canonical form send() was given. A
/// message another pgmq client wrote with a number no double holds keeps jsonb's text.
std::string canonicalText(const std::string &jsonb)
{
    try {
        return canonicalJson(nlohmann::json::parse(jsonb));
    } catch (const std::exception &) {
        return jsonb;
    }
}

/// The message in columns column0 … column0 + 6 of `row`. A NULL body, which other pgmq
/// clients may write, reads as JSON null.
QueueMessage readMessage(const PgResult &r, int row, int column0)
{
    QueueMessage m;
    m.msgId = r.integer(row, column0);
    m.readCount = static_cast<int>(r.integer(row, column0 + 1));
    m.enqueuedAtMs = r.integer(row, column0 + 2);
    m.lastReadAtMs = r.optionalInteger(row, column0 + 3);
    m.vtMs = r.integer(row, column0 + 4);
    m.message =
        r.isNull(row, column0 + 5) ? std::string("null") : canonicalText(r.text(row, column0 + 5));
    if (!r.isNull(row, column0 + 6))
        m.headers = canonicalText(r.text(row, column0 + 6));
    return m;
}

std::vector<QueueMessage> readMessages(const PgResult &r)
{
    std::vector<QueueMessage> messages;
    messages.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row)
        messages.push_back(readMessage(r, row, 0));
    return messages;
}

constexpr std::string_view kRegistryColumns =
    "queue_name, max_reads, dead_letter_queue, created_at_ms";

QueueInfo readQueueInfo(const PgResult &r, int row)
{
    QueueInfo info;
    info.name = r.text(row, 0);
    if (!r.isNull(row, 1))
        info.maxReads = static_cast<int>(r.integer(row, 1));
    if (!r.isNull(row, 2))
        info.deadLetterQueue = r.text(row, 2);
    info.createdAtMs = r.integer(row, 3);
    return info;
}

std::optional<QueueInfo> selectQueue(PgConnection &c, const QueueName &name)
{
    const PgResult r = c.execPrepared("read queue registry", "iq_registry_find",
                                      "SELECT " + std::string(kRegistryColumns) +
                                          " FROM idempo.queue_registry WHERE queue_name = $1",
                                      PgParams().text(name.str()));
    if (r.rows() == 0)
        return std::nullopt;
    return readQueueInfo(r, 0);
}

Error noQueue(const QueueName &name)
{
    return Error(ErrorCode::NotFound, "no queue '" + name.str() + "'");
}

std::optional<std::string> optionalHeaders(const OutgoingMessage &message)
{
    return message.headers.empty() ? std::nullopt : std::optional<std::string>(message.headers);
}

} // namespace

PostgresMessageQueue::PostgresMessageQueue(std::shared_ptr<PostgresLedgerStore> ledger)
    : m_ledger(std::move(ledger))
{
}

std::string PostgresMessageQueue::describe() const
{
    return m_ledger->describe();
}

std::int64_t PostgresMessageQueue::nowMs()
{
    return m_ledger->nowMs();
}

QueueInfo PostgresMessageQueue::requireQueue(PgConnection &c, const std::string &queue)
{
    const QueueName name(queue);
    m_ledger->requireSchema();
    {
        std::lock_guard lock(m_knownMutex);
        if (const auto it = m_known.find(name.str()); it != m_known.end())
            return it->second;
    }
    const std::optional<QueueInfo> info = selectQueue(c, name);
    if (!info)
        throw noQueue(name);
    std::lock_guard lock(m_knownMutex);
    m_known.emplace(name.str(), *info);
    return *info;
}

QueueInfo PostgresMessageQueue::createQueue(const std::string &queue, const QueueOptions &options)
{
    const QueueName name(queue);
    name.deadLetterQueue(); // refuses a reserved or too long name with its own message
    if (options.maxReads < 1)
        throw Error(ErrorCode::InvalidArgument,
                    "max reads must be at least 1, not " + std::to_string(options.maxReads));
    m_ledger->requireSchema();
    PgParams params;
    params.text(name.str()).integer(options.maxReads);
    m_ledger->appendClock(params);
    const PgResult r = m_ledger->connection().execPrepared(
        "create queue", "iq_create",
        "SELECT * FROM idempo.queue_create($1, $2::integer, $3::bigint, $4::bigint)", params);
    return readQueueInfo(r, 0);
}

std::vector<QueueInfo> PostgresMessageQueue::listQueues()
{
    m_ledger->requireSchema();
    const PgResult r =
        m_ledger->connection().execPrepared("list queues", "iq_registry_list",
                                            "SELECT " + std::string(kRegistryColumns) +
                                                " FROM idempo.queue_registry ORDER BY queue_name",
                                            {});
    std::vector<QueueInfo> queues;
    queues.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row)
        queues.push_back(readQueueInfo(r, row));
    return queues;
}

std::int64_t PostgresMessageQueue::send(const std::string &queue, const std::string &messageJson,
                                        const std::string &headersJson, std::int64_t delayMs)
{
    const QueueName name(queue);
    checkDuration(delayMs, "delay");
    const OutgoingMessage message = prepareMessage(messageJson, headersJson);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params;
    params.text(name.str())
        .text(message.message)
        .optionalText(optionalHeaders(message))
        .integer(delayMs);
    m_ledger->appendClock(params);
    return c.execPrepared("send message", "iq_send", SendSql, params).integer(0, 0);
}

std::vector<QueueMessage> PostgresMessageQueue::read(const std::string &queue,
                                                     std::int64_t visibilityTimeoutMs, int quantity)
{
    return readAndAck(queue, visibilityTimeoutMs, quantity, {});
}

std::vector<QueueMessage> PostgresMessageQueue::readAndAck(const std::string &queue,
                                                           std::int64_t visibilityTimeoutMs,
                                                           int quantity,
                                                           const std::vector<ReadReceipt> &acks)
{
    const QueueName name(queue);
    checkDuration(visibilityTimeoutMs, "visibility timeout");
    checkBatch(quantity, "quantity");
    for (const ReadReceipt &receipt : acks)
        checkReceipt(receipt);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    std::optional<std::string> ack;
    if (!acks.empty()) {
        nlohmann::json pairs = nlohmann::json::array();
        for (const ReadReceipt &receipt : acks)
            pairs.push_back({receipt.msgId, receipt.readCount});
        ack = pairs.dump();
    }
    PgParams params;
    params.text(name.str()).integer(visibilityTimeoutMs).integer(quantity).optionalText(ack);
    m_ledger->appendClock(params);
    return readMessages(c.execPrepared("read messages", "iq_read", ReadSql, params));
}

void PostgresMessageQueue::ack(const std::string &queue, const ReadReceipt &receipt)
{
    const QueueName name(queue);
    checkReceipt(receipt);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params;
    params.text(name.str()).integer(receipt.msgId).integer(receipt.readCount);
    m_ledger->appendClock(params);
    c.execPrepared("acknowledge message", "iq_ack", AckSql, params);
}

QueueMessage PostgresMessageQueue::setVt(const std::string &queue, std::int64_t msgId,
                                         std::int64_t vtOffsetMs)
{
    const QueueName name(queue);
    checkDuration(vtOffsetMs, "visibility offset");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params;
    params.text(name.str()).integer(msgId).integer(vtOffsetMs);
    m_ledger->appendClock(params);
    return readMessage(
        c.execPrepared(
            "set visibility", "iq_setvt",
            "SELECT " + std::string(kMessageColumns) +
                " FROM idempo.queue_set_vt($1, $2::bigint, $3::bigint, $4::bigint, $5::bigint)",
            params),
        0, 0);
}

bool PostgresMessageQueue::deleteMessage(const std::string &queue, std::int64_t msgId)
{
    const QueueName name(queue);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    return c.execPrepared("delete message", "iq_delete",
                          "SELECT idempo.queue_delete($1, $2::bigint)",
                          PgParams().text(name.str()).integer(msgId))
               .text(0, 0) == "t";
}

bool PostgresMessageQueue::archive(const std::string &queue, std::int64_t msgId)
{
    return archiveRead(queue, msgId, std::nullopt);
}

void PostgresMessageQueue::archive(const std::string &queue, const ReadReceipt &receipt)
{
    checkReceipt(receipt);
    archiveRead(queue, receipt.msgId, receipt.readCount);
}

bool PostgresMessageQueue::archiveRead(const std::string &queue, std::int64_t msgId,
                                       std::optional<int> readCount)
{
    const QueueName name(queue);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params;
    params.text(name.str()).integer(msgId);
    if (readCount)
        params.integer(*readCount);
    else
        params.null();
    m_ledger->appendClock(params);
    return c.execPrepared(
                "archive message", "iq_archive",
                "SELECT idempo.queue_archive($1, $2::bigint, $3::integer, $4::bigint, $5::bigint)",
                params)
               .text(0, 0) == "t";
}

QueueMessage PostgresMessageQueue::nack(const std::string &queue, std::int64_t msgId,
                                        ErrorClass errorClass, const std::string &detail,
                                        std::int64_t retryDelayMs)
{
    return nackRead(queue, msgId, std::nullopt, errorClass, detail, retryDelayMs);
}

QueueMessage PostgresMessageQueue::nack(const std::string &queue, const ReadReceipt &receipt,
                                        ErrorClass errorClass, const std::string &detail,
                                        std::int64_t retryDelayMs)
{
    checkReceipt(receipt);
    return nackRead(queue, receipt.msgId, receipt.readCount, errorClass, detail, retryDelayMs);
}

QueueMessage PostgresMessageQueue::nackRead(const std::string &queue, std::int64_t msgId,
                                            std::optional<int> readCount, ErrorClass errorClass,
                                            const std::string &detail, std::int64_t retryDelayMs)
{
    const QueueName name(queue);
    checkDuration(retryDelayMs, "retry delay");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params;
    params.text(name.str())
        .integer(msgId)
        .text(errorClassName(errorClass))
        .text(detail)
        .integer(retryDelayMs);
    if (readCount)
        params.integer(*readCount);
    else
        params.null();
    m_ledger->appendClock(params);
    return readMessage(
        c.execPrepared(
            "nack message", "iq_nack",
            "SELECT " + std::string(kMessageColumns) +
                " FROM idempo.queue_nack($1, $2::bigint, $3, $4, $5::bigint, $6::integer, "
                "$7::bigint, $8::bigint)",
            params),
        0, 0);
}

std::vector<QueueMessage> PostgresMessageQueue::browse(const std::string &queue,
                                                       std::int64_t afterMsgId, int limit)
{
    const QueueName name(queue);
    checkBatch(limit, "limit");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    return readMessages(c.execPrepared("browse messages", statementName("browse", name),
                                       browseSql(name.queueTable()),
                                       PgParams().integer(afterMsgId).integer(limit)));
}

std::vector<ArchivedMessage> PostgresMessageQueue::browseArchive(const std::string &queue,
                                                                 std::int64_t afterMsgId, int limit)
{
    const QueueName name(queue);
    checkBatch(limit, "limit");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    const PgResult r =
        c.execPrepared("browse archive", statementName("abrowse", name),
                       "SELECT " + tableColumns() + ", " + ms("archived_at") + " FROM " +
                           qualified(name.archiveTable()) +
                           " WHERE msg_id > $1::bigint ORDER BY msg_id LIMIT $2::integer",
                       PgParams().integer(afterMsgId).integer(limit));
    std::vector<ArchivedMessage> archived;
    archived.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row)
        archived.push_back({readMessage(r, row, 0), r.integer(row, kMessageColumnCount)});
    return archived;
}

QueueMetrics PostgresMessageQueue::metrics(const std::string &queue)
{
    const QueueName name(queue);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params = m_ledger->clockParams();
    params.text(qualified(name.queueTable()));
    const PgResult r =
        c.execPrepared("queue metrics", statementName("metrics", name), metricsSql(name), params);
    QueueMetrics m;
    m.queue = name.str();
    m.scrapeTimeMs = r.integer(0, 0);
    m.length = r.integer(0, 1);
    m.visibleLength = r.integer(0, 2);
    if (!r.isNull(0, 3)) {
        m.newestMessageAgeMs = m.scrapeTimeMs - r.integer(0, 3);
        m.oldestMessageAgeMs = m.scrapeTimeMs - r.integer(0, 4);
    }
    m.totalMessages = r.integer(0, 5);
    return m;
}

std::vector<DeadLetter> PostgresMessageQueue::deadLetters(const std::string &queue,
                                                          std::int64_t afterMsgId, int limit)
{
    const QueueName name(queue);
    const QueueName dlq = name.deadLetterQueue();
    checkBatch(limit, "limit");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    std::vector<DeadLetter> letters;
    for (QueueMessage &m : readMessages(c.execPrepared(
             "list dead letters", statementName("browse", dlq), browseSql(dlq.queueTable()),
             PgParams().integer(afterMsgId).integer(limit))))
        letters.push_back(deadLetterFrom(std::move(m)));
    return letters;
}

std::optional<std::int64_t> PostgresMessageQueue::requeueDeadLetter(const std::string &queue,
                                                                    std::int64_t msgId,
                                                                    const std::string &headersJson)
{
    const QueueName name(queue);
    PgConnection &c = m_ledger->connection();
    const QueueInfo info = requireQueue(c, queue);
    if (info.deadLetterQueue.empty())
        throw Error(ErrorCode::InvalidArgument,
                    "'" + queue + "' is a dead-letter queue: replay to its source queue");
    const OutgoingMessage headers = prepareMessage("null", headersJson);
    // A replay's requeue names the replay it belongs to (DlqReplayCommand's "replay" header):
    // the database lets a login requeue only the dead letters of a replay it opened, and only
    // while the run named by "begun_seq" still holds it (none took it over as abandoned).
    std::optional<std::string> replayId;
    std::optional<std::int64_t> begunSeq;
    if (!headers.headers.empty()) {
        const nlohmann::json h = nlohmann::json::parse(headers.headers);
        if (const auto it = h.find("replay"); it != h.end() && it->is_object()) {
            if (it->contains("replay_id") && it->at("replay_id").is_string())
                replayId = it->at("replay_id").get<std::string>();
            if (it->contains("begun_seq") && it->at("begun_seq").is_number_integer())
                begunSeq = it->at("begun_seq").get<std::int64_t>();
        }
    }
    PgParams params;
    params.text(name.str())
        .integer(msgId)
        .optionalText(optionalHeaders(headers))
        .optionalText(replayId)
        .optionalInteger(begunSeq);
    m_ledger->appendClock(params);
    const PgResult r = c.execPrepared(
        "requeue dead letter", "iq_requeue",
        "SELECT idempo.queue_requeue_dead_letter($1, $2::bigint, $3, $4, $5::bigint, "
        "$6::bigint, $7::bigint)",
        params);
    return r.optionalInteger(0, 0);
}

} // namespace idempo
