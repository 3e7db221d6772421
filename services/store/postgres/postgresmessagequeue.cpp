// SPDX-License-Identifier: Apache-2.0
#include "postgresmessagequeue.h"

#include "canonicaljson.h"
#include "error.h"
#include "pgconnection.h"
#include "postgresoutbox.h"
#include "queuename.h"
#include "queuerules.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace idempo {
namespace {

/// Serialises createQueue() across processes (queue creation is rare; the schema's own CREATE
/// IF NOT EXISTS races otherwise). The key is arbitrary but fixed ("idempoq" in ASCII).
constexpr std::int64_t kCreateLock = 29670604302066033;

/// A table of the queue schema as SQL text. Only ever given names derived from a QueueName,
/// whose characters ([a-z0-9_]) need no escaping; the quotes keep them from reading as keywords.
std::string qualified(const std::string &table)
{
    return "\"" + std::string(PostgresMessageQueue::Schema) + "\".\"" + table + "\"";
}

/// The timestamptz of a millisecond expression: exact, unlike to_timestamp()'s double.
std::string at(const std::string &ms)
{
    return "(timestamptz 'epoch' + (" + ms + ") * interval '1 millisecond')";
}

/// Milliseconds since the epoch of a timestamptz expression, rounded down like the clock.
std::string ms(const std::string &timestamp)
{
    return "floor(extract(epoch FROM " + timestamp + ") * 1000)::bigint";
}

const std::string kNow(PostgresLedgerStore::ServerClockSql);

/// A message's columns by name, in readMessage() order; `alias` qualifies them.
std::string columns(const std::string &alias)
{
    const std::string p = alias.empty() ? std::string() : alias + ".";
    return p + "msg_id, " + p + "read_ct, " + ms(p + "enqueued_at") + " AS enqueued_at_ms, "
           + ms(p + "last_read_at") + " AS last_read_at_ms, " + ms(p + "vt") + " AS vt_ms, " + p
           + "message::text AS message, " + p + "headers::text AS headers";
}
constexpr int kMessageColumns = 7;

/// A prepared statement's name: one per statement and queue. PostgreSQL keeps 63 bytes of a
/// name; the longest here ("iq_abrowse_" and a 47-character queue name) has 58.
std::string statementName(const char *statement, const QueueName &name)
{
    return std::string("iq_") + statement + "_" + name.str();
}

std::string browseSql(const std::string &table)
{
    return "SELECT " + columns("") + " FROM " + qualified(table)
           + " WHERE msg_id > $1::bigint ORDER BY msg_id LIMIT $2::integer";
}

// Dead-lettering, for the candidates a read found past their reads ($3, an array of msg_id):
// each is locked (a concurrent reader moving the same one is skipped, not waited for), deleted
// if it is still visible and still past $4 reads, and its last error is deleted and returned.
// Parameters: $1 $2 clock, $3 msg_ids, $4 max reads, $5 queue name.
std::string deadLetterSql(const QueueName &name)
{
    const std::string q = qualified(name.queueTable());
    return "WITH clock AS MATERIALIZED (SELECT " + kNow + " AS now_ms), "
           "locked AS MATERIALIZED (SELECT q.msg_id FROM " + q + " AS q WHERE q.msg_id = ANY($3::bigint[]) "
           "ORDER BY q.msg_id FOR UPDATE SKIP LOCKED), "
           "moved AS (DELETE FROM " + q + " AS m USING locked AS l, clock "
           "WHERE m.msg_id = l.msg_id AND m.vt <= " + at("clock.now_ms") + " AND m.read_ct >= $4::integer "
           "RETURNING " + columns("m") + "), "
           "forgotten AS (DELETE FROM queue_errors AS e USING moved "
           "WHERE e.queue_name = $5 AND e.msg_id = moved.msg_id "
           "RETURNING e.msg_id, e.error_class, e.error_detail) "
           "SELECT clock.now_ms, moved.*, f.error_class, f.error_detail "
           "FROM clock CROSS JOIN moved LEFT JOIN forgotten AS f ON f.msg_id = moved.msg_id "
           "ORDER BY moved.msg_id";
}

// Parameters: $1 $2 clock, $3 msg_id, $4 offset ms.
std::string setVtSql(const QueueName &name)
{
    return "UPDATE " + qualified(name.queueTable()) + " AS m SET vt = " + at("c.now_ms + $4::bigint")
           + " FROM (SELECT " + kNow + " AS now_ms) AS c WHERE m.msg_id = $3::bigint RETURNING "
           + columns("m");
}

// Parameters: $1 $2 clock, $3 msg_id, $4 retry delay ms, $5 queue name, $6 error class, $7 detail.
std::string nackSql(const QueueName &name)
{
    return "WITH clock AS MATERIALIZED (SELECT " + kNow + " AS now_ms), "
           "updated AS (UPDATE " + qualified(name.queueTable()) + " AS m SET vt = " + at("clock.now_ms + $4::bigint")
           + " FROM clock WHERE m.msg_id = $3::bigint RETURNING " + columns("m") + "), "
           "recorded AS (INSERT INTO queue_errors (queue_name, msg_id, error_class, error_detail, recorded_at_ms) "
           "SELECT $5, u.msg_id, $6, $7, clock.now_ms FROM updated AS u CROSS JOIN clock "
           "ON CONFLICT (queue_name, msg_id) DO UPDATE SET error_class = excluded.error_class, "
           "error_detail = excluded.error_detail, recorded_at_ms = excluded.recorded_at_ms) "
           "SELECT * FROM updated";
}

// pgmq's archive: the row moves with its columns, stamped with archived_at.
// Parameters: $1 $2 clock, $3 msg_id, $4 queue name.
std::string archiveSql(const QueueName &name)
{
    return "WITH gone AS (DELETE FROM " + qualified(name.queueTable())
           + " WHERE msg_id = $3::bigint RETURNING msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers), "
           "archived AS (INSERT INTO " + qualified(name.archiveTable())
           + " (msg_id, read_ct, enqueued_at, last_read_at, archived_at, vt, message, headers) "
           "SELECT g.msg_id, g.read_ct, g.enqueued_at, g.last_read_at, " + at(kNow)
           + ", g.vt, g.message, g.headers FROM gone AS g RETURNING msg_id), "
           "forgotten AS (DELETE FROM queue_errors WHERE queue_name = $4 AND msg_id = $3::bigint) "
           "SELECT count(*) FROM archived";
}

// pgmq's metrics(): total_messages is the msg_id sequence's last value. $3 names the table for
// pg_get_serial_sequence(), which finds an identity's sequence and a bigserial's alike.
// Parameters: $1 $2 clock, $3 the table as text.
std::string metricsSql(const QueueName &name)
{
    return "WITH clock AS MATERIALIZED (SELECT " + kNow + " AS now_ms) "
           "SELECT clock.now_ms, s.length, s.visible, s.newest, s.oldest, "
           "coalesce(pg_sequence_last_value(pg_get_serial_sequence($3, 'msg_id')::regclass), 0) "
           "FROM clock CROSS JOIN LATERAL (SELECT count(*) AS length, count(*) FILTER (WHERE vt <= "
           + at("clock.now_ms") + ") AS visible, " + ms("max(enqueued_at)") + " AS newest, "
           + ms("min(enqueued_at)") + " AS oldest FROM " + qualified(name.queueTable()) + ") AS s";
}

/// pgmq's tables, indexes and names (pgmq.create_non_partitioned), created where missing. The
/// ALTERs give a queue made by an older pgmq the columns it lacked: the statements select them.
std::string createTablesSql(const QueueName &name)
{
    const std::string q = qualified(name.queueTable());
    const std::string a = qualified(name.archiveTable());
    return "CREATE TABLE IF NOT EXISTS " + q
           + " (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, read_ct integer NOT NULL DEFAULT 0, "
             "enqueued_at timestamptz NOT NULL DEFAULT now(), last_read_at timestamptz, "
             "vt timestamptz NOT NULL, message jsonb, headers jsonb);\n"
             "ALTER TABLE " + q + " ADD COLUMN IF NOT EXISTS last_read_at timestamptz, "
             "ADD COLUMN IF NOT EXISTS headers jsonb;\n"
             "CREATE INDEX IF NOT EXISTS \"" + name.queueTable() + "_vt_idx\" ON " + q + " (vt ASC);\n"
             "CREATE TABLE IF NOT EXISTS " + a
           + " (msg_id bigint PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0, "
             "enqueued_at timestamptz NOT NULL DEFAULT now(), last_read_at timestamptz, "
             "archived_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, "
             "headers jsonb);\n"
             "ALTER TABLE " + a + " ADD COLUMN IF NOT EXISTS last_read_at timestamptz, "
             "ADD COLUMN IF NOT EXISTS headers jsonb;\n"
             "CREATE INDEX IF NOT EXISTS \"archived_at_idx_" + name.str() + "\" ON " + a + " (archived_at)";
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

/// The message in columns column0 … column0 + 6 of `row` (columns() order). A NULL body, which
/// other pgmq clients may write, reads as JSON null.
QueueMessage readMessage(const PgResult &r, int row, int column0)
{
    QueueMessage m;
    m.msgId = r.integer(row, column0);
    m.readCount = static_cast<int>(r.integer(row, column0 + 1));
    m.enqueuedAtMs = r.integer(row, column0 + 2);
    m.lastReadAtMs = r.optionalInteger(row, column0 + 3);
    m.vtMs = r.integer(row, column0 + 4);
    m.message = r.isNull(row, column0 + 5) ? std::string("null") : canonicalText(r.text(row, column0 + 5));
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

constexpr std::string_view kRegistryColumns = "queue_name, max_reads, dead_letter_queue, created_at_ms";

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
                                      "SELECT " + std::string(kRegistryColumns)
                                          + " FROM queue_registry WHERE queue_name = $1",
                                      PgParams().text(name.str()));
    if (r.rows() == 0)
        return std::nullopt;
    return readQueueInfo(r, 0);
}

Error noQueue(const QueueName &name)
{
    return Error(ErrorCode::NotFound, "no queue '" + name.str() + "'");
}

Error noMessage(const QueueName &name, std::int64_t msgId)
{
    return Error(ErrorCode::NotFound, "queue '" + name.str() + "' holds no message " + std::to_string(msgId));
}

/// What one run of the read statement found.
struct ReadRound
{
    std::vector<QueueMessage> delivered;
    std::vector<std::int64_t> exhausted; ///< candidates past their reads, left unread and unchanged
    int asked = 0;                       ///< the quantity the statement was given
    int candidates = 0;                  ///< the messages it found visible and locked
    std::int64_t lastCandidate = 0;
};

ReadRound readRound(PgConnection &c, PgParams clock, const QueueName &name, const QueueInfo &info,
                    std::int64_t visibilityTimeoutMs, int quantity, std::int64_t afterId)
{
    clock.optionalInteger(info.maxReads).integer(visibilityTimeoutMs).integer(quantity).integer(afterId);
    const PgResult r = c.execPrepared("read messages", statementName("read", name),
                                      PostgresMessageQueue::readSql(name.str()), clock);
    ReadRound round;
    round.asked = quantity;
    round.candidates = r.rows();
    for (int row = 0; row < r.rows(); ++row) {
        round.lastCandidate = std::max(round.lastCandidate, r.integer(row, 1));
        if (r.text(row, 0) == "t")
            round.delivered.push_back(readMessage(r, row, 1));
        else
            round.exhausted.push_back(r.integer(row, 1));
    }
    return round;
}

/// Moves the exhausted candidates `ids` of `name` to its dead-letter queue, inside the caller's
/// transaction, each with its provenance and last error in the copy's headers.
void deadLetter(PgConnection &c, PgParams clock, const QueueName &name, const QueueInfo &info,
                const std::vector<std::int64_t> &ids)
{
    std::string array = "{";
    for (const std::int64_t id : ids)
        array += (array.size() > 1 ? "," : "") + std::to_string(id);
    array += "}";
    clock.text(array).integer(info.maxReads.value_or(0)).text(name.str());
    const PgResult r = c.execPrepared("dead-letter messages", statementName("dead", name), deadLetterSql(name), clock);
    const QueueName dlq(info.deadLetterQueue);
    for (int row = 0; row < r.rows(); ++row) {
        const std::int64_t now = r.integer(row, 0);
        const QueueMessage m = readMessage(r, row, 1);
        DeadLetterProvenance provenance{.sourceQueue = name.str(), .sourceMsgId = m.msgId,
                                        .readCount = m.readCount, .deadLetteredAtMs = now};
        if (!r.isNull(row, 1 + kMessageColumns)) {
            provenance.lastErrorClass = parseErrorClass(r.text(row, 1 + kMessageColumns));
            provenance.lastErrorDetail = r.text(row, 2 + kMessageColumns);
        }
        const std::int64_t copyId =
            insertMessage(c, pinnedClock(now), dlq, {m.message, deadLetterHeaders(m.headers, provenance)}, 0);
        spdlog::warn("queue {}: message {} moved to {} as message {} after {} reads", name.str(), m.msgId, dlq.str(),
                     copyId, m.readCount);
    }
}

/// Grants the least-privilege roles (0001_init.sql, 0005_guarded_actions.sql) that exist their rights on `name`'s tables.
void grantOnTables(PgConnection &c, const QueueName &name)
{
    const std::string tables = qualified(name.queueTable()) + ", " + qualified(name.archiveTable());
    const std::string sequence =
        c.exec("find msg_id sequence", "SELECT pg_get_serial_sequence($1, 'msg_id')",
               PgParams().text(qualified(name.queueTable())))
            .text(0, 0);
    const PgResult roles = c.exec("find roles", "SELECT rolname FROM pg_roles WHERE rolname IN "
                                                "('idempo_worker', 'idempo_viewer', 'idempo_approver', "
                                                "'idempo_operator')");
    for (int row = 0; row < roles.rows(); ++row) {
        const std::string role = roles.text(row, 0);
        // Operators replay dead letters: archive from the dead-letter queue, send to the source.
        const std::string rights = role == "idempo_worker"     ? "SELECT, INSERT, UPDATE, DELETE"
                                   : role == "idempo_operator" ? "SELECT, INSERT, DELETE"
                                                               : "SELECT";
        // pg_get_serial_sequence() returns the name quoted as SQL needs it.
        c.execScript("grant on queue", "GRANT USAGE ON SCHEMA \"" + std::string(PostgresMessageQueue::Schema)
                                           + "\" TO " + role + ";\nGRANT " + rights + " ON " + tables + " TO "
                                           + role + ";\nGRANT SELECT ON SEQUENCE " + sequence + " TO " + role);
    }
}

/// Registers `info` (name, max reads, dead-letter queue) stamped with the clock; returns it.
QueueInfo registerQueue(PgConnection &c, PgParams clock, QueueInfo info)
{
    clock.text(info.name)
        .optionalInteger(info.maxReads)
        .optionalText(info.deadLetterQueue.empty() ? std::nullopt : std::optional<std::string>(info.deadLetterQueue));
    info.createdAtMs = c.execPrepared("register queue", "iq_registry_add",
                                      "INSERT INTO queue_registry (queue_name, max_reads, dead_letter_queue, "
                                      "created_at_ms) VALUES ($3, $4::integer, $5, " + kNow + ") RETURNING created_at_ms",
                                      clock)
                           .integer(0, 0);
    return info;
}

} // namespace

// The read: one statement. `candidates` takes the oldest visible messages after $6 and locks
// them, skipping those another reader holds (FOR UPDATE SKIP LOCKED re-checks vt on the latest
// row version, so a message another reader just hid is not taken). `delivered` hides those with
// reads left and counts the read; those past $3 reads come back as 'f' rows, unchanged. It finds
// the locked rows by primary key (= ANY of an array), not by joining the CTE: a prepared
// statement's generic plan would hash-join that against a scan of the whole queue.
std::string PostgresMessageQueue::readSql(const std::string &queue)
{
    const std::string q = qualified(QueueName(queue).queueTable());
    return "WITH clock AS MATERIALIZED (SELECT " + kNow + " AS now_ms), "
           "candidates AS MATERIALIZED (SELECT q.msg_id, q.read_ct FROM " + q + " AS q "
           "WHERE q.vt <= (SELECT " + at("now_ms") + " FROM clock) AND q.msg_id > $6::bigint "
           "ORDER BY q.msg_id LIMIT $5::integer FOR UPDATE SKIP LOCKED), "
           "delivered AS (UPDATE " + q + " AS m SET vt = " + at("clock.now_ms + $4::bigint")
           + ", read_ct = m.read_ct + 1, last_read_at = " + at("clock.now_ms") + " FROM clock "
           "WHERE m.msg_id = ANY (ARRAY(SELECT msg_id FROM candidates)) "
           "AND ($3::integer IS NULL OR m.read_ct < $3::integer) "
           "RETURNING " + columns("m") + ") "
           "SELECT true, d.* FROM delivered AS d "
           "UNION ALL SELECT false, c.msg_id, c.read_ct, NULL, NULL, NULL, NULL, NULL FROM candidates AS c "
           "WHERE c.read_ct >= $3::integer "
           "ORDER BY 2";
}

std::string PostgresMessageQueue::sendSql(const std::string &queue)
{
    return "INSERT INTO " + qualified(QueueName(queue).queueTable()) + " (enqueued_at, vt, message, headers) SELECT "
           + at("c.now_ms") + ", " + at("c.now_ms + $3::bigint") + ", $4::jsonb, $5::jsonb FROM (SELECT " + kNow
           + " AS now_ms) AS c RETURNING msg_id";
}

// The last error goes with the message.
std::string PostgresMessageQueue::deleteSql(const std::string &queue)
{
    return "WITH gone AS (DELETE FROM " + qualified(QueueName(queue).queueTable())
           + " WHERE msg_id = $1::bigint RETURNING msg_id), "
             "forgotten AS (DELETE FROM queue_errors WHERE queue_name = $2 AND msg_id = $1::bigint) "
             "SELECT count(*) FROM gone";
}

PostgresMessageQueue::PostgresMessageQueue(std::shared_ptr<PostgresLedgerStore> ledger) : m_ledger(std::move(ledger))
{
}

std::string PostgresMessageQueue::describe() const { return m_ledger->describe(); }

std::int64_t PostgresMessageQueue::nowMs() { return m_ledger->nowMs(); }

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
    const QueueName dlq = name.deadLetterQueue();
    if (options.maxReads < 1)
        throw Error(ErrorCode::InvalidArgument, "max reads must be at least 1, not " + std::to_string(options.maxReads));
    m_ledger->requireSchema();

    PgConnection &c = m_ledger->connection();
    PgTransaction tx(c);
    // pgmq.create() takes the same per-name locks, so Idempo and pgmq never create one queue twice.
    c.exec("lock queue creation",
           "SELECT pg_advisory_xact_lock($1::bigint), pg_advisory_xact_lock(hashtext('pgmq.queue_' || $2)), "
           "pg_advisory_xact_lock(hashtext('pgmq.queue_' || $3))",
           PgParams().integer(kCreateLock).text(name.str()).text(dlq.str()));
    if (std::optional<QueueInfo> existing = selectQueue(c, name)) {
        if (existing->maxReads != options.maxReads) {
            throw Error(ErrorCode::InvalidArgument, "queue '" + name.str() + "' already exists with max reads "
                                                        + std::to_string(existing->maxReads.value_or(0)) + ", not "
                                                        + std::to_string(options.maxReads));
        }
        return *existing;
    }
    c.execScript("create queue", "CREATE SCHEMA IF NOT EXISTS \"" + std::string(Schema) + "\";\n"
                                     + createTablesSql(name) + ";\n" + createTablesSql(dlq));
    grantOnTables(c, name);
    grantOnTables(c, dlq);
    // Registered at one instant: the dead-letter queue's row is written with the queue's time.
    const QueueInfo info =
        registerQueue(c, m_ledger->clockParams(), {.name = name.str(), .maxReads = options.maxReads,
                                                   .deadLetterQueue = dlq.str()});
    registerQueue(c, pinnedClock(info.createdAtMs), {.name = dlq.str()});
    tx.commit();
    spdlog::info("queue {} created (max reads {}, dead letters to {})", name.str(), options.maxReads, dlq.str());
    return info;
}

std::vector<QueueInfo> PostgresMessageQueue::listQueues()
{
    m_ledger->requireSchema();
    const PgResult r = m_ledger->connection().execPrepared(
        "list queues", "iq_registry_list",
        "SELECT " + std::string(kRegistryColumns) + " FROM queue_registry ORDER BY queue_name", {});
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
    return insertMessage(c, m_ledger->clockParams(), name, message, delayMs);
}

std::vector<QueueMessage> PostgresMessageQueue::read(const std::string &queue, std::int64_t visibilityTimeoutMs,
                                                     int quantity)
{
    const QueueName name(queue);
    checkDuration(visibilityTimeoutMs, "visibility timeout");
    checkBatch(quantity, "quantity");
    PgConnection &c = m_ledger->connection();
    const QueueInfo info = requireQueue(c, queue);

    ReadRound round = readRound(c, m_ledger->clockParams(), name, info, visibilityTimeoutMs, quantity, 0);
    if (round.exhausted.empty())
        return std::move(round.delivered);

    // Some candidates have used up their reads: they move to the dead-letter queue, and the
    // read goes on after the last candidate seen, in one transaction. Keyset, not "vt <= now"
    // alone: with a timeout of 0 the messages just delivered are visible again.
    PgTransaction tx(c);
    std::vector<QueueMessage> delivered = std::move(round.delivered);
    for (;;) {
        deadLetter(c, m_ledger->clockParams(), name, info, round.exhausted);
        const int missing = quantity - static_cast<int>(delivered.size());
        // A round that found fewer candidates than it asked for has seen every visible message.
        if (missing == 0 || round.candidates < round.asked)
            break;
        round = readRound(c, m_ledger->clockParams(), name, info, visibilityTimeoutMs, missing, round.lastCandidate);
        std::move(round.delivered.begin(), round.delivered.end(), std::back_inserter(delivered));
        if (round.exhausted.empty())
            break;
    }
    tx.commit();
    std::sort(delivered.begin(), delivered.end(),
              [](const QueueMessage &a, const QueueMessage &b) { return a.msgId < b.msgId; });
    return delivered;
}

QueueMessage PostgresMessageQueue::setVt(const std::string &queue, std::int64_t msgId, std::int64_t vtOffsetMs)
{
    const QueueName name(queue);
    checkDuration(vtOffsetMs, "visibility offset");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params = m_ledger->clockParams();
    params.integer(msgId).integer(vtOffsetMs);
    const PgResult r = c.execPrepared("set visibility", statementName("setvt", name), setVtSql(name), params);
    if (r.rows() == 0)
        throw noMessage(name, msgId);
    return readMessage(r, 0, 0);
}

bool PostgresMessageQueue::deleteMessage(const std::string &queue, std::int64_t msgId)
{
    const QueueName name(queue);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    return c.execPrepared("delete message", statementName("delete", name), deleteSql(queue),
                          PgParams().integer(msgId).text(name.str()))
               .integer(0, 0)
           == 1;
}

bool PostgresMessageQueue::archive(const std::string &queue, std::int64_t msgId)
{
    const QueueName name(queue);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params = m_ledger->clockParams();
    params.integer(msgId).text(name.str());
    return c.execPrepared("archive message", statementName("archive", name), archiveSql(name), params).integer(0, 0)
           == 1;
}

QueueMessage PostgresMessageQueue::nack(const std::string &queue, std::int64_t msgId, ErrorClass errorClass,
                                        const std::string &detail, std::int64_t retryDelayMs)
{
    const QueueName name(queue);
    checkDuration(retryDelayMs, "retry delay");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params = m_ledger->clockParams();
    params.integer(msgId).integer(retryDelayMs).text(name.str()).text(errorClassName(errorClass)).text(detail);
    const PgResult r = c.execPrepared("nack message", statementName("nack", name), nackSql(name), params);
    if (r.rows() == 0)
        throw noMessage(name, msgId);
    return readMessage(r, 0, 0);
}

std::vector<QueueMessage> PostgresMessageQueue::browse(const std::string &queue, std::int64_t afterMsgId, int limit)
{
    const QueueName name(queue);
    checkBatch(limit, "limit");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    return readMessages(c.execPrepared("browse messages", statementName("browse", name),
                                       browseSql(name.queueTable()), PgParams().integer(afterMsgId).integer(limit)));
}

std::vector<ArchivedMessage> PostgresMessageQueue::browseArchive(const std::string &queue, std::int64_t afterMsgId,
                                                                 int limit)
{
    const QueueName name(queue);
    checkBatch(limit, "limit");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    const PgResult r =
        c.execPrepared("browse archive", statementName("abrowse", name),
                       "SELECT " + columns("") + ", " + ms("archived_at") + " FROM " + qualified(name.archiveTable())
                           + " WHERE msg_id > $1::bigint ORDER BY msg_id LIMIT $2::integer",
                       PgParams().integer(afterMsgId).integer(limit));
    std::vector<ArchivedMessage> archived;
    archived.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row)
        archived.push_back({readMessage(r, row, 0), r.integer(row, kMessageColumns)});
    return archived;
}

QueueMetrics PostgresMessageQueue::metrics(const std::string &queue)
{
    const QueueName name(queue);
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    PgParams params = m_ledger->clockParams();
    params.text(qualified(name.queueTable()));
    const PgResult r = c.execPrepared("queue metrics", statementName("metrics", name), metricsSql(name), params);
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

std::vector<DeadLetter> PostgresMessageQueue::deadLetters(const std::string &queue, std::int64_t afterMsgId, int limit)
{
    const QueueName name(queue);
    const QueueName dlq = name.deadLetterQueue();
    checkBatch(limit, "limit");
    PgConnection &c = m_ledger->connection();
    requireQueue(c, queue);
    std::vector<DeadLetter> letters;
    for (QueueMessage &m : readMessages(c.execPrepared("list dead letters", statementName("browse", dlq),
                                                       browseSql(dlq.queueTable()),
                                                       PgParams().integer(afterMsgId).integer(limit))))
        letters.push_back(deadLetterFrom(std::move(m)));
    return letters;
}

std::optional<std::int64_t> PostgresMessageQueue::requeueDeadLetter(const std::string &queue, std::int64_t msgId,
                                                                    const std::string &headersJson)
{
    const QueueName name(queue);
    PgConnection &c = m_ledger->connection();
    const QueueInfo info = requireQueue(c, queue);
    if (info.deadLetterQueue.empty())
        throw Error(ErrorCode::InvalidArgument, "'" + queue + "' is a dead-letter queue: replay to its source queue");
    const QueueName dlq(info.deadLetterQueue);
    // Read before the transaction opens: the ledger hands out only idle connections.
    const std::int64_t now = m_ledger->nowMs();
    PgTransaction tx(c);
    // The DELETE takes the row: a concurrent replay of the same dead letter waits, then finds
    // it gone and requeues nothing.
    PgParams params = m_ledger->clockParams();
    params.integer(msgId).text(dlq.str());
    const PgResult moved = c.execPrepared(
        "archive dead letter", statementName("requeue", dlq),
        "WITH gone AS (DELETE FROM " + qualified(dlq.queueTable())
            + " WHERE msg_id = $3::bigint RETURNING msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers), "
              "archived AS (INSERT INTO " + qualified(dlq.archiveTable())
            + " (msg_id, read_ct, enqueued_at, last_read_at, archived_at, vt, message, headers) "
              "SELECT g.msg_id, g.read_ct, g.enqueued_at, g.last_read_at, " + at(kNow)
            + ", g.vt, g.message, g.headers FROM gone AS g RETURNING msg_id), "
              "forgotten AS (DELETE FROM queue_errors WHERE queue_name = $4 AND msg_id = $3::bigint) "
              "SELECT g.message::text FROM gone AS g",
        params);
    if (moved.rows() == 0)
        return std::nullopt;
    const std::int64_t sent = sendInTransaction(c, queue, canonicalText(moved.text(0, 0)), headersJson, 0, now);
    tx.commit();
    return sent;
}

} // namespace idempo
