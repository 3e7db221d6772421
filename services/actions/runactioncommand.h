// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "actionoutcome.h"
#include "guardedaction.h"
#include "ledgerstore.h"

namespace idempo {

/// A person's decision about a run's budgets (design.md "Run budgets"): resume a halted run,
/// adding to its limits, or set its limits. The rules, all checked again under the run's lock:
/// - a reason is required; the role must be operator, admin or owner; the run must exist;
/// - resume is for a halted run only, and the budget that halted it must have room afterwards
///   (failed dispatches below their limit, spend or tokens raised when they ran out); resuming
///   restarts the no-progress clock;
/// - adding to a budget that has no limit, or spend in another currency than the run's, is
///   refused; limits are positive whole numbers (no progress in seconds) or none;
/// - idempotent by request id: the same id again answers the first request and writes nothing;
///   the same id for another proposal (what is asked and the run version seen) is refused;
/// - four-eyes: raising the spend cap (resume --add-spend, or a higher cap) by more than the
///   ledger's four_eyes_above threshold (major units, in the run's currency) needs two
///   identities: the first request is pending, the second with the same proposal applies it.
class RunActionCommand final : public GuardedAction
{
public:
    enum class Kind
    {
        Resume,
        Budget,
    };
    /// A limit to set: outer unset = unchanged, inner unset = no limit.
    template <typename T> using Change = std::optional<std::optional<T>>;

    struct Request
    {
        Kind kind = Kind::Resume;
        std::string ns = "default";
        std::string runId;
        std::string reason;
        // Resume: what to add to the limits.
        std::int64_t addFailed = 0;
        std::optional<Amount> addSpend;
        std::int64_t addTokens = 0;
        // Budget: the new limits.
        Change<std::int64_t> failedDispatches;
        Change<std::int64_t> noProgressS;
        Change<Amount> spend;
        Change<std::int64_t> tokens;
        /// Empty: derived from (run, proposal, operator), so a retried command is the same one.
        std::string requestId;
    };

    RunActionCommand(LedgerStore &store, ActorIdentity actor, Request request);

    std::vector<std::string> validate() override;
    /// details: {"run": {…}, "action", "proposal", "after": {…}, "four_eyes", "request_id"}.
    ActionPreview describe() override;
    /// Applies the request under the rules above with its audit record; a resubmission is
    /// answered with the first request ("replayed") and writes nothing.
    RunActionOutcome execute();

    const std::string &requestId() const { return m_request.requestId; }

    /// The action's name in the ledger: "resume" or "budget".
    static std::string_view kindName(Kind kind);

private:
    struct Decision;
    Decision judge(const RunRecord *run, const std::vector<RunActionRecord> &requests,
                   std::int64_t nowMs) const;
    ActionPlan decide(const ActionState &state) const;
    void load();

    LedgerStore &m_store;
    ActorIdentity m_actor;
    Request m_request;
    std::optional<RunRecord> m_run;
    std::optional<std::string> m_threshold;
    std::optional<std::string> m_rates; ///< the reference_rates setting (money.h)
};

} // namespace idempo
