// SPDX-License-Identifier: Apache-2.0
#include "approvecommand.h"

#include <algorithm>

#include "canonicaljson.h"
#include "error.h"
#include "recordjson.h"

namespace idempo {
namespace {

OperationState targetState(ApprovalDecision decision)
{
    switch (decision) {
    case ApprovalDecision::Redispatch:
        return OperationState::Received;
    case ApprovalDecision::Confirm:
        return OperationState::Succeeded;
    case ApprovalDecision::Reject:
        return OperationState::FailedTerminal;
    }
    return OperationState::FailedTerminal;
}

bool allowedFrom(ApprovalDecision decision, OperationState state)
{
    if (state == OperationState::ConfirmationRequired)
        return true;
    return state == OperationState::AwaitingApproval && decision != ApprovalDecision::Confirm;
}

std::string proposalOf(ApprovalDecision decision, const std::string &reference,
                       std::int64_t version)
{
    return payloadFingerprint(
        {{"decision", decisionName(decision)}, {"reference", reference}, {"version", version}});
}

/// The latest revision of an operation's approvals, and those of it still pending with `proposal`.
struct Pending
{
    int lastRevision = 0;
    std::vector<const ApprovalRecord *> approvals;
};

Pending pendingOf(const std::vector<ApprovalRecord> &approvals, const std::string &proposal)
{
    Pending pending;
    for (const ApprovalRecord &a : approvals)
        pending.lastRevision = std::max(pending.lastRevision, a.revision);
    for (const ApprovalRecord &a : approvals)
        if (a.revision == pending.lastRevision && a.status == "pending" && a.proposal == proposal)
            pending.approvals.push_back(&a);
    return pending;
}

/// A rule an approval breaks: validate() reports its message, decide() throws it.
struct Problem
{
    ErrorCode code;
    std::string message;
};

/// The rules of ApproveCommand, in order: every one that `r` by `actor` breaks on `op` (null:
/// there is none) with its history and approvals. A resubmission (its approval id was used
/// before) is judged on the request alone, since the first decision answers it.
std::vector<Problem> approvalProblems(const ApproveCommand::Request &r, const ActorIdentity &actor,
                                      const Operation *op,
                                      const std::vector<OperationEvent> &history,
                                      const std::vector<ApprovalRecord> &approvals,
                                      bool resubmitted)
{
    std::vector<Problem> problems;
    const auto refuse = [&problems](ErrorCode code, std::string message) {
        problems.push_back({code, std::move(message)});
    };
    if (r.reason.empty())
        refuse(ErrorCode::Refused, "a reason is required");
    if (!roleMay(actor.role, Capability::Approve))
        refuse(ErrorCode::Refused, roleRefusal(actor.role, Capability::Approve));
    if (r.decision == ApprovalDecision::Confirm && r.externalReference.empty())
        refuse(ErrorCode::Refused,
               "confirming needs the external reference that proves the effect");
    if (r.decision != ApprovalDecision::Confirm && !r.externalReference.empty())
        refuse(ErrorCode::Refused, "an external reference belongs to a confirm decision only");
    if (!op) {
        refuse(ErrorCode::NotFound, "no operation '" + r.key + "' in namespace '" + r.ns + "'");
        return problems;
    }
    if (resubmitted)
        return problems;
    if (r.version && op->version != *r.version)
        refuse(ErrorCode::IllegalTransition, "the operation changed since it was seen (version " +
                                                 std::to_string(*r.version) + ", now " +
                                                 std::to_string(op->version) + ", " +
                                                 std::string(stateName(op->state)) + ")");
    if (!allowedFrom(r.decision, op->state))
        refuse(ErrorCode::IllegalTransition,
               "an operation in " + std::string(stateName(op->state)) +
                   " cannot take the decision " + std::string(decisionName(r.decision)));
    if (!history.empty() && history.front().actor == actor.name)
        refuse(ErrorCode::Refused, actor.name + " requested this operation and cannot approve it");
    else if (!history.empty() && history.back().actor == actor.name)
        refuse(ErrorCode::Refused,
               actor.name + " last touched this operation and cannot approve it");
    const Pending pending =
        pendingOf(approvals, proposalOf(r.decision, r.externalReference, op->version));
    if (std::any_of(pending.approvals.begin(), pending.approvals.end(),
                    [&actor](const ApprovalRecord *a) { return a->operatorName == actor.name; }))
        refuse(ErrorCode::Refused,
               "four-eyes: " + actor.name +
                   " already approved this proposal; a second, different approver is needed");
    return problems;
}

/// What the sentence names: the step id read as words ("refund payment" from "refund_payment"),
/// or the operation key exactly as stored when there is no step id: a key is an identity, and
/// one altered for reading names an operation that does not exist.
std::string subjectOf(const Operation &op)
{
    if (op.stepId.empty())
        return op.key;
    std::string step = op.stepId;
    std::replace(step.begin(), step.end(), '_', ' ');
    return step;
}

} // namespace

std::string_view decisionName(ApprovalDecision decision)
{
    switch (decision) {
    case ApprovalDecision::Redispatch:
        return "redispatch";
    case ApprovalDecision::Confirm:
        return "confirm";
    case ApprovalDecision::Reject:
        return "reject";
    }
    return "reject";
}

std::optional<ApprovalDecision> parseDecision(std::string_view name)
{
    for (const ApprovalDecision d :
         {ApprovalDecision::Redispatch, ApprovalDecision::Confirm, ApprovalDecision::Reject})
        if (decisionName(d) == name)
            return d;
    return std::nullopt;
}

ApproveCommand::ApproveCommand(LedgerStore &store, ActorIdentity actor, Request request)
    : ApproveCommand(store, std::move(actor), std::move(request), Options{})
{
}

ApproveCommand::ApproveCommand(LedgerStore &store, ActorIdentity actor, Request request,
                               Options options)
    : m_store(store), m_actor(std::move(actor)), m_request(std::move(request)), m_options(options)
{
}

void ApproveCommand::load()
{
    m_operation = m_store.find(m_request.ns, m_request.key);
    m_history =
        m_operation ? m_store.history(m_request.ns, m_request.key) : std::vector<OperationEvent>{};
    m_threshold = m_store.guardSetting(FourEyesSetting);
    m_rates = m_store.guardSetting(ReferenceRatesSetting);
    if (m_request.approvalId.empty() && m_operation) {
        m_request.approvalId =
            "ap-" +
            payloadFingerprint({{"ns", m_request.ns},
                                {"key", m_request.key},
                                {"version", m_request.version.value_or(m_operation->version)},
                                {"decision", decisionName(m_request.decision)},
                                {"reference", m_request.externalReference},
                                {"operator", m_actor.name}})
                .substr(0, 32);
    }
}

bool ApproveCommand::needsTwo(ApprovalDecision decision, const Operation &op) const
{
    if (decision == ApprovalDecision::Reject)
        return false;
    // What the payload says counts too: a declared value smaller than the payload's amount does
    // not take a large payment past the second approver.
    Operation bare = op;
    bare.value.reset();
    for (const auto &value : {operationValue(op), operationValue(bare)})
        if (value && needsFourEyes(*value, m_threshold, m_rates))
            return true;
    // An amount the payload states but that cannot be read is worth an unknown amount.
    return m_threshold && !m_threshold->empty() && payloadAmountUnreadable(op.payload);
}

std::vector<std::string> ApproveCommand::validate()
{
    load();
    const std::vector<ApprovalRecord> approvals =
        m_operation ? m_store.approvals(m_request.ns, m_request.key)
                    : std::vector<ApprovalRecord>{};
    // A resubmission is answered with the first decision, whatever happened since.
    const bool resubmitted =
        std::any_of(approvals.begin(), approvals.end(), [this](const ApprovalRecord &a) {
            return a.approvalId == m_request.approvalId;
        });
    std::vector<std::string> messages;
    for (Problem &p : approvalProblems(m_request, m_actor, m_operation ? &*m_operation : nullptr,
                                       m_history, approvals, resubmitted))
        messages.push_back(std::move(p.message));
    return messages;
}

ActionPreview ApproveCommand::describe()
{
    if (!m_operation)
        load();
    if (!m_operation)
        throw Error(ErrorCode::NotFound,
                    "no operation '" + m_request.key + "' in namespace '" + m_request.ns + "'");
    const Operation &op = *m_operation;
    const auto value = operationValue(op);
    const bool fourEyes = needsTwo(m_request.decision, op);
    std::string what = subjectOf(op);
    const std::string valueText = value ? formatAmount(*value) : std::string();
    if (value)
        what += " of " + valueText.substr(0, valueText.find_last_not_of(' ') + 1);
    // The payload's own amount, when the claim declared another: the approver sees both.
    Operation bare = op;
    bare.value.reset();
    if (const auto said = operationValue(bare); value && said && *said != *value) {
        const std::string saidText = formatAmount(*said);
        what +=
            " (the payload says " + saidText.substr(0, saidText.find_last_not_of(' ') + 1) + ")";
    } else if (payloadAmountUnreadable(op.payload)) {
        what += " (the payload's amount cannot be read)";
    }
    if (!op.target.empty())
        what += " to " + op.target;
    std::string sentence;
    switch (m_request.decision) {
    case ApprovalDecision::Redispatch:
        sentence = "Approve " + what + ": dispatch it again";
        break;
    case ApprovalDecision::Confirm:
        sentence = "Confirm " + what + " as succeeded, evidence " + m_request.externalReference;
        break;
    case ApprovalDecision::Reject:
        sentence = "Reject " + what + ": it will not be executed";
        break;
    }
    if (fourEyes)
        sentence += " (needs a second approver)";
    nlohmann::json history = nlohmann::json::array();
    for (const OperationEvent &e : m_history)
        history.push_back(eventJson(e));
    return {sentence,
            {{"operation", operationJson(op)},
             {"decision", decisionName(m_request.decision)},
             {"from", stateName(op.state)},
             {"to", stateName(targetState(m_request.decision))},
             {"value", value ? nlohmann::json{{"amount_minor", value->minorUnits},
                                              {"currency", value->currency},
                                              {"text", valueText}}
                             : nlohmann::json()},
             {"four_eyes", fourEyes},
             {"reference_rates",
              m_rates && !m_rates->empty() ? nlohmann::json(*m_rates) : nlohmann::json()},
             {"approval_id", m_request.approvalId},
             {"evidence",
              op.receipt.empty() ? nlohmann::json(op.errorDetail) : nlohmann::json(op.receipt)},
             {"history", history}}};
}

ActionPlan ApproveCommand::decide(const ActionState &state) const
{
    const Request &r = m_request;
    ActionPlan plan;
    if (state.byApprovalId) {
        const ApprovalRecord &earlier = *state.byApprovalId;
        if (earlier.ns != r.ns || earlier.key != r.key ||
            earlier.decision != decisionName(r.decision) ||
            earlier.externalReference != r.externalReference)
            throw Error(ErrorCode::Refused,
                        "approval id '" + r.approvalId +
                            "' was already used for another decision or operation");
        plan.answer = earlier;
        return plan;
    }
    const std::vector<Problem> problems =
        approvalProblems(r, m_actor, state.operation, state.history, state.approvals, false);
    if (!problems.empty())
        throw Error(problems.front().code, problems.front().message);
    const Operation &op = *state.operation;
    const std::string proposal = proposalOf(r.decision, r.externalReference, op.version);
    const Pending found = pendingOf(state.approvals, proposal);
    const int lastRevision = found.lastRevision;
    const std::vector<const ApprovalRecord *> &pending = found.approvals;

    const bool fourEyes = needsTwo(r.decision, op);
    const bool applies = !fourEyes || !pending.empty();

    ApprovalRecord approval;
    approval.approvalId = r.approvalId;
    approval.ns = r.ns;
    approval.key = r.key;
    approval.revision = pending.empty() ? lastRevision + 1 : lastRevision;
    approval.decision = decisionName(r.decision);
    approval.reason = r.reason;
    approval.operatorName = m_actor.name;
    approval.role = m_actor.role;
    approval.externalReference = r.externalReference;
    approval.proposal = proposal;
    approval.status = applies ? "applied" : "pending";
    approval.operationVersion = op.version;
    plan.approval = approval;

    if (applies) {
        for (const ApprovalRecord *a : pending)
            plan.seconded.push_back(a->approvalId);
        TransitionRequest t;
        t.ns = r.ns;
        t.key = r.key;
        t.from = op.state;
        t.fencingToken = op.fencingToken;
        t.to = targetState(r.decision);
        t.actor = m_actor.name;
        t.detail = std::string(decisionName(r.decision)) + " by " + m_actor.name + " (approval " +
                   r.approvalId + "): " + r.reason;
        t.retentionMs = m_options.retentionMs;
        switch (r.decision) {
        case ApprovalDecision::Redispatch:
            t.extraAttempts = op.state == OperationState::AwaitingApproval
                                  ? op.maxAttempts - op.attempt
                                  : m_options.extraAttempts;
            break;
        case ApprovalDecision::Confirm:
            t.receipt = canonicalJson({{"external_reference", r.externalReference},
                                       {"confirmed_by", m_actor.name},
                                       {"approval_id", r.approvalId}});
            break;
        case ApprovalDecision::Reject:
            t.errorClass = ErrorClass::PolicyDenied;
            t.errorDetail = "rejected by " + m_actor.name + ": " + r.reason;
            break;
        }
        plan.transitions.push_back(t);
    }

    AuditEntry audit;
    audit.who = m_actor.name;
    audit.role = m_actor.role;
    audit.action = r.decision == ApprovalDecision::Reject ? "reject" : "approve";
    audit.target = r.ns + "/" + r.key;
    audit.reason = r.reason;
    audit.approvalId = r.approvalId;
    audit.detail = canonicalJson({{"decision", decisionName(r.decision)},
                                  {"revision", approval.revision},
                                  {"status", approval.status},
                                  {"external_reference", r.externalReference},
                                  {"four_eyes", fourEyes},
                                  {"seconds", plan.seconded}});
    plan.audit = audit;
    return plan;
}

ApprovalOutcome ApproveCommand::execute()
{
    if (!m_operation)
        load();
    if (m_request.approvalId.empty())
        throw Error(ErrorCode::NotFound,
                    "no operation '" + m_request.key + "' in namespace '" + m_request.ns + "'");
    const ActionResult result =
        m_store.applyAction({m_request.ns, m_request.key, m_request.approvalId},
                            [this](const ActionState &state) { return decide(state); });
    const ApprovalRecord &approval =
        result.plan.answer ? *result.plan.answer : *result.plan.approval;
    ApprovalOutcome outcome;
    outcome.approvalId = approval.approvalId;
    outcome.status = result.plan.answer ? std::string("replayed") : approval.status;
    outcome.decision = approval.decision;
    outcome.revision = approval.revision;
    outcome.operatorName = approval.operatorName;
    outcome.operation = result.operation;
    if (result.audit)
        outcome.auditSeq = result.audit->seq;
    return outcome;
}

} // namespace idempo
