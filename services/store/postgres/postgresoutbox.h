// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "pgconnection.h"

#include <cstdint>
#include <string>

namespace idempo {

class QueueName;
struct OutgoingMessage;

// The one write that puts a message on a queue of a PostgreSQL ledger (pgmq's `q_<name>`):
// PostgresMessageQueue's sends, dead letters and replays, and the ledger's outbox
// (PostgresLedgerStore::transitionAndSend()) all make it, so the ledger needs no queue code.
// Prepared once per connection and queue, on the caller's connection and inside whatever
// transaction it holds; the caller's rollback undoes it with the rest of it.

/// ServerClockSql's $1 and $2 reading exactly `nowMs`.
PgParams pinnedClock(std::int64_t nowMs);

/// Inserts `message`, already validated (prepareMessage()), into queue `name` at the clock
/// `clock` reads (PostgresLedgerStore::clockParams(), or pinnedClock()), visible `delayMs` later.
/// Returns its msg_id.
std::int64_t insertMessage(PgConnection &c, PgParams clock, const QueueName &name,
                           const OutgoingMessage &message, std::int64_t delayMs);

/// MessageQueue::send() of `messageJson` with `headersJson` to `queue` stamped at `nowMs`:
/// validates and throws like it (Error(NotFound) for a queue the ledger does not have), then
/// insertMessage().
std::int64_t sendInTransaction(PgConnection &c, const std::string &queue,
                               const std::string &messageJson, const std::string &headersJson,
                               std::int64_t delayMs, std::int64_t nowMs);

} // namespace idempo
