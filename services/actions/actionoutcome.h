// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operation.h"
#include "providerlookup.h"

namespace idempo {

// What each guarded action's execute() did, as a value: toJson() is the shape scripts read
// (`--json`), text() the sentence a person reads in the console.

/// ApproveCommand::execute().
struct ApprovalOutcome
{
    std::string approvalId;
    std::string status; ///< "applied", "pending" (waits for a second approver) or "replayed"
                        ///< (submitted before)
    std::string decision;
    int revision = 0;
    std::string operatorName;
    std::optional<Operation> operation;   ///< the operation after the decision
    std::optional<std::int64_t> auditSeq; ///< unset for a replayed submission

    /// {"approval_id", "status", "decision", "revision", "operator", "operation": {…},
    /// "audit_seq"}.
    nlohmann::json toJson() const;
    /// e.g. "Applied: run-7002:refund is now received (approval ap-…, audit record 12)."
    std::string text() const;
};

/// ReconcileCommand::execute().
struct ReconcileOutcome
{
    struct Reconciled
    {
        std::string key;
        OperationState from = OperationState::UnknownOutcome;
        OperationState to = OperationState::UnknownOutcome;
        ProviderEvidence evidence;
        std::int64_t auditSeq = 0;
    };
    struct Skipped
    {
        std::string key;
        std::string why; ///< the operation moved since it was looked up
    };
    std::vector<Reconciled> reconciled;
    std::vector<Skipped> skipped;

    /// {"reconciled": [{"key", "from", "to", "evidence", "audit_seq"}], "skipped": [{"key",
    /// "why"}]}.
    nlohmann::json toJson() const;
    /// e.g. "Reconciled. run-7003:book_flight: unknown_outcome → succeeded".
    std::string text() const;
};

/// DlqReplayCommand::execute().
struct ReplayOutcome
{
    std::string replayId;
    std::int64_t requeued = 0;
    std::int64_t takenByOtherReplay = 0; ///< requeued by a replay running at the same time
    std::int64_t notReplayed = 0;        ///< left in the dead-letter queue by the dry run's verdict
    bool cancelled = false;
    std::int64_t startAuditSeq = 0; ///< 0: nothing was to be requeued, so nothing was audited
    std::int64_t endAuditSeq = 0;

    /// {"replay_id", "requeued", "taken_by_other_replay", "not_replayed", "cancelled", "audit_seq":
    /// [start, end], or [] when nothing was audited}.
    nlohmann::json toJson() const;
    /// e.g. "Replayed: 3 requeued, 1 not replayed, 0 taken by another replay (replay rp-…)."
    std::string text() const;
};

/// RunActionCommand::execute().
struct RunActionOutcome
{
    std::string requestId;
    std::string action; ///< "resume" or "budget"
    std::string status; ///< "applied", "pending" (waits for a second identity) or "replayed"
    std::string operatorName;
    std::optional<RunRecord> run;         ///< the run after the action
    std::optional<std::int64_t> auditSeq; ///< unset for a replayed submission

    /// {"request_id", "action", "status", "operator", "run": {…}, "audit_seq"}.
    nlohmann::json toJson() const;
    /// e.g. "Applied: run run-7 is active again (request rr-…, audit record 4)."
    std::string text() const;
};

/// GuardSettingCommand::execute().
struct SettingOutcome
{
    std::string name;
    std::string value; ///< empty: the setting is off
    std::optional<std::string> previous;
    std::int64_t auditSeq = 0;

    /// {"name", "value", "previous", "audit_seq"}.
    nlohmann::json toJson() const;
    /// e.g. "Set four_eyes_above to 1000.00 (audit record 7)."
    std::string text() const;
};

} // namespace idempo
