// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace idempo {
class LedgerStore;
}

namespace idempo::sandbox {

class SandboxJournal;

/// One broken promise, naming the business operation (operation key) it concerns.
struct Violation
{
    std::string operation;
    std::string message;
};

/// One invariant and what the checker found.
struct InvariantResult
{
    std::string name; ///< stable snake_case name
    std::string description;
    std::int64_t checked = 0; ///< how many items (operations, effects, runs) it looked at
    std::vector<Violation> violations;
    bool holds() const { return violations.empty(); }
};

/// Reads a namespace of a ledger (embedded or PostgreSQL) and the providers' effect journals kept
/// beside it (SandboxJournal) and verifies what the sandbox promises:
/// - at_most_one_effect: no business operation has more than one provider effect;
/// - receipt_matches_effect: every succeeded protected write has a receipt naming an effect
///   the provider performed for that operation, by the reference any resolution records
///   (`effect_id` of a worker or the reconciler, `external_reference` of `idempo reconcile` or
///   of an approver's confirm);
/// - effect_recorded: every effect of an engine run is either recorded (succeeded with a
///   receipt naming that very effect) or handed to a person (confirmation_required); an effect
///   of a succeeded operation whose id differs from the receipt's is a violation;
/// - no_request_lost: every accepted run's steps exist and settled (succeeded, failed_terminal,
///   confirmation_required, awaiting_approval) or wait in a halted run for a person; nothing is
///   left in received, failed_retryable, unknown_outcome or dispatching (a lapsed lease is named
///   as such);
/// - no_approval_twice: no operation left awaiting_approval more than once;
/// - no_stale_token_write: no history event carries a fencing token older than one before it;
/// - decision_reused: a write's input carries the decision the ledger recorded for the step
///   before it (the model is never asked again after the write boundary);
/// - no_dispatch_after_halt: no operation of a halted run was dispatched after its halt;
/// - spend_within_cap: no run spent more than its spend cap (runbudget.h).
/// Runs of the naive consumer have no ledger records: only at_most_one_effect applies to them.
class InvariantChecker final
{
public:
    /// `journal` must be the one in the database of `store`.
    InvariantChecker(LedgerStore &store, SandboxJournal &journal);

    /// Throws Error(Internal) or Error(LedgerUnavailable) on storage failure.
    std::vector<InvariantResult> check(const std::string &ns);

    static bool allHold(const std::vector<InvariantResult> &results);

    /// {"ok", "invariants": [{"name", "ok", "checked", "violations", "examples": [{"operation",
    /// "message"}]}]}; at most `maxExamples` examples per invariant.
    static nlohmann::json toJson(const std::vector<InvariantResult> &results,
                                 std::size_t maxExamples = 20);

    /// A line per invariant, and one per violation (at most `maxExamples` each).
    static std::string toText(const std::vector<InvariantResult> &results,
                              std::size_t maxExamples = 20);

private:
    LedgerStore &m_store;
    SandboxJournal &m_journal;
};

} // namespace idempo::sandbox
