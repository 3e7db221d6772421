// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

/// What the console shows of a finished run's report, as values: read() takes the report
/// SandboxRunner::run() or ProcessSandboxRunner::run() returned (sandboxReport() with the
/// runner's own fields and addEndFigures()), so that a view reads fields, never its JSON keys.
struct SandboxSummary
{
    /// One invariant as InvariantChecker::toJson() lists it.
    struct Invariant
    {
        /// A violating operation and what is wrong with it.
        struct Example
        {
            std::string operation;
            std::string message;
        };

        std::string name;
        bool ok = true;
        std::int64_t checked = 0; ///< items it looked at (0: nothing of it ran)
        std::int64_t violations = 0;
        std::vector<Example> examples; ///< the first of the violations
    };

    bool ok = true; ///< every invariant holds
    std::vector<Invariant> invariants;
    int runs = 0;
    std::uint64_t seed = 0;
    std::int64_t deliveries = 0;
    /// Deliveries the engine or a provider answered without a second effect, by how
    /// ("replayed", "in_progress", …, "provider_dedupe"), in the order of their names.
    std::map<std::string, std::int64_t> duplicatesSuppressed;
    std::map<std::string, std::int64_t> providerEffects; ///< effects by provider
    std::int64_t duplicateEffects = 0;
    std::map<std::string, std::int64_t> faultsInjected; ///< by fault, the plan's faults only
    std::int64_t retries = 0;
    std::int64_t crashes = 0;
    std::int64_t fencedWrites = 0;
    std::int64_t approvalsPending = 0;
    std::int64_t confirmationsPending = 0;
    std::optional<std::int64_t> virtualSeconds; ///< the thread mode's; none in process mode
    double wallSeconds = 0.0;                   ///< "timing"."wall_s"
    bool cancelled = false;                     ///< stopped before every run settled

    /// The summary of `report`. Throws Error(InvalidArgument) naming the first member it lacks
    /// or that is not of its type (a count is a whole number from 0).
    static SandboxSummary read(const nlohmann::json &report);
};

} // namespace idempo::sandbox
