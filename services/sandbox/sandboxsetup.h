// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driverlease.h"
#include "sandboxjournal.h"

namespace idempo {
class LedgerStore;
}

namespace idempo::sandbox {

class SandboxContext;
struct RunState;
struct SandboxOptions;

// What both sandbox runners do alike: the thread mode (SandboxRunner) and the process mode
// (ProcessSandboxRunner) check their options, prepare the ledger, plan and start the runs and
// finish the report the same way; only how the workers run differs.

/// Throws Error(InvalidArgument) unless `options` names a scenario, 1..MaxRuns runs and at least
/// one worker.
void requireRunnable(const SandboxOptions &options);

/// The sandbox journal beside `store`, its tables created. Throws Error(InvalidArgument) when
/// namespace `ns` already holds operations or sandbox runs, suggesting a fresh `ledgerOption`
/// ("ledger", "--ledger") or another --namespace; what the ledger throws.
std::unique_ptr<SandboxJournal> openFreshJournal(LedgerStore &store, const std::string &ns,
                                                 const std::string &ledgerOption);

/// Creates the sandbox queue of `ctx` and takes it for this run (DriverLease on `ledger`, the
/// store's describe()); a dead run's queue taken over is said on the log. Throws like
/// DriverLease.
DriverLease holdSandboxQueue(SandboxContext &ctx, SandboxJournal &journal,
                             const std::string &ledger);

/// Adds the runs `options` asks for to `ctx`, its scenarios taken in turn, each run id
/// `<prefix>-<seed>-<NNNNNN>`; returns them as the journal records them, in the same order.
std::vector<RunRecord> addPlannedRuns(SandboxContext &ctx, const SandboxOptions &options);

/// The envelope that starts `run`: its first step, sent by the planner on worker 0's clock.
std::string firstEnvelope(SandboxContext &ctx, const RunState &run);

/// Adds how a run ended to its report: "cancelled", "runs_started" and "runs_withdrawn".
void addEndFigures(nlohmann::json &report, bool cancelled, std::size_t started,
                   std::int64_t withdrawn);

/// Nanoseconds of the steady clock since `start`.
std::int64_t nanosSince(std::chrono::steady_clock::time_point start);

} // namespace idempo::sandbox
