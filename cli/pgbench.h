// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <QString>

#include "bench.h"

namespace idempo::cli {

/// `idempo bench claim` on a PostgreSQL ledger: claim → complete → duplicate-claim cycles
/// through `engine` on `options.workers` threads (a connection each), beside pgbench running the
/// same calls (PostgresLedgerStore::claimSql() and transitionSql()) with as many clients
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

/// `statement` with each placeholder $n replaced by args[n - 1] (a pgbench variable such as
/// ":id", or an SQL literal), for a pgbench script that runs a store's own statements; trailing
/// blanks cut, no ';' added. Every '$' of `statement` must start a placeholder (the stores'
/// statements quote none). Throws Error(Internal) for a placeholder without a value.
std::string pgbenchStatement(std::string_view statement, const std::vector<std::string> &args);

} // namespace idempo::cli
