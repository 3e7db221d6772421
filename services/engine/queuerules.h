// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "clock.h"
#include "error.h"
#include "messagequeue.h"

namespace idempo {

// The store-independent queue rules both MessageQueue implementations follow, so that their
// checks, error messages and dead-letter headers are the same.

/// Largest message body, and largest headers text, in bytes.
inline constexpr std::size_t MaxQueueMessageBytes = 1024 * 1024;
/// Largest quantity of read() and limit of browse() and deadLetters().
inline constexpr int MaxQueueBatch = 10'000;

/// A message as a store writes it: both fields RFC 8785 canonical JSON; headers empty for none.
struct OutgoingMessage
{
    std::string message;
    std::string headers;
};

/// Validates and canonicalises a message body and its headers (empty = none; otherwise a
/// JSON object). Throws Error(InvalidJson) for text parseStrictJson refuses or headers that
/// are not an object, Error(PayloadTooLarge) beyond MaxQueueMessageBytes.
OutgoingMessage prepareMessage(const std::string &messageJson, const std::string &headersJson);

/// Throws Error(InvalidArgument) unless 0 <= `ms` <= MaxDurationMs; `what` names the argument.
void checkDuration(std::int64_t ms, const char *what);

/// Throws Error(InvalidArgument) unless 1 <= `count` <= MaxQueueBatch; `what` names the argument.
void checkBatch(int count, const char *what);

/// How a delivery (ReadReceipt) stands against the message's read_ct now, for ack(), nack()
/// and archive(): `currentReadCount` unset when the queue no longer holds the message.
enum class ReadStanding
{
    Latest,     ///< the receipt's read is the message's latest: act on it
    ReadAgain,  ///< read since: another consumer has it (or had it)
    NotYetRead, ///< the message has not been read that often
};

/// Compares a receipt's read with the message's current read_ct.
ReadStanding readStanding(int receiptReadCount, int currentReadCount);

/// Throws Error(InvalidArgument) unless `receipt` names a delivery (msg_id and read_ct >= 1).
void checkReceipt(const ReadReceipt &receipt);

/// The refusal of `action` ("ack", "nack", "archive") of read `receipt` of a message of `queue`
/// that was read again since (read `currentReadCount`): Error(StaleLease), in the words the
/// PostgreSQL functions raise (ID006).
Error readAgain(const std::string &queue, const ReadReceipt &receipt, int currentReadCount,
                const char *action);

/// Error(InvalidArgument) for a receipt of a read the message has not had (read_ct
/// `currentReadCount` below the receipt's).
Error notYetRead(const std::string &queue, const ReadReceipt &receipt, int currentReadCount);

/// Error(NotFound): `queue` holds no message `msgId`.
Error noSuchMessage(const std::string &queue, std::int64_t msgId);

/// The headers of a message's dead-letter copy: `headers` (a canonical JSON object, or empty)
/// with member "dlq" set to {"source_queue", "source_msg_id", "read_ct", "last_error_class",
/// "last_error_detail", "dead_lettered_at"} (times in milliseconds since the epoch; the error
/// fields null when the message was never nacked). An older "dlq" member is replaced: a
/// message dead-lettered twice names its latest source. Returns canonical JSON.
std::string deadLetterHeaders(const std::string &headers, const DeadLetterProvenance &provenance);

/// A dead-letter queue's message with the provenance read back from its "dlq" header; the
/// provenance stays empty when the header is missing or malformed (a message sent to the
/// dead-letter queue directly).
DeadLetter deadLetterFrom(QueueMessage message);

} // namespace idempo
