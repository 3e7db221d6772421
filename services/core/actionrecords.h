// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "operation.h"

namespace idempo {

/// Who performs a guarded action: on PostgreSQL the database role (`current_user`) and the
/// idempo group it acts through; on the embedded ledger the OS user, role "owner" (whoever may
/// write the file may do everything).
struct ActorIdentity
{
    std::string name;
    /// "owner" (schema owner or embedded ledger), "admin", "approver", "operator", "worker",
    /// "viewer", or "none" when the role is in no idempo group.
    std::string role;
};

/// One submitted approval decision (table `approvals`). Times in milliseconds since the epoch.
struct ApprovalRecord
{
    std::string approvalId; ///< chosen by the submitter; a resubmission reuses it
    std::string ns;
    std::string key;
    int revision =
        1; ///< proposals for one operation, numbered from 1; a changed proposal is a new one
    std::string decision; ///< "redispatch", "confirm" or "reject"
    std::string reason;
    std::string operatorName;      ///< ActorIdentity::name of the submitter
    std::string role;              ///< ActorIdentity::role of the submitter
    std::string externalReference; ///< evidence of a "confirm"; empty otherwise
    std::string
        proposal; ///< SHA-256 hex of what was proposed (decision, reference, operation version)
    /// "applied" (this submission applied the decision), "pending" (waits for a second
    /// approver), "seconded" (a first approval another approver completed).
    std::string status;
    std::int64_t operationVersion = 0; ///< the operation version the submitter saw
    std::int64_t createdAtMs = 0;
};

/// A first four-eyes approval still waiting for its second approver: the pending approval of
/// the operation's latest proposal while the operation stands at the version it was made on.
struct PendingApproval
{
    ApprovalRecord approval; ///< the first approver's submission (operatorName, role, reason)
    Operation operation;     ///< as it stands now
    /// Who put the operation where it waits: the actor of its latest history event.
    std::string requestedBy;
};

/// One submitted guarded run action (table `run_actions`): resume a halted run or change its
/// budgets. Idempotent by request id; four-eyes pairs requests with the same proposal.
struct RunActionRecord
{
    std::string requestId; ///< chosen by the submitter; a resubmission reuses it
    std::string ns;
    std::string runId;
    std::string action;   ///< "resume" or "budget"
    std::string proposal; ///< canonical JSON of what is asked, with the run version seen
    /// "applied", "pending" (waits for a second identity) or "seconded" (a first request another
    /// identity completed).
    std::string status;
    std::string operatorName;
    std::string role;
    std::string reason;
    std::int64_t auditSeq = 0;
    std::int64_t createdAtMs = 0;
};

/// An audit entry before it is chained: what the store appends. JSON fields hold canonical
/// JSON text (RFC 8785) or are empty.
struct AuditEntry
{
    std::string who;
    std::string role;
    std::string action; ///< "approve", "reject", "reconcile", "dlq_replay", "setting", …
    std::string target; ///< "ns/key" for an operation, "queue:NAME" for a replay, "setting:NAME"
    std::string reason;
    std::string
        beforeState; ///< JSON snapshot before; the store fills it for an operation when empty
    std::string afterState; ///< JSON snapshot after; the store fills it for an operation when empty
    std::string approvalId;
    std::string detail; ///< JSON: evidence, counts, the decision's preview
};

/// A record of the append-only audit log (table `audit_log`), chained by hash.
struct AuditRecord
{
    std::int64_t seq = 0; ///< 1, 2, 3, … without gaps
    std::int64_t atMs = 0;
    AuditEntry entry;
    std::string prevHash; ///< the previous record's hash; 64 zeros for the first
    /// The hash of the newest earlier record with the same target, 64 zeros for the target's
    /// first; empty for a record appended before records carried it. It lets a target's records
    /// show on their own that none of them is missing (evidence packs).
    std::string targetPrevHash;
    std::string hash; ///< auditHash() of this record
};

/// Which audit records LedgerStore::auditRecords() returns: every field set narrows the answer
/// (empty / unset matches everything), and the store answers it in SQL on its indexes.
struct AuditFilter
{
    std::string target;       ///< exactly this target: "ns/key", "queue:NAME", "setting:NAME"
    std::string targetPrefix; ///< targets starting with this (byte-wise, no wildcards)
    std::string ns;           ///< records of operations in this namespace (targets "ns/…")
    std::string who;          ///< exactly this actor identity
    std::string action;       ///< exactly this action kind ("approve", "dlq_replay", …)
    std::optional<std::int64_t> fromMs; ///< at_ms >= fromMs
    std::optional<std::int64_t> toMs;   ///< at_ms < toMs
    bool newestFirst = false;           ///< seq descending instead of ascending
    /// Keyset cursor: the last seq of the previous page, 0 on a first page. The page continues
    /// past it in the listing's order (seq > afterSeq, or seq < afterSeq newest first).
    std::int64_t afterSeq = 0;
    int limit = 100;
};

/// The newest record of the audit chain as the ledger keeps it beside the chain.
struct AuditHead
{
    std::int64_t seq = 0; ///< 0 for an empty chain
    std::string hash;     ///< the newest record's hash; 64 zeros for an empty chain
};

/// What a guarded action's decider wants written, in one transaction. Nothing at all when
/// `answer` is set (an idempotent resubmission answered from the ledger).
struct ActionPlan
{
    std::vector<TransitionRequest>
        transitions; ///< fenced transitions of the locked operation, in order
    std::optional<ApprovalRecord> approval; ///< inserted (created time set by the store)
    std::vector<std::string> seconded;      ///< approval ids whose status becomes "seconded"
    std::optional<std::pair<std::string, std::string>>
        setting;                          ///< guard setting (name, value) to store
    std::optional<AuditEntry> audit;      ///< appended to the chain
    std::optional<ApprovalRecord> answer; ///< the earlier submission with this approval id
    std::optional<RunRecord> run;         ///< the locked run as it is to be written (version + 1)
    std::optional<RunActionRecord> runRequest; ///< inserted, with the audit record's seq
    std::vector<std::string> secondedRequests; ///< run requests whose status becomes "seconded"
    std::optional<RunActionRecord> runAnswer;  ///< the earlier run request with this request id
};

/// What the store hands a decider, read inside the action's transaction under its locks.
struct ActionState
{
    const Operation *operation = nullptr;  ///< the locked operation; null when none or no key
    std::vector<ApprovalRecord> approvals; ///< the operation's approvals, oldest first
    std::optional<ApprovalRecord>
        byApprovalId;                         ///< the approval already stored under the target's id
    std::vector<OperationEvent> history;      ///< the operation's history, oldest first
    std::int64_t nowMs = 0;                   ///< the store's clock
    const RunRecord *run = nullptr;           ///< the locked run; null when none or no run id
    std::vector<RunActionRecord> runRequests; ///< the run's requests, oldest first
    std::optional<RunActionRecord> byRequestId; ///< the run request stored under the target's id
};

/// Decides an action from the locked state; throws Error to write nothing.
using ActionDecider = std::function<ActionPlan(const ActionState &)>;

/// What an action locks and reads.
struct ActionTarget
{
    std::string ns;
    std::string key;        ///< empty: no operation (replays, settings)
    std::string approvalId; ///< empty: no approval lookup (with runId: the run request id)
    std::string runId;      ///< with an empty key: the run (ns, runId) is locked and read
};

/// What LedgerStore::applyAction() wrote.
struct ActionResult
{
    ActionPlan plan; ///< as decided
    std::optional<Operation>
        operation; ///< the operation after the action (unchanged when no transition)
    std::optional<AuditRecord> audit; ///< the appended record
    std::optional<RunRecord> run;     ///< the run after the action
};

} // namespace idempo
