// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "actionrecords.h"
#include "operation.h"

namespace idempo {

class ChangeFeed;

namespace sandbox {
class SandboxJournal;
}

/// What LedgerStore::transitionAndSend() wrote.
struct OutboxWrite
{
    Operation operation;    ///< the record after the transition
    std::int64_t msgId = 0; ///< the enqueued message's msg_id
};

/// Throws Error(InvalidArgument) naming what is wrong with `filter`: a limit outside
/// 1..AuditFilterMaxLimit, a negative cursor, an empty or inverted time range. Both stores call
/// it before they query.
void checkAuditFilter(const AuditFilter &filter);
inline constexpr int AuditFilterMaxLimit = 10000;

/// The ledger contract both stores implement (SQLite embedded, PostgreSQL shared); one contract
/// test suite runs against each. All methods are safe to call from many threads at once, and
/// each write is atomic: it happens entirely, with its history event or suppression, or not at
/// all. Every method may throw Error(LedgerUnavailable) or Error(Internal) on storage failure.
class LedgerStore
{
public:
    virtual ~LedgerStore() = default;

    /// The ledger's address without secrets, e.g. "sqlite:/home/me/ledger.db".
    virtual std::string describe() const = 0;

    /// Applies pending migrations. Throws Error(SchemaMismatch) when the ledger is newer
    /// than this build.
    virtual void migrate() = 0;

    /// The ledger's schema version (0 when uninitialised).
    virtual int schemaVersion() = 0;

    /// One atomic claim (see ledgerrules.h for the rules). Every outcome other than
    /// `claimed` is also recorded as a suppression.
    virtual ClaimResult claim(const ClaimRequest &request) = 0;

    /// One atomic compare-and-set on (state, fencing token), appended to the history.
    /// Throws Error(NotFound), Error(StaleLease) when the token is not current or a worker's
    /// lease is gone, Error(IllegalTransition) when the table forbids it or the state moved.
    virtual Operation transition(const TransitionRequest &request) = 0;

    virtual std::optional<Operation> find(const std::string &ns, const std::string &key) = 0;

    /// The operation's history, oldest first. Empty when the key is unknown.
    virtual std::vector<OperationEvent> history(const std::string &ns, const std::string &key) = 0;

    /// A page of operations matching `filter`, ordered by id (keyset pagination).
    virtual std::vector<Operation> list(const ListFilter &filter) = 0;

    /// Suppressions with id > afterId, oldest first, at most `limit`.
    virtual std::vector<Suppression> suppressions(const std::string &ns, std::int64_t afterId,
                                                  int limit) = 0;

    /// Removes operations of namespace `ns` (empty = every namespace) whose retention expired,
    /// with their history. Returns how many.
    virtual std::int64_t purgeExpired(const std::string &ns) = 0;

    /// Totals of namespace `ns` (empty = every namespace).
    virtual LedgerMetrics metrics(const std::string &ns) = 0;

    /// The namespaces that hold an operation or a run, in byte order: one index probe each, so
    /// a scrape of every namespace costs the same on a ledger of any size.
    virtual std::vector<std::string> namespaces() = 0;

    /// The store's clock in milliseconds since the Unix epoch: the one every expiry is judged on.
    virtual std::int64_t nowMs() = 0;

    /// The transactional outbox: transition() and MessageQueue::send() (no delay) of
    /// `messageJson` with `headersJson` (a JSON object, or empty for none) to `queue`, a queue of
    /// this ledger, in one transaction, so a worker's finished step and the message for the next
    /// step are recorded together or not at all. The message is stamped with the transition's
    /// time. Throws whatever either throws (Error(StaleLease) for a stale token, Error(NotFound)
    /// for an unknown queue, Error(InvalidJson), …); nothing is written then.
    virtual OutboxWrite transitionAndSend(const TransitionRequest &request,
                                          const std::string &queue, const std::string &messageJson,
                                          const std::string &headersJson) = 0;

    // Guarded actions (actions/guardedaction.h). Their records live in the tables of migration
    // 0005_guarded_actions.sql: approvals, audit_log (append-only, hash-chained) and
    // guard_settings.

    /// Who is acting on this connection: on PostgreSQL `current_user` and its idempo group, on
    /// the embedded ledger the OS user with role "owner".
    virtual ActorIdentity actor() = 0;

    /// One guarded action in one transaction: locks the operation `target` names (when it names
    /// one; absent is not an error, the decider sees no operation), reads its approvals and
    /// history and the approval stored under target.approvalId, calls `decide` with them and
    /// writes what it plans: the approval row, the seconded approvals, the fenced transition,
    /// the setting, and the audit record, chained after the last one. Appends serialise, so
    /// concurrent actions cannot fork the chain. An audit entry for an operation whose before /
    /// after state is empty gets operationSnapshot() of the record before and after. Throws what
    /// `decide` or the transition throws (nothing is written then); Error(Refused) for a
    /// second applied decision of one (operation, revision). On PostgreSQL the database refuses
    /// (Error(LedgerUnavailable), permission denied) a role that may not make the write.
    virtual ActionResult applyAction(const ActionTarget &target, const ActionDecider &decide) = 0;

    /// Audit records with seq > afterSeq, in seq order, at most `limit`.
    virtual std::vector<AuditRecord> auditLog(std::int64_t afterSeq, int limit) = 0;

    /// A keyset page of the audit records `filter` lets through, in seq order (descending when
    /// filter.newestFirst). Filtered in SQL on indexes: a page costs the same on a log of any
    /// length. Throws Error(InvalidArgument) for a limit below 1 or a negative cursor.
    virtual std::vector<AuditRecord> auditRecords(const AuditFilter &filter) = 0;

    /// The approvals of one operation, oldest first.
    virtual std::vector<ApprovalRecord> approvals(const std::string &ns,
                                                  const std::string &key) = 0;

    /// The four-eyes worklist: first approvals still waiting for a second approver, oldest
    /// first, at most `limit`.
    virtual std::vector<PendingApproval> pendingApprovals(int limit) = 0;

    /// A guard setting (e.g. "four_eyes_above"), unset when never stored.
    virtual std::optional<std::string> guardSetting(const std::string &name) = 0;

    /// The audit chain's head as the ledger records it apart from the chain (PostgreSQL:
    /// idempo.audit_head, moved by the trigger that appends), for AuditVerify to compare the
    /// chain's end with; unset for a ledger that keeps none (the embedded ledger).
    virtual std::optional<AuditHead> auditHead() { return std::nullopt; }

    // Run budgets (runbudget.h): one record per (namespace, run id), created by the first claim
    // naming the run, whose budgets every dispatching claim checks in its atomic step. Failed
    // dispatches and progress are counted by the ledger as operations move (tables of
    // migration 0006 on SQLite, 0012 on PostgreSQL).

    /// The run's record, unset when no claim has named the run.
    virtual std::optional<RunRecord> findRun(const std::string &ns, const std::string &runId) = 0;

    /// A page of runs matching `filter`, ordered by (namespace, run id).
    virtual std::vector<RunRecord> listRuns(const RunFilter &filter) = 0;

    /// The records of those of `runs` ((namespace, run id) pairs) that exist, in no particular
    /// order: a list of runs folded from operations reads its page's budgets at once. By default
    /// one findRun() each.
    virtual std::vector<RunRecord>
    findRuns(const std::vector<std::pair<std::string, std::string>> &runs);

    /// The requests of guarded run actions (resume, budget) of the run, oldest first.
    virtual std::vector<RunActionRecord> runRequests(const std::string &ns,
                                                     const std::string &runId) = 0;

    /// The no-progress sweep: halts every active run of `ns` (empty = every namespace) that has
    /// an operation still open and no progress for its no-progress budget, on the ledger's
    /// clock. Returns how many runs it halted.
    virtual std::int64_t sweepRuns(const std::string &ns) = 0;

    // Capabilities beyond the contract: what a store can do for a tool that needs more than the
    // ledger's records. Each says when the store lacks it, so no caller asks which store it has.

    /// The SQL dialect of the store's tables and migrations (resources/sql/<dialect>/):
    /// "sqlite" or "postgresql". Benchmarks compare the engine against that dialect's raw SQL.
    virtual std::string_view dialect() const = 0;

    /// How live views learn of writes (changefeed.h); nullptr when the store cannot tell.
    /// Throws Error(LedgerUnavailable) when a feed on a connection of its own cannot connect.
    virtual std::unique_ptr<ChangeFeed> changeFeed();

    /// The sandbox's tables in this ledger's database (sandboxjournal.h), on the store's
    /// connections; the store must outlive it. nullptr when the store has no room for them.
    virtual std::unique_ptr<sandbox::SandboxJournal> sandboxJournal();
};

} // namespace idempo
