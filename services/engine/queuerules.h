// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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

/// Throws Error(InvalidArgument) unless `ms` >= 0; `what` names the argument.
void checkDuration(std::int64_t ms, const char *what);

/// Throws Error(InvalidArgument) unless 1 <= `count` <= MaxQueueBatch; `what` names the argument.
void checkBatch(int count, const char *what);

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
