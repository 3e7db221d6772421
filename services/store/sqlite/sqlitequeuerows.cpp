// SPDX-License-Identifier: Apache-2.0
#include "sqlitequeuerows.h"

#include <QVariant>

#include "error.h"
#include "queuename.h"
#include "queuerules.h"

namespace idempo {
namespace {

QVariant text(const std::string &s)
{
    return QString::fromStdString(s);
}
QVariant integer(std::int64_t v)
{
    return static_cast<qlonglong>(v);
}

/// How long an ack's receipt answers a retried ack: a day, as on PostgreSQL.
constexpr std::int64_t kAckReceiptMs = 86'400'000;

} // namespace

const QString kQueueMessageColumns =
    QStringLiteral("msg_id, read_ct, enqueued_at, last_read_at, vt, message, headers");

QString queueIdentifier(const std::string &table)
{
    return QLatin1Char('"') + QString::fromStdString(table) + QLatin1Char('"');
}

QueueMessage readQueueMessage(const QSqlQuery &q)
{
    QueueMessage m;
    m.msgId = q.value(0).toLongLong();
    m.readCount = q.value(1).toInt();
    m.enqueuedAtMs = q.value(2).toLongLong();
    if (!q.value(3).isNull())
        m.lastReadAtMs = q.value(3).toLongLong();
    m.vtMs = q.value(4).toLongLong();
    m.message = q.value(5).toString().toStdString();
    m.headers = q.value(6).toString().toStdString();
    return m;
}

std::vector<QueueMessage> readQueueMessages(QSqlQuery &q)
{
    std::vector<QueueMessage> messages;
    while (q.next())
        messages.push_back(readQueueMessage(q));
    return messages;
}

void forgetMessageError(SqliteConnection &db, const QueueName &name, std::int64_t msgId)
{
    run(db, QStringLiteral("DELETE FROM queue_errors WHERE queue_name = ? AND msg_id = ?"),
        {text(name.str()), integer(msgId)}, "forget message error");
}

std::optional<int> readCountIn(SqliteConnection &db, const std::string &table, std::int64_t msgId)
{
    Statement q = run(db,
                      QStringLiteral("SELECT read_ct FROM ") + queueIdentifier(table) +
                          QStringLiteral(" WHERE msg_id = ?"),
                      {integer(msgId)}, "read message's read_ct");
    if (!q->next())
        return std::nullopt;
    return q->value(0).toInt();
}

void refuseRead(const QueueName &name, const ReadReceipt &receipt, int current, const char *action)
{
    if (readStanding(receipt.readCount, current) == ReadStanding::ReadAgain)
        throw readAgain(name.str(), receipt, current, action);
    throw notYetRead(name.str(), receipt, current);
}

void acknowledgeRead(SqliteConnection &db, const QueueName &name, const ReadReceipt &receipt,
                     std::int64_t nowMs)
{
    checkReceipt(receipt);
    Statement gone = run(db,
                         QStringLiteral("DELETE FROM ") + queueIdentifier(name.queueTable()) +
                             QStringLiteral(" WHERE msg_id = ? AND read_ct = ?"),
                         {integer(receipt.msgId), receipt.readCount}, "acknowledge message");
    if (gone->numRowsAffected() == 1) {
        run(db,
            QStringLiteral("INSERT INTO queue_acks (queue_name, msg_id, read_ct, acked_at) "
                           "VALUES (?,?,?,?) ON CONFLICT (queue_name, msg_id) DO UPDATE SET "
                           "read_ct = excluded.read_ct, acked_at = excluded.acked_at"),
            {text(name.str()), integer(receipt.msgId), receipt.readCount, integer(nowMs)},
            "keep ack receipt");
        run(db, QStringLiteral("DELETE FROM queue_acks WHERE acked_at < ?"),
            {integer(nowMs - kAckReceiptMs)}, "forget old ack receipts");
        forgetMessageError(db, name, receipt.msgId);
        return;
    }
    if (const std::optional<int> current = readCountIn(db, name.queueTable(), receipt.msgId))
        refuseRead(name, receipt, *current, "ack");
    Statement acked = run(
        db, QStringLiteral("SELECT read_ct FROM queue_acks WHERE queue_name = ? AND msg_id = ?"),
        {text(name.str()), integer(receipt.msgId)}, "read ack receipt");
    if (!acked->next())
        throw noSuchMessage(name.str(), receipt.msgId);
    const int ackedRead = acked->value(0).toInt();
    if (ackedRead != receipt.readCount)
        refuseRead(name, receipt, ackedRead, "ack");
}

bool archiveMessage(SqliteConnection &db, const QueueName &name, std::int64_t msgId,
                    std::int64_t nowMs)
{
    Statement q =
        run(db,
            QStringLiteral("INSERT INTO ") + queueIdentifier(name.archiveTable()) +
                QStringLiteral(
                    " (msg_id, read_ct, enqueued_at, last_read_at, archived_at, vt, message, "
                    "headers) SELECT msg_id, read_ct, enqueued_at, last_read_at, ?, vt, "
                    "message, headers FROM ") +
                queueIdentifier(name.queueTable()) + QStringLiteral(" WHERE msg_id = ?"),
            {integer(nowMs), integer(msgId)}, "archive message");
    if (q->numRowsAffected() != 1)
        return false;
    run(db,
        QStringLiteral("DELETE FROM ") + queueIdentifier(name.queueTable()) +
            QStringLiteral(" WHERE msg_id = ?"),
        {integer(msgId)}, "archive message");
    forgetMessageError(db, name, msgId);
    return true;
}

QueueMessage nackMessage(SqliteConnection &db, const QueueName &name, std::int64_t msgId,
                         std::optional<int> readCount, ErrorClass errorClass,
                         const std::string &detail, std::int64_t retryDelayMs, std::int64_t nowMs)
{
    QueueMessage m;
    {
        Statement q = run(db,
                          QStringLiteral("UPDATE ") + queueIdentifier(name.queueTable()) +
                              QStringLiteral(" SET vt = ? WHERE msg_id = ? AND (? IS NULL OR "
                                             "read_ct = ?) RETURNING ") +
                              kQueueMessageColumns,
                          {integer(nowMs + retryDelayMs), integer(msgId),
                           readCount ? QVariant(*readCount) : QVariant(),
                           readCount ? QVariant(*readCount) : QVariant()},
                          "nack message");
        if (!q->next()) {
            q->finish();
            if (const std::optional<int> current = readCountIn(db, name.queueTable(), msgId);
                current && readCount)
                refuseRead(name, {msgId, *readCount}, *current, "nack");
            throw noSuchMessage(name.str(), msgId);
        }
        m = readQueueMessage(*q);
    }
    run(db,
        QStringLiteral(
            "INSERT INTO queue_errors (queue_name, msg_id, error_class, error_detail, recorded_at) "
            "VALUES (?,?,?,?,?) ON CONFLICT (queue_name, msg_id) DO UPDATE SET "
            "error_class = excluded.error_class, error_detail = excluded.error_detail, "
            "recorded_at = excluded.recorded_at"),
        {text(name.str()), integer(msgId), text(std::string(errorClassName(errorClass))),
         text(detail), integer(nowMs)},
        "record message error");
    return m;
}

} // namespace idempo
