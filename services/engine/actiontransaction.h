// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actionrecords.h"

namespace idempo {

/// The reads and writes one guarded action makes, inside the write transaction its store holds
/// open. A store that carries out plans implements these primitives, and runAction() is the one
/// orchestration over them: read, decide, then write in one order. (PostgreSQL's guarded
/// actions are functions of the ledger, functions/actions/, each one transaction.)
class ActionTransaction
{
public:
    /// An operation locked for the rest of the transaction, with the store's clock read once
    /// the lock was held.
    struct Locked
    {
        std::int64_t nowMs = 0;
        std::optional<Operation> operation; ///< unset when the key names no operation
    };

    virtual ~ActionTransaction() = default;

    virtual Locked lockOperation(const std::string &ns, const std::string &key) = 0;
    /// The store's clock, for an action that locks no operation.
    virtual std::int64_t nowMs() = 0;
    /// The operation's approvals, oldest first.
    virtual std::vector<ApprovalRecord> approvals(const std::string &ns,
                                                  const std::string &key) = 0;
    /// The operation's history, oldest first.
    virtual std::vector<OperationEvent> history(const std::string &ns, const std::string &key) = 0;
    /// The approval stored under `approvalId`, if any.
    virtual std::optional<ApprovalRecord> approval(const std::string &approvalId) = 0;
    /// The next fencing token of the ledger's sequence.
    virtual std::int64_t nextFencingToken() = 0;

    /// Inserts `approval`, created at `nowMs`.
    virtual void insertApproval(const ApprovalRecord &approval, std::int64_t nowMs) = 0;
    /// Marks a pending approval "seconded".
    virtual void secondApproval(const std::string &approvalId) = 0;
    virtual void storeSetting(const std::string &name, const std::string &value) = 0;
    /// Appends `entry` to the audit chain after its last record; appends serialise.
    virtual AuditRecord appendAudit(const AuditEntry &entry, std::int64_t nowMs) = 0;
    /// Writes the planned record `after` over `before` (compare-and-set on before's version)
    /// with its history event; `request` gives the event's actor and detail.
    virtual void writeTransition(const Operation &before, const Operation &after,
                                 const TransitionRequest &request) = 0;
    /// The run (ns, runId), locked for the rest of the transaction; unset when none.
    virtual std::optional<RunRecord> lockRun(const std::string &ns, const std::string &runId) = 0;
    /// The run's requests of guarded run actions, oldest first.
    virtual std::vector<RunActionRecord> runRequests(const std::string &ns,
                                                     const std::string &runId) = 0;
    /// The run request stored under `requestId`, if any.
    virtual std::optional<RunActionRecord> runRequest(const std::string &requestId) = 0;
    /// Inserts `request`, created at `nowMs`.
    virtual void insertRunRequest(const RunActionRecord &request, std::int64_t nowMs) = 0;
    /// Marks a pending run request "seconded".
    virtual void secondRunRequest(const std::string &requestId) = 0;
    /// Writes the planned run `after` over `before` (compare-and-set on before's version).
    virtual void writeRun(const RunRecord &before, const RunRecord &after) = 0;
};

/// LedgerStore::applyAction() on `tx`: locks and reads what `target` names, calls `decide`, plans
/// each transition on the record the previous one leaves, then writes the approval, the
/// seconded approvals, the setting, the audit record, the run request (with the audit record's
/// seq), the seconded run requests, the run and the transitions, in that order. The
/// audit record precedes the transitions because PostgreSQL admits a guarded role's change of
/// an operation only after its audit record in the same transaction (0005_guarded_actions.sql).
/// Throws what `decide`, the transition rules or the store throw; the caller's transaction then
/// rolls back. The caller commits, also when the plan is only an answer.
ActionResult runAction(ActionTransaction &tx, const ActionTarget &target,
                       const ActionDecider &decide);

} // namespace idempo
