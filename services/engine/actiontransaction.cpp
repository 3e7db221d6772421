// SPDX-License-Identifier: Apache-2.0
#include "actiontransaction.h"

#include "auditchain.h"
#include "error.h"
#include "ledgerrules.h"

namespace idempo {

ActionResult runAction(ActionTransaction &tx, const ActionTarget &target,
                       const ActionDecider &decide)
{
    ActionState state;
    std::optional<Operation> current;
    if (!target.key.empty()) {
        ActionTransaction::Locked locked = tx.lockOperation(target.ns, target.key);
        state.nowMs = locked.nowMs;
        current = std::move(locked.operation);
    } else {
        state.nowMs = tx.nowMs();
    }
    if (current) {
        state.operation = &*current;
        state.approvals = tx.approvals(target.ns, target.key);
        state.history = tx.history(target.ns, target.key);
    }
    std::optional<RunRecord> run;
    if (!target.runId.empty()) {
        run = tx.lockRun(target.ns, target.runId);
        state.run = run ? &*run : nullptr;
        state.runRequests = tx.runRequests(target.ns, target.runId);
        if (!target.approvalId.empty())
            state.byRequestId = tx.runRequest(target.approvalId);
    } else if (!target.approvalId.empty()) {
        state.byApprovalId = tx.approval(target.approvalId);
    }

    ActionResult result;
    result.plan = decide(state);
    const ActionPlan &plan = result.plan;
    result.operation = current;
    result.run = run;
    if (plan.answer || plan.runAnswer)
        return result;

    std::vector<Operation> steps;
    for (const TransitionRequest &t : plan.transitions) {
        const Operation *before = steps.empty() ? (current ? &*current : nullptr) : &steps.back();
        checkTransition(before, t);
        Operation after = *before;
        applyTransition(after, t, state.nowMs, [&tx] { return tx.nextFencingToken(); });
        steps.push_back(std::move(after));
        result.operation = steps.back();
    }
    if (plan.approval)
        tx.insertApproval(*plan.approval, state.nowMs);
    for (const std::string &id : plan.seconded)
        tx.secondApproval(id);
    if (plan.setting)
        tx.storeSetting(plan.setting->first, plan.setting->second);
    if (plan.audit) {
        AuditEntry entry = *plan.audit;
        completeAuditEntry(entry, current ? &*current : nullptr,
                           result.operation ? &*result.operation : nullptr);
        result.audit = tx.appendAudit(entry, state.nowMs);
    }
    if (plan.runRequest) {
        RunActionRecord request = *plan.runRequest;
        request.auditSeq = result.audit ? result.audit->seq : 0;
        tx.insertRunRequest(request, state.nowMs);
    }
    for (const std::string &id : plan.secondedRequests)
        tx.secondRunRequest(id);
    if (plan.run) {
        if (!run)
            throw Error(ErrorCode::Internal, "a run action's plan names no locked run");
        tx.writeRun(*run, *plan.run);
        result.run = plan.run;
    }
    for (std::size_t i = 0; i < steps.size(); ++i)
        tx.writeTransition(i == 0 ? *current : steps[i - 1], steps[i], plan.transitions[i]);
    return result;
}

} // namespace idempo
