// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <QSqlQuery>
#include <QString>

#include "messagequeue.h"
#include "sqlitesupport.h"

namespace idempo {

class QueueName;

// The rows of the embedded ledger's queues as SqliteMessageQueue reads and writes them, and the
// writes that name one delivery (ReadReceipt): ack, archive and nack of a read. Each write runs
// inside a write transaction the caller holds open on `db`, at the caller's `nowMs`.

/// A message's columns in readQueueMessage() order.
extern const QString kQueueMessageColumns;

/// A queue table's name as SQL text. Only ever given names derived from a QueueName, whose
/// characters ([a-z0-9_]) need no escaping; the quotes keep them from reading as keywords.
QString queueIdentifier(const std::string &table);

/// The message in the current row of `q` (columns kQueueMessageColumns).
QueueMessage readQueueMessage(const QSqlQuery &q);
std::vector<QueueMessage> readQueueMessages(QSqlQuery &q);

/// Forgets the last error nack() kept for message `msgId` of `name`.
void forgetMessageError(SqliteConnection &db, const QueueName &name, std::int64_t msgId);

/// The read_ct of message `msgId` in `table` (a queue's or an archive's); unset when it holds
/// none.
std::optional<int> readCountIn(SqliteConnection &db, const std::string &table, std::int64_t msgId);

/// Throws the refusal of `action` ("ack", "nack", "archive") of `receipt`, the message being at
/// read `current` (not the receipt's): Error(StaleLease) or Error(InvalidArgument) (queuerules.h).
[[noreturn]] void refuseRead(const QueueName &name, const ReadReceipt &receipt, int current,
                             const char *action);

/// MessageQueue::ack(): deletes the message of `receipt` when that read is its latest and keeps
/// the receipt a day; returns quietly for a receipt acknowledged before. Throws as ack() does.
void acknowledgeRead(SqliteConnection &db, const QueueName &name, const ReadReceipt &receipt,
                     std::int64_t nowMs);

/// Moves message `msgId` of `name` to its archive; false when the queue holds none.
bool archiveMessage(SqliteConnection &db, const QueueName &name, std::int64_t msgId,
                    std::int64_t nowMs);

/// MessageQueue::nack(); with `readCount`, only of that read (refused as the receipt's nack is).
QueueMessage nackMessage(SqliteConnection &db, const QueueName &name, std::int64_t msgId,
                         std::optional<int> readCount, ErrorClass errorClass,
                         const std::string &detail, std::int64_t retryDelayMs, std::int64_t nowMs);

} // namespace idempo
