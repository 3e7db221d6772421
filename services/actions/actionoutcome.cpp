// SPDX-License-Identifier: Apache-2.0
#include "actionoutcome.h"

#include "recordjson.h"

namespace idempo {

nlohmann::json ApprovalOutcome::toJson() const
{
    return {{"approval_id", approvalId},
            {"status", status},
            {"decision", decision},
            {"revision", revision},
            {"operator", operatorName},
            {"operation", operation ? operationJson(*operation) : nlohmann::json()},
            {"audit_seq", auditSeq ? nlohmann::json(*auditSeq) : nlohmann::json()}};
}

std::string ApprovalOutcome::text() const
{
    const std::string key = operation ? operation->key : std::string();
    const std::string state = operation ? std::string(stateName(operation->state)) : std::string();
    if (status == "pending")
        return "Recorded, pending a second approver: " + key + " stays " + state + " (approval " +
               approvalId + ").";
    if (status == "replayed")
        return "Already decided: approval " + approvalId +
               " was submitted before; nothing applied again (" + key + " is " + state + ").";
    return "Applied: " + key + " is now " + state + " (approval " + approvalId + ", audit record " +
           std::to_string(auditSeq.value_or(0)) + ").";
}

nlohmann::json ReconcileOutcome::toJson() const
{
    nlohmann::json done = nlohmann::json::array();
    for (const Reconciled &r : reconciled)
        done.push_back({{"key", r.key},
                        {"from", stateName(r.from)},
                        {"to", stateName(r.to)},
                        {"evidence", evidenceJson(r.evidence)},
                        {"audit_seq", r.auditSeq}});
    nlohmann::json left = nlohmann::json::array();
    for (const Skipped &s : skipped)
        left.push_back({{"key", s.key}, {"why", s.why}});
    return {{"reconciled", done}, {"skipped", left}};
}

std::string ReconcileOutcome::text() const
{
    std::string parts;
    const auto add = [&parts](const std::string &part) {
        parts += (parts.empty() ? "" : "; ") + part;
    };
    for (const Reconciled &r : reconciled)
        add(r.key + ": " + std::string(stateName(r.from)) + " → " + std::string(stateName(r.to)));
    for (const Skipped &s : skipped)
        add(s.key + " skipped: " + s.why);
    return "Reconciled. " + parts;
}

nlohmann::json ReplayOutcome::toJson() const
{
    return {{"replay_id", replayId},
            {"requeued", requeued},
            {"taken_by_other_replay", takenByOtherReplay},
            {"not_replayed", notReplayed},
            {"cancelled", cancelled},
            {"audit_seq", startAuditSeq == 0
                              ? nlohmann::json::array()
                              : nlohmann::json::array({startAuditSeq, endAuditSeq})}};
}

std::string ReplayOutcome::text() const
{
    return std::string(cancelled ? "Stopped: " : "Replayed: ") + std::to_string(requeued) +
           " requeued, " + std::to_string(notReplayed) + " not replayed, " +
           std::to_string(takenByOtherReplay) + " taken by another replay (replay " + replayId +
           ").";
}

nlohmann::json SettingOutcome::toJson() const
{
    return {{"name", name},
            {"value", value},
            {"previous", previous ? nlohmann::json(*previous) : nlohmann::json()},
            {"audit_seq", auditSeq}};
}

std::string SettingOutcome::text() const
{
    return (value.empty() ? "Turned " + name + " off" : "Set " + name + " to " + value) +
           " (audit record " + std::to_string(auditSeq) + ").";
}

} // namespace idempo

namespace idempo {

nlohmann::json RunActionOutcome::toJson() const
{
    return {{"request_id", requestId},
            {"action", action},
            {"status", status},
            {"operator", operatorName},
            {"run", run ? runJson(*run) : nlohmann::json()},
            {"audit_seq", auditSeq ? nlohmann::json(*auditSeq) : nlohmann::json()}};
}

std::string RunActionOutcome::text() const
{
    const std::string name = run ? run->runId : std::string();
    const std::string state = run ? std::string(runStateName(run->state)) : std::string();
    if (status == "pending")
        return "Recorded, pending a second identity: run " + name + " stays " + state +
               " (request " + requestId + ").";
    if (status == "replayed")
        return "Already done: request " + requestId +
               " was submitted before; nothing applied again (run " + name + " is " + state +
               "). To ask again, give another reason or a --request-id of its own.";
    return "Applied: run " + name + " is " + state + " (request " + requestId + ", audit record " +
           std::to_string(auditSeq.value_or(0)) + ").";
}

} // namespace idempo
