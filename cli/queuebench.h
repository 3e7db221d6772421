// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace idempo {
class LedgerStore;
}

namespace idempo::cli {

struct QueueBenchOptions
{
    int messages = 2000; ///< messages sent, read and deleted per measured round
};

/// `idempo bench queue`: send, read (quantity 1, visibility timeout 30 s) and delete throughput
/// in messages/s through the MessageQueue of `ledger`'s kind, one client, beside the same SQL
/// statements run raw in the same run, alternating rounds and keeping each side's best.
/// - PostgreSQL: on `ledger`'s database, in queues `bench_<ms>_…` dropped afterwards when the
///   ledger's role may (a worker role may not; "cleanup" says which). The raw side is
///   `pgbench -n -M prepared -c 1 -t N` running the statements PostgresMessageQueue prepares.
///   Throws Error(LedgerUnavailable) (exit 69) when pgbench is not on PATH.
/// - SQLite: on a fresh temporary ledger file; the raw side runs the statements
///   SqliteMessageQueue issues (BEGIN IMMEDIATE, registry lookup, the queue statement, COMMIT)
///   through Qt Sql without validation or canonical JSON.
/// Report JSON: {"ledger", "baseline", "messages", "rounds", "send", "read", "delete" (each
/// {"engine_per_s", "raw_per_s", "ratio"}), "cleanup" (PostgreSQL)}.
nlohmann::json benchQueue(std::shared_ptr<LedgerStore> ledger, const QueueBenchOptions &options);

/// The report as a few lines of text.
std::string queueBenchReportText(const nlohmann::json &report);

} // namespace idempo::cli
