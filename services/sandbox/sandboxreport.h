// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace idempo {
class LedgerStore;
}

namespace idempo::sandbox {

class SandboxContext;
class SandboxJournal;
struct SandboxOptions;

/// Wall-clock figures of a sandbox run, nanoseconds.
struct SandboxTiming
{
    std::int64_t wallNs = 0;
    std::int64_t engineNs = 0;  ///< inside engine and ledger-store calls, summed over workers
    std::int64_t queueNs = 0;   ///< inside the message queue
    std::int64_t busyNs = 0;    ///< workers (and the scheduler or driver) at work at all
    std::int64_t stalledNs = 0; ///< paused-worker stalls of worker processes, left out of busyNs
};

/// The report of a finished run (docs/sandbox.md "Report"): counters of `ctx`, the ledger's
/// states, the effects and dead letters, the invariants (checked now, against the ledger and
/// `journal`), and "timing". `deduplicated` is how often providers answered a repeated key with
/// the original effect. Throws like InvariantChecker::check().
nlohmann::json sandboxReport(SandboxContext &ctx, SandboxJournal &journal,
                             const SandboxOptions &options, std::int64_t deduplicated,
                             const SandboxTiming &timing);

/// After a cancelled run: withdraws (SandboxJournal::removeRuns) every run of `ns` that the
/// invariant checker finds unsettled, so that the namespace is checked over what ran, and
/// returns how many it withdrew. Throws like InvariantChecker::check().
std::int64_t withdrawUnsettledRuns(LedgerStore &store, SandboxJournal &journal,
                                   const std::string &ns);

/// The report as text.
std::string sandboxReportText(const nlohmann::json &report);

} // namespace idempo::sandbox
