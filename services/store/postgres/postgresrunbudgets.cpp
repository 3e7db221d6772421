// SPDX-License-Identifier: Apache-2.0
// The shared ledger's run budgets: reads of idempo.runs and the no-progress sweep
// (functions/runs/). Claims check and charge budgets inside idempo.claim.
#include <nlohmann/json.hpp>

#include "postgresledgerrows.h"
#include "postgresledgerstore.h"

namespace idempo {
namespace {

const std::string kFindRunSql = std::string("SELECT ") + kRunColumns +
                                " FROM idempo.runs AS r WHERE r.namespace = $1 AND r.run_id = $2";

const std::string kListRunsSql =
    std::string("SELECT ") + kRunColumns +
    " FROM idempo.runs AS r WHERE (r.namespace, r.run_id) > ($1, $2) AND ($3 = '' OR "
    "r.namespace = $3) AND ($4 = '' OR (r.state = $4 AND $4 = 'halted') OR ($4 <> 'halted' AND "
    "r.state = 'active' AND " +
    kReportedRunState +
    " = $4)) ORDER BY r.namespace, r.run_id "
    "LIMIT $5::integer";

// The pairs travel as one JSON array of [namespace, run id], a bound parameter like any other.
const std::string kFindRunsSql =
    std::string("SELECT ") + kRunColumns +
    " FROM idempo.runs AS r JOIN jsonb_array_elements($1::jsonb) AS k(pair) ON r.namespace = "
    "k.pair->>0 AND r.run_id = k.pair->>1";

constexpr const char *kSweepSql = "SELECT idempo.sweep_runs($1, $2::bigint, $3::bigint)";

} // namespace

std::optional<RunRecord> PostgresLedgerStore::findRun(const std::string &ns,
                                                      const std::string &runId)
{
    requireSchema();
    const PgResult r = connection().execPrepared("read run", "idempo_find_run", kFindRunSql,
                                                 PgParams().text(ns).text(runId));
    if (r.rows() == 0)
        return std::nullopt;
    return readRun(r, 0);
}

std::vector<RunRecord> PostgresLedgerStore::listRuns(const RunFilter &filter)
{
    requireSchema();
    const PgResult r = connection().execPrepared(
        "list runs", "idempo_list_runs", kListRunsSql,
        PgParams()
            .text(filter.afterNs)
            .text(filter.afterRunId)
            .text(filter.ns)
            .text(filter.state ? std::string(runStateName(*filter.state)) : std::string())
            .integer(filter.limit));
    std::vector<RunRecord> runs;
    runs.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row)
        runs.push_back(readRun(r, row));
    return runs;
}

std::vector<RunRecord>
PostgresLedgerStore::findRuns(const std::vector<std::pair<std::string, std::string>> &runs)
{
    if (runs.empty())
        return {};
    requireSchema();
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto &[ns, runId] : runs)
        pairs.push_back({ns, runId});
    const PgResult r = connection().execPrepared("read runs", "idempo_find_runs", kFindRunsSql,
                                                 PgParams().text(pairs.dump()));
    std::vector<RunRecord> found;
    found.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row)
        found.push_back(readRun(r, row));
    return found;
}

std::vector<RunActionRecord> PostgresLedgerStore::runRequests(const std::string &ns,
                                                              const std::string &runId)
{
    requireSchema();
    return selectRunRequests(connection(), ns, runId);
}

std::int64_t PostgresLedgerStore::sweepRuns(const std::string &ns)
{
    requireSchema();
    PgParams params;
    params.text(ns);
    appendClock(params);
    return connection()
        .execPrepared("sweep runs", "idempo_sweep_runs", kSweepSql, params)
        .integer(0, 0);
}

} // namespace idempo
