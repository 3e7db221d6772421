// SPDX-License-Identifier: Apache-2.0
#include "sqliteoutbox.h"

#include <QVariant>

#include "error.h"
#include "queuename.h"
#include "queuerules.h"

namespace idempo {

std::int64_t insertMessage(SqliteConnection &db, const QueueName &name,
                           const OutgoingMessage &message, std::int64_t delayMs, std::int64_t nowMs)
{
    const QVariant queue = QString::fromStdString(name.str());
    {
        Statement q = run(db, QStringLiteral("SELECT 1 FROM queue_registry WHERE queue_name = ?"),
                          {queue}, "read queue registry");
        if (!q->next())
            throw Error(ErrorCode::NotFound, "no queue '" + name.str() + "'");
    }
    // The table name comes from a QueueName, whose characters ([a-z0-9_]) need no escaping.
    Statement q = run(
        db,
        QStringLiteral("INSERT INTO \"") + QString::fromStdString(name.queueTable()) +
            QStringLiteral("\" (enqueued_at, vt, message, headers) VALUES (?,?,?,?)"),
        {static_cast<qlonglong>(nowMs), static_cast<qlonglong>(nowMs + delayMs),
         QString::fromStdString(message.message),
         message.headers.empty() ? QVariant() : QVariant(QString::fromStdString(message.headers))},
        "send message");
    return q->lastInsertId().toLongLong();
}

std::int64_t sendInTransaction(SqliteConnection &db, const std::string &queue,
                               const std::string &messageJson, const std::string &headersJson,
                               std::int64_t delayMs, std::int64_t nowMs)
{
    const QueueName name(queue);
    checkDuration(delayMs, "delay");
    return insertMessage(db, name, prepareMessage(messageJson, headersJson), delayMs, nowMs);
}

} // namespace idempo
