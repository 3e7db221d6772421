// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <QString>

#include "clock.h"
#include "faultplan.h"
#include "ledgerfactory.h"
#include "scenario.h"

namespace idempo {
class SqliteLedgerStore;
}

namespace idempo::sandbox {

/// Where a sandbox run stands, for a progress bar.
struct SandboxProgress
{
    int runs = 0;
    int settled = 0; ///< runs whose last operation settled (or that ended early)
    std::int64_t deliveries = 0;
    std::int64_t virtualMs = 0; ///< virtual time elapsed, milliseconds (wall time in process mode)
    bool realTime =
        false; ///< process mode: `queued` and `kills` instead of `settled` and `deliveries`
    std::int64_t queued = 0; ///< messages in the queue, visible or not (process mode)
    std::int64_t kills = 0;  ///< SIGKILLs sent so far (process mode)
};

/// What to run.
struct SandboxOptions
{
    std::vector<const Scenario *> scenarios; ///< runs are spread over these round-robin
    std::string scenarioLabel;               ///< "all" or the scenario's name, for the report
    int runs = 100;                          ///< 1..MaxRuns
    /// Every run's state is kept in memory (a few KiB each): more is refused.
    static constexpr int MaxRuns = 1'000'000;
    int workers = 2; ///< worker threads (and virtual workers w0..w(N-1)), or processes
    FaultPlan faults;
    bool naive = false; ///< the consumer without an idempotency layer
    std::string ns = "sandbox";
    std::int64_t maxVirtualMs = 6 * 3600'000; ///< gives up (the checker then names what is stuck)
    std::function<void(const SandboxProgress &)> progress;
    /// Asked often, from any of the run's threads (it must be thread-safe): while runs start,
    /// between rounds, and before each run's work in a round. True stops the run early: no run
    /// starts and nothing is delivered any more, what the stopped workers left is settled (leases
    /// lapse, the reconciler settles what it can), the sandbox queue is emptied so that a later
    /// run can start, the report says "cancelled": true and the invariants are checked on what
    /// ran (runs that did not settle are withdrawn).
    std::function<bool()> cancelled;
};

/// Runs scenarios on the embedded ledger with in-process worker threads, a virtual clock and
/// the fault plan, then checks the invariants. Time is a ManualClock the scheduler advances
/// only when every worker is idle and nothing is deliverable, so runs never sleep and the same
/// seed gives the same report whatever the thread timing: each round, every run's due work
/// goes to one thread in a fixed order, and every fault decision depends on the seed alone.
class SandboxRunner final
{
public:
    /// `clock` must be the clock `store` was opened with.
    SandboxRunner(std::shared_ptr<SqliteLedgerStore> store, std::shared_ptr<ManualClock> clock,
                  SandboxOptions options);

    /// Runs to the end and returns the report (see docs/sandbox.md): runs, deliveries,
    /// suppressions by kind, retries, reconciliations, pending approvals and confirmations,
    /// provider effects, fault counts, the invariants, and "timing" (wall-clock figures, the
    /// only part that differs between equal seeds). Holds the sandbox queue meanwhile
    /// (DriverLease: a run killed before it ended is cleared by the next). Throws
    /// Error(InvalidArgument) when the namespace already holds operations or sandbox runs,
    /// Error(LedgerBusy) when a live run holds the sandbox queue, and like DriverLease;
    /// Error(LedgerUnavailable | LedgerBusy | Internal) on storage failure.
    nlohmann::json run();

    /// The report as text.
    static std::string reportText(const nlohmann::json &report);

    /// Opens the embedded ledger `url` names (sqlite:PATH) on `clock` for a sandbox run, with
    /// synchronous=NORMAL unless the URL sets it: a sandbox ledger is rebuilt, not recovered.
    /// Throws Error(InvalidArgument) for any other ledger (the sandbox's threads need the
    /// store's injectable clock), and like openLedger() with `mode`.
    static std::shared_ptr<SqliteLedgerStore>
    openLedger(const QString &url, std::shared_ptr<ManualClock> clock, OpenMode mode);

private:
    std::shared_ptr<SqliteLedgerStore> m_store;
    std::shared_ptr<ManualClock> m_clock;
    SandboxOptions m_options;
};

} // namespace idempo::sandbox
