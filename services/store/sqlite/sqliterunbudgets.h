// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actionrecords.h"
#include "operation.h"
#include "runbudget.h"
#include "sqlitesupport.h"

namespace idempo {

/// The budget step of a dispatching claim, inside its BEGIN IMMEDIATE transaction (the write
/// lock is held, so no other claim passes the same last unit): creates the run on its first
/// claim with the ledger's default budgets, checks checkRunBudget() and either charges the
/// claim's cost and tokens (a new operation is progress) or halts the run and answers why.
/// Nothing happens for a claim without a run id.
std::optional<BudgetExhaustion> chargeRun(SqliteConnection &db, const ClaimRequest &request,
                                          bool redispatch, std::int64_t nowMs);

/// How a run is read: as the row stores it (to write it back), with its last progress read from
/// its operations too (what the no-progress budget judges), or as a caller is shown it (judged,
/// and an active run whose operations are all final reads `finished`). Only the first two may
/// be written back.
enum class RunRead
{
    Stored,
    Judged,
    Reported,
};

std::optional<RunRecord> selectRun(SqliteConnection &db, const std::string &ns,
                                   const std::string &runId, RunRead read);
/// A page of runs, as reported.
std::vector<RunRecord> selectRuns(SqliteConnection &db, const RunFilter &filter);

/// Halts the active runs of `ns` (empty = all) with an open operation and no progress for their
/// no-progress budget at `nowMs`, in the caller's write transaction. Returns how many.
std::int64_t haltStalledRuns(SqliteConnection &db, const std::string &ns, std::int64_t nowMs);

/// Requests of the guarded run actions (table run_actions): the run's, oldest first; the one
/// under `requestId`; a new one; a pending one marked seconded.
std::vector<RunActionRecord> selectRunRequests(SqliteConnection &db, const std::string &ns,
                                               const std::string &runId);
std::optional<RunActionRecord> selectRunRequest(SqliteConnection &db, const std::string &requestId);
void insertRunRequest(SqliteConnection &db, const RunActionRecord &request, std::int64_t nowMs);
void secondRunRequest(SqliteConnection &db, const std::string &requestId);

/// Writes `run` where its version is still `expectedVersion`; Error(Internal) otherwise.
void updateRun(SqliteConnection &db, const RunRecord &run, std::int64_t expectedVersion);

} // namespace idempo
