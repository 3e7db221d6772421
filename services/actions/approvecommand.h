// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "actionoutcome.h"
#include "guardedaction.h"
#include "ledgerstore.h"
#include "money.h"

namespace idempo {

/// What a person decides about an operation automation could not settle.
enum class ApprovalDecision
{
    Redispatch, ///< dispatch again: to received, with a fresh attempt budget
    Confirm,    ///< it happened: to succeeded, the external reference as evidence
                ///< (confirmation_required only)
    Reject,     ///< it must not happen: to failed_terminal (class policy_denied)
};

std::string_view decisionName(ApprovalDecision decision);
std::optional<ApprovalDecision> parseDecision(std::string_view name);

/// The guard setting holding the four-eyes threshold: a decimal amount in major units
/// ("1000.00"), compared with the operation's amount in its own currency.
inline constexpr const char *FourEyesSetting = "four_eyes_above";

/// Approve (re-dispatch or confirm) or reject an operation in `awaiting_approval` or
/// `confirmation_required`. The rules, all checked again under the operation's row lock:
/// - a reason is required; confirm needs an external reference and is only for
///   confirmation_required; the role must be approver, admin or owner;
/// - the operator who requested the operation (the actor of its first event) or last touched
///   it (the actor of its latest event) cannot approve it;
/// - idempotent by approval id: the same id again returns the first decision and writes nothing;
///   the same id with a different decision or operation is refused;
/// - a proposal is (decision, reference, operation version); a proposal that differs from the
///   pending one is a new revision; one applied decision per (operation, revision);
/// - four-eyes: when the operation's value (operationValue(): the value its claim declared, else
///   its payload's amount) is above the ledger's FourEyesSetting, a redispatch
///   or confirm needs two approvals of the same revision by different operators: the first is
///   recorded as pending, the second applies it. Rejecting never needs a second approver.
class ApproveCommand final : public GuardedAction
{
public:
    struct Request
    {
        std::string ns = "default";
        std::string key;
        ApprovalDecision decision = ApprovalDecision::Redispatch;
        std::string reason;
        std::string externalReference;
        /// Chosen once per dialog or command; empty: derived from (operation, version,
        /// decision, reference, operator), so that a retried command is the same submission.
        std::string approvalId;
        /// The operation version the operator saw (a frozen bulk set): when the operation moved
        /// since, the decision is refused (IllegalTransition) instead of applied to what it
        /// became. The derived approval id uses it, so a run again answers with the first decision.
        std::optional<std::int64_t> version;
    };
    struct Options
    {
        int extraAttempts = 3; ///< attempt budget of a re-dispatch from confirmation_required
        std::int64_t retentionMs = 24 * 3600'000; ///< retention of the final record, milliseconds
    };

    ApproveCommand(LedgerStore &store, ActorIdentity actor, Request request, Options options);
    ApproveCommand(LedgerStore &store, ActorIdentity actor, Request request);

    std::vector<std::string> validate() override;
    /// details: {"operation", "decision", "from", "to", "value", "four_eyes", "approval_id",
    /// "history": [events], "evidence"}.
    ActionPreview describe() override;
    /// Applies the decision under the rules above, with its audit record; a resubmission is
    /// answered with the first decision ("replayed") and writes nothing.
    ApprovalOutcome execute();

    /// The approval id this submission uses.
    const std::string &approvalId() const { return m_request.approvalId; }

private:
    ActionPlan decide(const ActionState &state) const;
    /// Whether `decision` on `op` waits for a second approver: by its declared value or by what
    /// its payload says, whichever is above the threshold.
    bool needsTwo(ApprovalDecision decision, const Operation &op) const;
    void load();

    LedgerStore &m_store;
    ActorIdentity m_actor;
    Request m_request;
    Options m_options;
    std::optional<Operation> m_operation;
    std::vector<OperationEvent> m_history;
    std::optional<std::string> m_threshold;
    std::optional<std::string> m_rates; ///< the reference_rates setting (money.h)
};

} // namespace idempo
