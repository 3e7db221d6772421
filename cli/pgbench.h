// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include <QString>

#include "bench.h"

namespace idempo::cli {

/// `idempo bench claim` on a PostgreSQL ledger: claim → complete → duplicate-claim cycles
/// through `engine` on `options.workers` threads (a connection each), beside pgbench running the
/// same statements (PostgresLedgerStore::pgbenchCycle()) with as many clients
/// (`pgbench -n -M prepared -c W -j W -t N`), alternating rounds and keeping each side's best.
/// Both rates leave out connection set-up. The rounds write to namespaces `bench-<ms>-…` of
/// the engine's ledger and delete them afterwards when the ledger's role may (a worker role may
/// not; "cleanup" says which). Report JSON as benchClaim(), plus "baseline" and "cleanup".
/// Throws Error(LedgerUnavailable) (exit 69) when pgbench is not on PATH.
nlohmann::json benchClaimPostgres(Engine &engine, const BenchOptions &options);

/// Runs `program` (pgbench) as `pgbench -n -M prepared -c W -j W -t N -f scriptPath [-D
/// NAME=VALUE]… conninfo` with W = `workers` and N = `perWorker`; returns its rate without initial
/// connection time, in transactions/s. Throws Error(LedgerUnavailable) when pgbench cannot start,
/// and Error(Internal) with pgbench's own error line when it fails.
double measurePgbench(const QString &program, const QString &conninfo, const QString &scriptPath,
                      const std::vector<std::string> &defines, int workers, int perWorker);

} // namespace idempo::cli
