// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include <QString>

#include "ledgerfactory.h"
#include "reconnectbackoff.h"
#include "sandboxcontext.h"
#include "sandboxrunner.h"

namespace idempo::sandbox {

/// How the process mode runs its workers.
struct ProcessRunOptions
{
    QString ledgerUrl; ///< the ledger every process opens (PostgreSQL, or sqlite:PATH);
                       ///< workers get it as IDEMPO_LEDGER, never in their argv
    OpenMode openMode = OpenMode::OpenExisting;
    QString program; ///< the `idempo` binary whose `worker` command the workers run
    std::int64_t maxWallMs =
        3600'000; ///< gives up after this long (the checker then names what is stuck)
    std::int64_t checkEveryMs = 200; ///< how often the driver reconciles and looks for the end
    SandboxTimings timings = SandboxTimings::realTime();
    ReconnectPolicy reconnect; ///< how long the driver and each worker wait for a lost ledger
};

/// The sandbox's process mode: `options.workers` `idempo worker` processes on a shared ledger,
/// killed with SIGKILL at the crash points they announce and replaced at once.
///
/// The driver creates the sandbox tables and the queue, starts the workers, records the runs and
/// sends each one's first envelope a batch per turn of its event loop, and, every checkEveryMs,
/// runs the Reconciler (against
/// the providers' journals in the ledger) until the queue is empty and the reconciler has had
/// nothing to do twice in a row; then it stops the workers (SIGTERM: each finishes its
/// message and reports) and checks the invariants. A worker's "crash" line gets a
/// `kill(pid, SIGKILL)`; any worker that ends while the run goes on is replaced. When
/// SandboxOptions::cancelled answers true (asked before each batch of runs is started, every
/// checkEveryMs and whenever a worker ends) the driver starts no more runs, stops the workers
/// the same way, waits for every one, lets the reconciler settle what they left (at most a
/// lease and a confirmation delay), empties the queue and reports "cancelled": true with the
/// invariants over the runs it started; so a stop costs the work in hand, not the plan. Each
/// worker gets SIGKILL from the kernel when its driver dies (PR_SET_PDEATHSIG), so none is
/// left consuming the shared queue, nor sending to it after the next run took it over. Time is
/// real: equal seeds open the same windows, but the counts depend on timing (docs/sandbox.md).
///
/// A lost or busy ledger (a PostgreSQL restart, a full disk) does not end the run: the driver
/// says so on stderr, retries its pass with ReconnectBackoff while the workers wait out the
/// outage themselves (SandboxWorker), a worker that could not reach the ledger (exit 69) is
/// replaced once the driver reaches it again, and the run carries on. No statement is repeated
/// blindly: a reconciler pass reads the ledger again before it acts, and a first envelope sent
/// twice because its send broke after the commit is a duplicate delivery, which the claim
/// answers (replayed or in_progress). Once `reconnect.deadlineMs` has passed without the
/// ledger, run() throws Error(LedgerUnavailable) naming it (gaveUpOnLedger()).
class ProcessSandboxRunner final
{
public:
    ProcessSandboxRunner(SandboxOptions options, ProcessRunOptions process);

    /// Runs to the end and returns the report of SandboxRunner::run() without
    /// "virtual_seconds", with "processes" (true), "kills" (SIGKILLs sent), "restarts"
    /// (replacement workers started), "unexpected_exits" (workers that ended on their own) and
    /// "timed_out" and "cancelled". Counters are the workers' own, summed: a killed worker's last
    /// report is its crash announcement, so nothing it counted is lost. Holds the sandbox queue
    /// meanwhile (DriverLease). Throws Error(InvalidArgument) when the namespace already holds
    /// operations or sandbox runs, Error(LedgerBusy) when a live run holds the sandbox queue, and
    /// like DriverLease; Error(Internal) when a worker cannot be started; Error(LedgerUnavailable)
    /// when the ledger stayed away past the reconnect deadline; Error(Internal) on any other
    /// failure.
    nlohmann::json run();

private:
    SandboxOptions m_options;
    ProcessRunOptions m_process;
};

} // namespace idempo::sandbox
