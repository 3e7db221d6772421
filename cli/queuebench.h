// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace idempo {
class LedgerStore;
class PostgresLedgerStore;
} // namespace idempo

namespace idempo::cli {

struct QueueBenchOptions
{
    int messages = 2000; ///< messages (cycles on PostgreSQL) per side and measured round
    int workers = 1;     ///< PostgreSQL: concurrent workers, and pgbench clients, on each side
    std::string pgmqSql; ///< PostgreSQL: pgmq's own SQL (shared/baselines/pgmq.sql)
};

/// What every side sends: the envelope (queueenvelope.h) of a typical step, in canonical form.
inline constexpr std::string_view QueueBenchMessage =
    R"({"idempotency_key":"run-1:provision_account","payload":{"amount":1250,"currency":"EUR"},)"
    R"("produced_at":"2026-11-29T12:00:00Z","run_id":"run-1","source_agent":"planner",)"
    R"("step_id":"provision_account","target_agent":"provisioner"})";

/// `idempo bench queue`, alternating rounds (3) and keeping each side's best.
/// - PostgreSQL: the engine's cycle (send, read one message hidden 30 s, ack that read) through
///   PostgresMessageQueue on `workers` threads, a connection each, and the same cycle with the
///   ack carried by the worker's next read (readAndAck()); beside pgbench with as many clients
///   on pgmq's send + read + delete (options.pgmqSql loaded into a database of its own, dropped
///   after) and on the statements PostgresMessageQueue prepares. Every queue starts and ends a
///   round with the same backlog. The engine's queues (`bench_<ms>_…`) are dropped after when the
///   ledger's role may ("cleanup" says). Throws Error(LedgerUnavailable) (exit 69) when pgbench
///   is not on PATH. Report JSON: {"ledger", "baseline": "pgmq", "workers", "cycles",
///   "pgmq_cycles_per_s", "raw_cycles_per_s", "engine_cycles_per_s",
///   "engine_carried_cycles_per_s", "ratio" (engine / pgmq), "carried_ratio", "raw_ratio"
///   (engine / own statements), "rounds", "cleanup"}.
/// - SQLite: send, read and delete throughput in messages/s, one client, on a fresh temporary
///   ledger file beside the statements SqliteMessageQueue issues (BEGIN IMMEDIATE, registry
///   lookup, the queue statement, COMMIT) run raw through Qt Sql without validation or canonical
///   JSON. Report JSON: {"ledger", "baseline", "messages", "rounds", "send", "read", "delete"
///   (each {"engine_per_s", "raw_per_s", "ratio"})}.
nlohmann::json benchQueue(std::shared_ptr<LedgerStore> ledger, const QueueBenchOptions &options);

/// benchQueue() on a PostgreSQL ledger (queuebenchpostgres.cpp).
nlohmann::json benchQueuePostgres(std::shared_ptr<PostgresLedgerStore> store,
                                  const QueueBenchOptions &options);

/// The report as a few lines of text.
std::string queueBenchReportText(const nlohmann::json &report);

} // namespace idempo::cli
