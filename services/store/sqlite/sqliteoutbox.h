// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

#include "sqlitesupport.h"

namespace idempo {

class QueueName;
struct OutgoingMessage;

// The one write that puts a message on a queue of the embedded ledger: SqliteMessageQueue's
// sends, dead letters and replays, and the ledger's outbox (SqliteLedgerStore::
// transitionAndSend()) all make it, so the ledger needs no queue and the queue no ledger code.
// Both run inside a write transaction the caller holds open on `db` (a connection to a ledger
// file), at the caller's `nowMs`; the caller's rollback undoes them with the rest of it.

/// Inserts `message`, already validated (prepareMessage()), into queue `name`, readable from
/// `nowMs` + `delayMs`. Returns its msg_id. Throws Error(NotFound) when the ledger has no such
/// queue.
std::int64_t insertMessage(SqliteConnection &db, const QueueName &name,
                           const OutgoingMessage &message, std::int64_t delayMs,
                           std::int64_t nowMs);

/// MessageQueue::send() of `messageJson` with `headersJson` to `queue`: validates and throws like
/// it, then insertMessage().
std::int64_t sendInTransaction(SqliteConnection &db, const std::string &queue,
                               const std::string &messageJson, const std::string &headersJson,
                               std::int64_t delayMs, std::int64_t nowMs);

} // namespace idempo
