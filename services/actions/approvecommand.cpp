// SPDX-License-Identifier: Apache-2.0
#include "approvecommand.h"

#include "canonicaljson.h"
#include "error.h"
#include "recordjson.h"

#include <algorithm>

namespace idempo {
namespace {

OperationState targetState(ApprovalDecision decision)
{
    switch (decision) {
    case ApprovalDecision::Redispatch: return OperationState::Received;
    case ApprovalDecision::Confirm: return OperationState::Succeeded;
    case ApprovalDecision::Reject: return OperationState::FailedTerminal;
    }
    return OperationState::FailedTerminal;
}

bool allowedFrom(ApprovalDecision decision, OperationState state)
{
    if (state == OperationState::ConfirmationRequired)
        return true;
    return state == OperationState::AwaitingApproval && decision != ApprovalDecision::Confirm;
}

std::string proposalOf(ApprovalDecision decision, const std::string &reference, std::int64_t version)
{
    return payloadFingerprint({{"decision", decisionName(decision)}, {"reference", reference}, {"version", version}});
}

/// "refund" from a step id such as "refund_payment" or "issue-refund": the payload's business verb.
std::string subjectOf(const Operation &op)
{
    std::string step = op.stepId.empty() ? op.key : op.stepId;
    std::replace(step.begin(), step.end(), '_', ' ');
    return step;
}

} // namespace

std::string_view decisionName(ApprovalDecision decision)
{
    switch (decision) {
    case ApprovalDecision::Redispatch: return "redispatch";
    case ApprovalDecision::Confirm: return "confirm";
    case ApprovalDecision::Reject: return "reject";
    }
    return "reject";
}

std::optional<ApprovalDecision> parseDecision(std::string_view name)
{
    for (const ApprovalDecision d : {ApprovalDecision::Redispatch, ApprovalDecision::Confirm, ApprovalDecision::Reject})
        if (decisionName(d) == name)
            return d;
    return std::nullopt;
}

ApproveCommand::ApproveCommand(LedgerStore &store, ActorIdentity actor, Request request)
    : ApproveCommand(store, std::move(actor), std::move(request), Options{})
{
}

ApproveCommand::ApproveCommand(LedgerStore &store, ActorIdentity actor, Request request, Options options)
    : m_store(store), m_actor(std::move(actor)), m_request(std::move(request)), m_options(options)
{
}

void ApproveCommand::load()
{
    m_operation = m_store.find(m_request.ns, m_request.key);
    m_history = m_operation ? m_store.history(m_request.ns, m_request.key) : std::vector<OperationEvent>{};
    m_threshold = m_store.guardSetting(FourEyesSetting);
    if (m_request.approvalId.empty() && m_operation) {
        m_request.approvalId = "ap-"
                               + payloadFingerprint({{"ns", m_request.ns},
                                                     {"key", m_request.key},
                                                     {"version", m_operation->version},
                                                     {"decision", decisionName(m_request.decision)},
                                                     {"reference", m_request.externalReference},
                                                     {"operator", m_actor.name}})
                                     .substr(0, 32);
    }
}

std::optional<std::int64_t> ApproveCommand::thresholdMinor(const Operation &op) const
{
    if (!m_threshold)
        return std::nullopt;
    const auto value = operationValue(op);
    return parseMajorAmount(*m_threshold, value ? value->currency : std::string());
}

std::vector<std::string> ApproveCommand::validate()
{
    load();
    std::vector<std::string> problems;
    if (m_request.reason.empty())
        problems.push_back("a reason is required");
    if (!roleMay(m_actor.role, Capability::Approve))
        problems.push_back(roleRefusal(m_actor.role, Capability::Approve));
    if (m_request.decision == ApprovalDecision::Confirm && m_request.externalReference.empty())
        problems.push_back("confirming needs the external reference that proves the effect");
    if (m_request.decision != ApprovalDecision::Confirm && !m_request.externalReference.empty())
        problems.push_back("an external reference belongs to a confirm decision only");
    if (!m_operation) {
        problems.push_back("no operation '" + m_request.key + "' in namespace '" + m_request.ns + "'");
        return problems;
    }
    const std::vector<ApprovalRecord> approvals = m_store.approvals(m_request.ns, m_request.key);
    // A resubmission is answered with the first decision, whatever happened since.
    for (const ApprovalRecord &a : approvals)
        if (a.approvalId == m_request.approvalId)
            return problems;
    if (!allowedFrom(m_request.decision, m_operation->state))
        problems.push_back("an operation in " + std::string(stateName(m_operation->state)) + " cannot take the decision "
                           + std::string(decisionName(m_request.decision)));
    if (!m_history.empty() && m_history.front().actor == m_actor.name)
        problems.push_back(m_actor.name + " requested this operation and cannot approve it");
    else if (!m_history.empty() && m_history.back().actor == m_actor.name)
        problems.push_back(m_actor.name + " last touched this operation and cannot approve it");
    const std::string proposal = proposalOf(m_request.decision, m_request.externalReference, m_operation->version);
    for (const ApprovalRecord &a : approvals)
        if (a.status == "pending" && a.proposal == proposal && a.operatorName == m_actor.name)
            problems.push_back("four-eyes: " + m_actor.name + " already approved this proposal; a second, different "
                               "approver is needed");
    return problems;
}

ActionPreview ApproveCommand::describe()
{
    if (!m_operation)
        load();
    if (!m_operation)
        throw Error(ErrorCode::NotFound, "no operation '" + m_request.key + "' in namespace '" + m_request.ns + "'");
    const Operation &op = *m_operation;
    const auto value = operationValue(op);
    const auto threshold = thresholdMinor(op);
    const bool fourEyes = m_request.decision != ApprovalDecision::Reject && value && threshold && value->minorUnits > *threshold;
    std::string what = subjectOf(op);
    const std::string valueText = value ? formatAmount(*value) : std::string();
    if (value)
        what += " of " + valueText.substr(0, valueText.find_last_not_of(' ') + 1);
    if (!op.target.empty())
        what += " to " + op.target;
    std::string sentence;
    switch (m_request.decision) {
    case ApprovalDecision::Redispatch: sentence = "Approve " + what + ": dispatch it again"; break;
    case ApprovalDecision::Confirm:
        sentence = "Confirm " + what + " as succeeded, evidence " + m_request.externalReference;
        break;
    case ApprovalDecision::Reject: sentence = "Reject " + what + ": it will not be executed"; break;
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
             {"value", value ? nlohmann::json{{"amount_minor", value->minorUnits}, {"currency", value->currency},
                                              {"text", valueText}}
                             : nlohmann::json()},
             {"four_eyes", fourEyes},
             {"approval_id", m_request.approvalId},
             {"evidence", op.receipt.empty() ? nlohmann::json(op.errorDetail) : nlohmann::json(op.receipt)},
             {"history", history}}};
}

ActionPlan ApproveCommand::decide(const ActionState &state) const
{
    const Request &r = m_request;
    ActionPlan plan;
    if (state.byApprovalId) {
        const ApprovalRecord &earlier = *state.byApprovalId;
        if (earlier.ns != r.ns || earlier.key != r.key || earlier.decision != decisionName(r.decision)
            || earlier.externalReference != r.externalReference)
            throw Error(ErrorCode::Refused, "approval id '" + r.approvalId
                                                + "' was already used for another decision or operation");
        plan.answer = earlier;
        return plan;
    }
    if (r.reason.empty())
        throw Error(ErrorCode::Refused, "a reason is required");
    if (!roleMay(m_actor.role, Capability::Approve))
        throw Error(ErrorCode::Refused, roleRefusal(m_actor.role, Capability::Approve));
    if (!state.operation)
        throw Error(ErrorCode::NotFound, "no operation '" + r.key + "' in namespace '" + r.ns + "'");
    const Operation &op = *state.operation;
    if (!allowedFrom(r.decision, op.state))
        throw Error(ErrorCode::IllegalTransition, "an operation in " + std::string(stateName(op.state))
                                                      + " cannot take the decision "
                                                      + std::string(decisionName(r.decision)));
    if (r.decision == ApprovalDecision::Confirm && r.externalReference.empty())
        throw Error(ErrorCode::Refused, "confirming needs the external reference that proves the effect");
    if (!state.history.empty() && (state.history.front().actor == m_actor.name || state.history.back().actor == m_actor.name))
        throw Error(ErrorCode::Refused, m_actor.name + " requested or last touched this operation and cannot approve it");

    const std::string proposal = proposalOf(r.decision, r.externalReference, op.version);
    int lastRevision = 0;
    for (const ApprovalRecord &a : state.approvals)
        lastRevision = std::max(lastRevision, a.revision);
    std::vector<const ApprovalRecord *> pending;
    for (const ApprovalRecord &a : state.approvals)
        if (a.revision == lastRevision && a.status == "pending" && a.proposal == proposal)
            pending.push_back(&a);
    for (const ApprovalRecord *a : pending)
        if (a->operatorName == m_actor.name)
            throw Error(ErrorCode::Refused, "four-eyes: " + m_actor.name
                                                + " already approved this proposal; a second, different approver is needed");

    const auto value = operationValue(op);
    const auto threshold = thresholdMinor(op);
    const bool needsTwo = r.decision != ApprovalDecision::Reject && value && threshold && value->minorUnits > *threshold;
    const bool applies = !needsTwo || !pending.empty();

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
        t.detail = std::string(decisionName(r.decision)) + " by " + m_actor.name + " (approval " + r.approvalId
                   + "): " + r.reason;
        t.retentionMs = m_options.retentionMs;
        switch (r.decision) {
        case ApprovalDecision::Redispatch:
            t.extraAttempts = op.state == OperationState::AwaitingApproval ? op.maxAttempts - op.attempt
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
                                  {"four_eyes", needsTwo},
                                  {"seconds", plan.seconded}});
    plan.audit = audit;
    return plan;
}

nlohmann::json ApproveCommand::execute()
{
    if (!m_operation)
        load();
    if (m_request.approvalId.empty())
        throw Error(ErrorCode::NotFound, "no operation '" + m_request.key + "' in namespace '" + m_request.ns + "'");
    const ActionResult result = m_store.applyAction({m_request.ns, m_request.key, m_request.approvalId},
                                                    [this](const ActionState &state) { return decide(state); });
    const ApprovalRecord &approval = result.plan.answer ? *result.plan.answer : *result.plan.approval;
    nlohmann::json out = {{"approval_id", approval.approvalId},
                          {"status", result.plan.answer ? std::string("replayed") : approval.status},
                          {"decision", approval.decision},
                          {"revision", approval.revision},
                          {"operator", approval.operatorName},
                          {"operation", result.operation ? operationJson(*result.operation) : nlohmann::json()},
                          {"audit_seq", result.audit ? nlohmann::json(result.audit->seq) : nlohmann::json()}};
    return out;
}

} // namespace idempo
