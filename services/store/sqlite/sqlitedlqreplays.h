// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

#include "actionrecords.h"
#include "sqlitesupport.h"

// The embedded ledger's open DLQ replays (table dlq_replays, schema 12): the rule PostgreSQL's
// idempo.dlq_replay_begin, dlq_replay_finish and queue_requeue_dead_letter keep (schema 26). A
// dead letter is in at most one live open replay of its queue; a replay whose runner requeued
// nothing for its idle limit is abandoned, taken over by the next begin and its runner fenced
// off by the seq of its `dlq_replay` record (begun_seq). Each call runs inside the write
// transaction the caller holds open on `db`, at the caller's `nowMs`; a throw writes nothing.
namespace idempo::sqlitedlqreplays {

/// Before `entry` is appended: for a `dlq_replay` record, throws Error(InProgress) naming the
/// live open replay of the queue that holds one of its ids or has its replay id, and adds the
/// abandoned ones it takes over to the detail ("took_over"); for a `dlq_replay_finished`
/// record, throws unless its run ("begun_seq") still holds the replay. Other records pass.
void checkAudit(SqliteConnection &db, AuditEntry &entry, std::int64_t nowMs);

/// After `record` was appended: opens the replay it begins (closing the ones it took over), or
/// closes the replay it finishes. Other records change nothing.
void recordAudit(SqliteConnection &db, const AuditRecord &record, std::int64_t nowMs);

/// Before a dead letter of `queue` is requeued with `headersJson`: under a replay's header
/// ("replay": {"replay_id", "begun_seq"}), its run must still hold the replay; the requeue
/// stamps it as alive.
void checkRequeue(SqliteConnection &db, const std::string &queue, const std::string &headersJson,
                  std::int64_t nowMs);

} // namespace idempo::sqlitedlqreplays
