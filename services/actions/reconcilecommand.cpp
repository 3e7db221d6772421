// SPDX-License-Identifier: Apache-2.0
#include "reconcilecommand.h"

#include "error.h"
#include "recordjson.h"

namespace idempo {

ReconcileCommand::ReconcileCommand(LedgerStore &store, ProviderLookup &lookup, ActorIdentity actor,
                                   Request request)
    : ReconcileCommand(store, lookup, std::move(actor), std::move(request), Options{})
{
}

ReconcileCommand::ReconcileCommand(LedgerStore &store, ProviderLookup &lookup, ActorIdentity actor,
                                   Request request, Options options)
    : m_store(store), m_lookup(lookup), m_actor(std::move(actor)), m_request(std::move(request)),
      m_options(options)
{
}

std::string ReconcileCommand::notReconcilable(const Operation &op)
{
    return "an operation in " + std::string(stateName(op.state)) +
           " has nothing to reconcile (only unknown_outcome, confirmation_required and protected "
           "writes whose lease lapsed)";
}

bool ReconcileCommand::eligible(const Operation &op, std::int64_t nowMs)
{
    switch (op.state) {
    case OperationState::UnknownOutcome:
    case OperationState::ConfirmationRequired:
        return true;
    case OperationState::Dispatching:
        return op.kind == ToolKind::ProtectedWrite && op.leaseExpiresAtMs &&
               *op.leaseExpiresAtMs <= nowMs;
    default:
        return false;
    }
}

std::vector<OperationState> ReconcileCommand::moves(const Operation &op,
                                                    const ProviderEvidence &evidence)
{
    using S = OperationState;
    using E = ProviderEvidence::Status;
    if (evidence.status == E::Found)
        return {S::Succeeded};
    switch (op.state) {
    case S::UnknownOutcome:
        return {evidence.status == E::NotFound ? S::Received : S::ConfirmationRequired};
    case S::Dispatching:
        if (evidence.status == E::NotFound)
            return {S::UnknownOutcome, S::Received};
        return {S::ConfirmationRequired};
    default:
        return {};
    }
}

void ReconcileCommand::resolve()
{
    m_operations.clear();
    const std::int64_t now = m_store.nowMs();
    if (!m_request.key.empty()) {
        if (auto op = m_store.find(m_request.ns, m_request.key))
            m_operations.push_back(std::move(*op));
    } else {
        const std::vector<OperationState> states =
            m_request.state ? std::vector<OperationState>{*m_request.state}
                            : std::vector<OperationState>{OperationState::UnknownOutcome,
                                                          OperationState::Dispatching,
                                                          OperationState::ConfirmationRequired};
        for (const OperationState state : states) {
            ListFilter filter;
            filter.ns = m_request.ns;
            filter.state = state;
            filter.keyPrefix = m_request.keyPrefix;
            filter.runId = m_request.runId;
            filter.limit = 1000;
            for (;;) {
                const std::vector<Operation> page = m_store.list(filter);
                for (const Operation &op : page)
                    if (eligible(op, now) &&
                        static_cast<int>(m_operations.size()) < m_request.limit)
                        m_operations.push_back(op);
                if (static_cast<int>(page.size()) < filter.limit)
                    break;
                filter.afterId = page.back().id;
            }
        }
    }
    m_evidence.assign(m_operations.size(), std::nullopt);
    m_resolved = true;
}

std::vector<std::string> ReconcileCommand::validate()
{
    resolve();
    std::vector<std::string> problems;
    if (m_request.reason.empty())
        problems.push_back("a reason is required");
    if (!roleMay(m_actor.role, Capability::Reconcile))
        problems.push_back(roleRefusal(m_actor.role, Capability::Reconcile));
    if (!m_request.key.empty()) {
        if (m_operations.empty())
            problems.push_back("no operation '" + m_request.key + "' in namespace '" +
                               m_request.ns + "'");
        else if (!eligible(m_operations.front(), m_store.nowMs()))
            problems.push_back(notReconcilable(m_operations.front()));
    } else if (m_operations.empty()) {
        problems.push_back("no operation in namespace '" + m_request.ns +
                           "' matches and needs reconciling");
    }
    return problems;
}

ActionPreview ReconcileCommand::describe()
{
    if (!m_resolved)
        resolve();
    nlohmann::json ops = nlohmann::json::array();
    const bool single = !m_request.key.empty();
    if (single && m_operations.empty())
        throw Error(ErrorCode::NotFound,
                    "no operation '" + m_request.key + "' in namespace '" + m_request.ns + "'");
    for (std::size_t i = 0; i < m_operations.size(); ++i) {
        const Operation &op = m_operations[i];
        nlohmann::json row = {{"key", op.key}, {"state", stateName(op.state)}};
        if (single) {
            m_evidence[i] = m_lookup.lookup(op);
            row["evidence"] = evidenceJson(*m_evidence[i]);
            const auto to = moves(op, *m_evidence[i]);
            row["to"] = to.empty() ? nlohmann::json() : nlohmann::json(stateName(to.back()));
        }
        ops.push_back(std::move(row));
    }
    std::string sentence;
    if (single) {
        const auto to = moves(m_operations.front(), *m_evidence.front());
        sentence = "Reconcile " + m_request.key + ": the provider says " +
                   std::string(evidenceStatusName(m_evidence.front()->status)) +
                   (to.empty() ? std::string("; it stays ") +
                                     std::string(stateName(m_operations.front().state)) +
                                     " for an approver, with the evidence recorded"
                               : std::string("; it moves to ") + std::string(stateName(to.back())));
    } else {
        sentence = "Reconcile " + std::to_string(m_operations.size()) + " operation" +
                   (m_operations.size() == 1 ? "" : "s") +
                   ": look each up at its provider and move it by the answer";
    }
    return {sentence, {{"count", m_operations.size()}, {"operations", ops}}};
}

ReconcileOutcome ReconcileCommand::execute()
{
    if (!m_resolved)
        resolve();
    if (m_request.reason.empty())
        throw Error(ErrorCode::Refused, "a reason is required");
    if (!roleMay(m_actor.role, Capability::Reconcile))
        throw Error(ErrorCode::Refused, roleRefusal(m_actor.role, Capability::Reconcile));
    ReconcileOutcome outcome;
    for (std::size_t i = 0; i < m_operations.size(); ++i) {
        const Operation seen = m_operations[i];
        const ProviderEvidence evidence = m_evidence[i] ? *m_evidence[i] : m_lookup.lookup(seen);
        const std::string target = seen.ns + "/" + seen.key;
        try {
            const ActionResult result =
                m_store.applyAction({seen.ns, seen.key, {}}, [&](const ActionState &state) {
                    if (!state.operation || state.operation->version != seen.version)
                        throw Error(ErrorCode::IllegalTransition,
                                    "the operation changed after it was looked up");
                    if (!eligible(*state.operation, state.nowMs))
                        throw Error(ErrorCode::IllegalTransition,
                                    notReconcilable(*state.operation));
                    ActionPlan plan;
                    for (const OperationState to : moves(*state.operation, evidence)) {
                        TransitionRequest t;
                        t.ns = seen.ns;
                        t.key = seen.key;
                        t.from = plan.transitions.empty() ? state.operation->state
                                                          : plan.transitions.back().to;
                        t.fencingToken = state.operation->fencingToken;
                        t.to = to;
                        t.actor = m_actor.name;
                        t.detail = "reconciled by " + m_actor.name + ": provider " +
                                   std::string(evidenceStatusName(evidence.status)) +
                                   (evidence.reference.empty() ? "" : " " + evidence.reference) +
                                   "; " + m_request.reason;
                        t.retentionMs = m_options.retentionMs;
                        if (to == OperationState::Succeeded)
                            t.receipt = canonicalText({{"external_reference", evidence.reference},
                                                       {"provider", evidence.provider},
                                                       {"reconciled_by", m_actor.name}});
                        if (to == OperationState::UnknownOutcome) {
                            t.errorClass = ErrorClass::UnknownOutcome;
                            t.errorDetail = "lease of " + state.operation->leaseOwner +
                                            " lapsed during a protected write";
                        }
                        plan.transitions.push_back(t);
                    }
                    AuditEntry audit;
                    audit.who = m_actor.name;
                    audit.role = m_actor.role;
                    audit.action = "reconcile";
                    audit.target = target;
                    audit.reason = m_request.reason;
                    audit.detail = canonicalText({{"evidence", evidenceJson(evidence)}});
                    plan.audit = audit;
                    return plan;
                });
            outcome.reconciled.push_back(
                {seen.key, seen.state, result.operation->state, evidence, result.audit->seq});
        } catch (const Error &e) {
            if (e.code() != ErrorCode::IllegalTransition && e.code() != ErrorCode::StaleLease)
                throw;
            outcome.skipped.push_back({seen.key, e.what()});
        }
    }
    return outcome;
}

} // namespace idempo
