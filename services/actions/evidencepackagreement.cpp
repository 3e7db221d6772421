// SPDX-License-Identifier: Apache-2.0
#include "evidencepackagreement.h"

#include <map>
#include <set>
#include <utility>

#include "evidencepackrows.h"

namespace idempo::packrows {
namespace {

/// The approval id a history event names when a decision made it ("reject by bob (approval
/// ap-1): …", the same text on both stores), empty otherwise.
std::string decisionApprovalId(const std::string &detail)
{
    const auto at = detail.find(" (approval ");
    const auto end = at == std::string::npos ? at : detail.find("): ", at);
    if (end == std::string::npos)
        return {};
    const std::string verb = detail.substr(0, detail.find(' '));
    if (verb != "redispatch" && verb != "confirm" && verb != "reject")
        return {};
    return detail.substr(at + 11, end - at - 11);
}

/// Whether the operation record `op` agrees with its newest audit record that left a state
/// and version (mine, in seq order): the state at that version, and at the same version the
/// rest of the snapshot (operationSnapshot()). Empty when it does; else what disagrees.
std::string operationProblem(const nlohmann::json &op, const std::vector<AuditRecord> &mine)
{
    const std::string opState = textOf(op, "state", "the operation");
    const std::int64_t opVersion = integerOf(op, "operation_version", "the operation");
    for (auto r = mine.rbegin(); r != mine.rend(); ++r) {
        const nlohmann::json after = nlohmann::json::parse(r->entry.afterState, nullptr, false);
        if (!after.is_object() || !after.contains("state") || !after.contains("version") ||
            !after["version"].is_number_integer())
            continue;
        const std::string state =
            after["state"].is_string() ? after["state"].get<std::string>() : std::string();
        const std::int64_t version = after["version"].get<std::int64_t>();
        const std::string recorded = "audit record " + std::to_string(r->seq) + " left it in " +
                                     state + " at version " + std::to_string(version);
        if (opVersion < version || (opVersion == version && opState != state))
            return "the operation record (" + opState + ", version " + std::to_string(opVersion) +
                   ") contradicts its newest audit record: " + recorded;
        // At that version the snapshot holds more of the record (operationSnapshot()).
        if (opVersion == version) {
            const nlohmann::json receipt =
                after.value("receipt", std::string()).empty()
                    ? nlohmann::json()
                    : nlohmann::json::parse(after.value("receipt", std::string()), nullptr, false);
            const std::pair<const char *, nlohmann::json> held[] = {
                {"fencing_token", after.value("fencing_token", nlohmann::json())},
                {"attempt", after.value("attempt", nlohmann::json())},
                {"max_attempts", after.value("max_attempts", nlohmann::json())},
                {"error_class", after.value("error_class", nlohmann::json())},
                {"receipt", receipt}};
            for (const auto &[name, value] : held)
                if (!op.contains(name) || op[name] != value)
                    return "the operation record's \"" + std::string(name) +
                           "\" contradicts its newest audit record: " + recorded + " with " + name +
                           " " + value.dump();
        }
        break;
    }
    return {};
}

/// Whether every decision and reconciliation the pack's history shows has an audit record in
/// `mine`. Empty when it does; else what is missing. `shown` gets the approval ids the
/// history's events name (an empty one for an event without).
std::string historyProblem(const nlohmann::json &pack, const std::vector<AuditRecord> &mine,
                           std::set<std::string> &shown)
{
    std::set<std::string> audited;
    bool reconcileAudited = false;
    for (const AuditRecord &r : mine) {
        if (!r.entry.approvalId.empty())
            audited.insert(r.entry.approvalId);
        reconcileAudited = reconcileAudited || r.entry.action == "reconcile";
    }
    if (!pack.contains("history") || !pack["history"].is_array())
        return {};
    for (const nlohmann::json &e : pack["history"]) {
        const std::string detail = e.is_object() && e.contains("detail") && e["detail"].is_string()
                                       ? e["detail"].get<std::string>()
                                       : std::string();
        const std::string id = decisionApprovalId(detail);
        shown.insert(id);
        if (!id.empty() && !audited.count(id))
            return "the history shows a decision (approval " + id +
                   ") but the pack holds no audit record of it";
        if (detail.starts_with("reconciled by ") && !reconcileAudited)
            return "the history shows a reconciliation but the pack holds no audit record of one";
    }
    return {};
}

bool isDecision(const AuditRecord &r)
{
    return !r.entry.approvalId.empty() &&
           (r.entry.action == "approve" || r.entry.action == "reject");
}

/// An applied decision moved the operation: the history shows it (`shown` holds the approval
/// ids of its events). Empty when every one in `mine` does; else the first that does not.
std::string appliedDecisionProblem(const std::vector<AuditRecord> &mine,
                                   const std::set<std::string> &shown)
{
    for (const AuditRecord &r : mine) {
        if (!isDecision(r))
            continue;
        const nlohmann::json detail = nlohmann::json::parse(r.entry.detail, nullptr, false);
        if (detail.is_object() && detail.value("status", std::string()) == "applied" &&
            !shown.count(r.entry.approvalId))
            return "audit record " + std::to_string(r.seq) + " applied approval " +
                   r.entry.approvalId + ", but the pack's history shows no event of it";
    }
    return {};
}

/// Whether approval `a` (of id `id`) says what its decision's audit record `r` says: decision,
/// operator, role, reason and status (a pending decision may have been seconded since). Empty
/// when it does; else what the record says.
std::string approvalDisagreement(const nlohmann::json &a, const std::string &id,
                                 const AuditRecord &r)
{
    const nlohmann::json detail = nlohmann::json::parse(r.entry.detail, nullptr, false);
    const auto said = [&detail](const char *name) {
        return detail.is_object() && detail.contains(name) && detail[name].is_string()
                   ? detail[name].get<std::string>()
                   : std::string();
    };
    const std::string status = textOf(a, "status", "approval " + id);
    const bool statusAgrees =
        status == said("status") || (said("status") == "pending" && status == "seconded");
    if (textOf(a, "decision", "approval " + id) != said("decision") ||
        textOf(a, "operator", "approval " + id) != r.entry.who ||
        textOf(a, "role", "approval " + id) != r.entry.role ||
        textOf(a, "reason", "approval " + id) != r.entry.reason || !statusAgrees)
        return "approval " + id + " does not say what audit record " + std::to_string(r.seq) +
               " says (" + said("decision") + " by " + r.entry.who + " (" + r.entry.role + "), " +
               said("status") + ")";
    return {};
}

/// Each approval says what its hashed record says, and no decision record lacks its approval.
/// Empty when so; else what disagrees.
std::string approvalsProblem(const nlohmann::json &pack, const std::vector<AuditRecord> &mine)
{
    std::map<std::string, const AuditRecord *> decisions;
    for (const AuditRecord &r : mine)
        if (isDecision(r))
            decisions[r.entry.approvalId] = &r;
    std::set<std::string> listed;
    if (pack.contains("approvals") && pack["approvals"].is_array())
        for (const nlohmann::json &a : pack["approvals"]) {
            const std::string id = textOf(a, "approval_id", "an approval");
            const auto found = decisions.find(id);
            if (found == decisions.end())
                return "the approvals show " + id + " but the pack holds no audit record of it";
            if (std::string problem = approvalDisagreement(a, id, *found->second); !problem.empty())
                return problem;
            if (!listed.insert(id).second)
                return "approval " + id + " is listed twice";
        }
    for (const auto &[id, r] : decisions)
        if (!listed.count(id))
            return "audit record " + std::to_string(r->seq) + " records approval " + id +
                   ", which the pack's approvals leave out";
    return {};
}

} // namespace

std::string agreementProblem(const nlohmann::json &pack, const std::vector<AuditRecord> &mine)
{
    if (!pack.contains("operation") || !pack["operation"].is_object())
        return "the pack has no \"operation\" record";
    if (std::string problem = operationProblem(pack["operation"], mine); !problem.empty())
        return problem;
    std::set<std::string> shown;
    if (std::string problem = historyProblem(pack, mine, shown); !problem.empty())
        return problem;
    if (std::string problem = appliedDecisionProblem(mine, shown); !problem.empty())
        return problem;
    return approvalsProblem(pack, mine);
}

} // namespace idempo::packrows
