// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "guardedaction.h"
#include "ledgerstore.h"
#include "pacedrun.h"
#include "providerlookup.h"

namespace idempo {

/// One operation of a frozen bulk set, as it was when the set was frozen.
struct BulkTarget
{
    std::string ns;
    std::string key;
    std::int64_t version = 0; ///< the operation version seen; a different one is not acted on
};

/// What a bulk run does to each operation of its set.
enum class BulkAction
{
    Approve,   ///< ApproveCommand, decision redispatch
    Reject,    ///< ApproveCommand, decision reject
    Reconcile, ///< ReconcileCommand, one key at a time
};

std::string_view bulkActionName(BulkAction action);
std::optional<BulkAction> parseBulkAction(std::string_view name);

/// What became of one operation of a bulk run.
enum class BulkResult
{
    Applied,     ///< decided or reconciled now, with its audit record
    Pending,     ///< a first four-eyes approval, recorded and audited (now, or by this operator's
                 ///< earlier run): a second approver applies it
    AlreadyDone, ///< this operator's same decision (or reconciliation) on this version was made
                 ///< before and has taken effect: nothing written (a run again after a kill)
    SkippedChanged, ///< the operation moved since the set was frozen: not acted on
    Refused,        ///< a rule of the action said no (four-eyes, state, role): nothing written
};

std::string_view bulkResultName(BulkResult result);

struct BulkItem
{
    BulkTarget target;
    BulkResult result = BulkResult::Refused;
    std::string detail; ///< the action's answer or the reason it was not acted on
    std::string state;  ///< the operation's state afterwards (empty when it was not found)
    std::optional<std::int64_t> auditSeq;
};

/// BulkCommand::execute(): one item per operation reached, in the set's order.
struct BulkOutcome
{
    BulkAction action = BulkAction::Approve;
    std::int64_t count = 0; ///< the frozen set's size
    std::vector<BulkItem> items;
    bool cancelled = false; ///< stopped: the operations after the last item were not touched

    std::int64_t tally(BulkResult result) const;
    std::int64_t notReached() const { return count - static_cast<std::int64_t>(items.size()); }
    /// {"action", "count", "applied", "pending", "already_done", "skipped_changed", "refused",
    /// "not_reached", "cancelled", "items": [{"namespace", "key", "version", "result", "detail",
    /// "state", "audit_seq"}]}.
    nlohmann::json toJson() const;
    /// e.g. "Bulk approve of 5: 3 applied, 1 skipped (changed since frozen), 1 refused."
    std::string text() const;
};

/// A guarded action over a counted, frozen set of operations: approve, reject or reconcile each
/// through its own command (ApproveCommand, ReconcileCommand), so every rule holds per operation
/// (role, state, four-eyes, the requester may not approve) and each writes its own audit record.
/// The set is explicit (keys with the version seen) or a filter frozen by freeze(); an operation
/// whose version moved since is skipped, never acted on. execute() needs the typed count of the
/// set and a reason, then goes through the set at most `ratePerSecond` operations a second,
/// asking the cancel flag between operations (PacedRun). What this operator did before on an
/// operation answers it: an approval with the run's decision, a reconcile audit record, each made
/// on an operation version. A run killed midway and started again answers what it already did
/// with the first decision (AlreadyDone, Pending) and writes nothing for it, however the set is
/// named: a target whose version is the one read now (a bare KEY line, a filter frozen again)
/// stands for the version of this operator's latest act when that act left the operation as it
/// is, or the action no longer takes it.
class BulkCommand final : public GuardedAction
{
public:
    static constexpr double DefaultRatePerSecond = 20;
    static constexpr double MaxRatePerSecond = 500;
    /// The largest set one run takes.
    static constexpr std::int64_t MaxTargets = 10'000;

    struct Request
    {
        BulkAction action = BulkAction::Approve;
        std::vector<BulkTarget> targets;
        std::string reason;
        std::optional<std::int64_t> confirmCount; ///< the count the operator typed
        double ratePerSecond = DefaultRatePerSecond;
    };
    struct Options
    {
        int extraAttempts = 3; ///< ApproveCommand::Options
        std::int64_t retentionMs = 24 * 3600'000;
        ProviderLookup *lookup = nullptr; ///< required by Reconcile
        PacedRun::Hooks pacing;
    };

    /// Repeated targets (same namespace and key) are kept once, the first.
    BulkCommand(LedgerStore &store, ActorIdentity actor, Request request, Options options);

    /// "Everything matching `filter`", frozen: reads every page of the listing before anything
    /// is acted on, and keeps the operations `action` may take now, with their versions, oldest
    /// first. The filter's state narrows the action's states; without one every state the action
    /// takes is read. Rows that arrive later are not in the set. Throws Error(InvalidArgument)
    /// when more than MaxTargets match.
    static std::vector<BulkTarget> freeze(LedgerStore &store, ListFilter filter, BulkAction action);
    /// True when `action` may take `op` at `nowMs` (the states freeze() keeps).
    static bool takes(BulkAction action, const Operation &op, std::int64_t nowMs);

    std::vector<std::string> validate() override;
    /// What validate() would still say once a reason is given (the role, an empty set, a
    /// missing lookup): a dry run names it instead of suggesting a command that is refused.
    std::vector<std::string> dryRunProblems() const;
    /// Reads each operation of the set: details {"action", "count", "changed", "not_taken",
    /// "already_done", "rate_per_s", "by_state": {state: n}, "targets": [{"namespace", "key",
    /// "version", "state", "changed", "taken", "already_done"}]}; "version" is the one the run
    /// stands on (see above); "taken" is false for an operation in a state the action does not
    /// take (it will be refused), "already_done" true for one this operator's earlier act
    /// answers; the sentence counts both.
    ActionPreview describe() override;
    /// Acts on the set as described above. Throws Error(Refused) without the matching count, a
    /// reason or the role, and Error(InvalidArgument) for a bad rate, writing nothing; the
    /// store's errors stop the run (each operation done so far stands with its audit record).
    BulkOutcome execute();

    const std::vector<BulkTarget> &targets() const { return m_request.targets; }

private:
    /// One earlier act of this operator with the run's action on an operation.
    struct OwnAct
    {
        std::int64_t version = 0;          ///< the operation version it was made on
        std::optional<std::int64_t> after; ///< the version it left, when known
        bool pending = false;              ///< a first four-eyes approval nobody seconded
        std::string what; ///< "reject (approval ID)", "reconciliation (audit record N)"
    };

    std::vector<std::string> problems(bool needReason) const;
    std::vector<OwnAct> ownActs(const BulkTarget &target) const;
    /// The version a run stands on for `target` (see the class comment).
    std::int64_t versionSeen(const BulkTarget &target, const Operation &current,
                             const std::vector<OwnAct> &acts, std::int64_t nowMs) const;
    /// The answer of an earlier act on the version seen: Pending, AlreadyDone, or
    /// SkippedChanged for a first approval the operation moved away from.
    void answerFromAct(BulkItem &item, const OwnAct &act, const Operation &current) const;
    BulkItem act(const BulkTarget &target);

    LedgerStore &m_store;
    ActorIdentity m_actor;
    Request m_request;
    Options m_options;
};

} // namespace idempo
