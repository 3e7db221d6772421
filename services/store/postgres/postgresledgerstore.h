// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ledgerstore.h"
#include "pgconnection.h"

namespace idempo {

/// The shared ledger: PostgreSQL through libpq, for many workers and consoles at once.
///
/// Every write is one call of a SECURITY DEFINER function in schema `idempo` (docs/sql-api.md;
/// resources/sql/postgresql/0006-0009): a claim, a transition, the outbox, a guarded action is
/// one statement and one round trip, prepared once per connection. The functions hold the
/// rules (planClaim(), checkTransition(), four-eyes, leases) so that this store, the console and
/// any other client get the same answers and refusals; roles hold EXECUTE on what they may do
/// and no write on any table. Function errors carry SQLSTATEs of class ID, which PgConnection
/// maps to Error codes. Every time is the server's wall clock (`clock_timestamp()`, read once
/// the deciding row lock is held), in milliseconds since the Unix epoch.
///
/// Live changes: every creation and transition stamps the record with its transaction id; a
/// change feed (listen(), PgChangeFeed) long-polls idempo.wait_for_changes() for records written
/// by transactions it had not seen, and hands each over as a notification on channel
/// `idempo_operations` with the payload `{"ns":…,"key":…,"run_id":…,"state":…,"version":…}`
/// (parseOperationNotification() reads it). No write notifies: NOTIFY's commit lock would
/// make every writer wait for the previous one.
///
/// Each calling thread gets its own connection, opened on first use; stores on the same ledger
/// share it. When the thread ends, the connection waits (up to 8 per ledger) for the next new
/// thread instead of closing. Nothing migrates implicitly: until migrate() (`idempo init`)
/// has run, every ledger method throws Error(SchemaMismatch) saying so.
class PostgresLedgerStore final : public LedgerStore
{
public:
    struct Options
    {
        /// Added to the server's clock, in milliseconds (clock skew; tests move time with it).
        std::int64_t clockOffsetMs = 0;
        /// Tests only: the server's clock reads this fixed instant (plus the offset) instead of
        /// clock_timestamp(), so expiries can be checked to the millisecond.
        std::optional<std::int64_t> pinnedClockMs;
        /// Seconds to wait for a connection unless the connection string sets connect_timeout.
        int connectTimeoutS = 5;
    };

    /// The channel the change feed's notifications name.
    static constexpr const char *NotificationChannel = "idempo_operations";

    /// Connects to `conninfo` (a libpq URI or keyword string, e.g. `service=NAME`; passwords only
    /// through .pgpass, PGPASSFILE or a service file). Does not migrate. Throws
    /// Error(LedgerUnavailable) with libpq's reason when the server is unreachable or refuses.
    PostgresLedgerStore(std::string conninfo, Options options);
    explicit PostgresLedgerStore(std::string conninfo);
    ~PostgresLedgerStore() override;

    /// The connection string without password, e.g. "postgresql://idempo@db.internal/ledger".
    std::string describe() const override;
    void migrate() override;
    int schemaVersion() override;
    ClaimResult claim(const ClaimRequest &request) override;
    Operation transition(const TransitionRequest &request) override;
    std::optional<Operation> find(const std::string &ns, const std::string &key) override;
    std::vector<OperationEvent> history(const std::string &ns, const std::string &key) override;
    std::vector<Operation> list(const ListFilter &filter) override;
    std::vector<Suppression> suppressions(const std::string &ns, std::int64_t afterId,
                                          int limit) override;
    std::int64_t purgeExpired(const std::string &ns) override;
    LedgerMetrics metrics(const std::string &ns) override;
    std::vector<std::string> namespaces() override;
    std::int64_t nowMs() override;
    /// The outbox in one transaction, to a queue of this ledger (idempo.transition_and_send).
    OutboxWrite transitionAndSend(const TransitionRequest &request, const std::string &queue,
                                  const std::string &messageJson,
                                  const std::string &headersJson) override;

    /// `current_user` and the first idempo group it acts through (owner, admin, approver,
    /// operator, worker, viewer).
    ActorIdentity actor() override;
    ActionResult applyAction(const ActionTarget &target, const ActionDecider &decide) override;
    std::vector<AuditRecord> auditLog(std::int64_t afterSeq, int limit) override;
    /// One statement planned for the actual values (unnamed), like list().
    std::vector<AuditRecord> auditRecords(const AuditFilter &filter) override;
    std::vector<ApprovalRecord> approvals(const std::string &ns, const std::string &key) override;
    std::vector<PendingApproval> pendingApprovals(int limit) override;
    std::optional<std::string> guardSetting(const std::string &name) override;
    /// idempo.audit_head: the seq and hash the chain's trigger recorded with the newest record.
    std::optional<AuditHead> auditHead() override;

    // Run budgets (postgresrunbudgets.cpp).
    std::optional<RunRecord> findRun(const std::string &ns, const std::string &runId) override;
    std::vector<RunRecord> listRuns(const RunFilter &filter) override;
    std::vector<RunRecord>
    findRuns(const std::vector<std::pair<std::string, std::string>> &runs) override;
    std::int64_t sweepRuns(const std::string &ns) override;
    std::vector<RunActionRecord> runRequests(const std::string &ns,
                                             const std::string &runId) override;

    std::string_view dialect() const override { return "postgresql"; }
    /// Pushed: PgChangeFeed on a new connection (postgreschangefeed.h).
    std::unique_ptr<ChangeFeed> changeFeed() override;
    std::unique_ptr<sandbox::SandboxJournal> sandboxJournal() override;

    /// Moves this store's clock by `ms` milliseconds (adds to Options::clockOffsetMs). Tests only.
    void advanceClockMs(std::int64_t ms);

    /// The change feed of every namespace over a new connection of its own.
    /// Throws Error(LedgerUnavailable).
    std::unique_ptr<PgChangeFeed> listen() const;

    /// The claim call (docs/sql-api.md): `SELECT * FROM idempo.claim($1 … $19)`, the clock's
    /// two arguments last; claimArguments() are $1 … $17.
    static const char *claimSql();
    static PgParams claimArguments(const ClaimRequest &request);
    /// The transition call: `SELECT * FROM idempo.transition($1 … $17)`, the clock's two
    /// arguments last; transitionArguments() are $1 … $15.
    static const std::string &transitionSql();
    static PgParams transitionArguments(const TransitionRequest &request);

    /// applyAction() of a run action (target.runId): idempo.run_action.
    ActionResult applyRunAction(const ActionTarget &target, const ActionDecider &decide);
    /// The function call of each guarded action's plan; each answers its audit record's seq
    /// (callApprove: none for a replayed approval, which it puts in the plan's answer).
    std::optional<std::int64_t> callApprove(PgConnection &c, ActionResult &result);
    std::int64_t callReconcile(PgConnection &c, const ActionTarget &target,
                               const std::optional<Operation> &current, ActionResult &result);
    std::int64_t callReplayBegin(PgConnection &c, const AuditEntry &audit);
    std::int64_t callReplayFinish(PgConnection &c, const AuditEntry &audit);
    std::int64_t callSetting(PgConnection &c, const ActionPlan &plan);
    /// This thread's connection, opened on first use; shared with the ledger's queues
    /// (PostgresMessageQueue) so that they run inside the same transactions and statement cache.
    PgConnection &connection();
    /// Throws Error(SchemaMismatch) unless the ledger holds exactly this build's schema.
    void requireSchema();
    /// The two clock arguments every write function takes last (p_clock_pinned_ms,
    /// p_clock_offset_ms): the pinned instant and the offset, so the queues judge time on the
    /// ledger's clock. The functions accept a moved clock from the owner only.
    PgParams clockParams() const;
    /// `params` with clockParams() appended.
    PgParams &appendClock(PgParams &params) const;
    /// idempo.refresh_listing(): what listings read (the listing and the payload side table)
    /// brought up to every write committed before this call. Every listing calls it first; a
    /// listing it could not refresh (read-only, or another session holds the refresh) is
    /// served as it stands, with a warning.
    void refreshListing(PgConnection &c) const;

private:
    /// Creates every function from the schema's function files when the version moved or the
    /// ledger runs another set of them (idempo.schema_functions).
    void applyFunctions(PgConnection &c, bool versionMoved);
    std::string m_conninfo;
    Options m_options;
    std::atomic<std::int64_t> m_clockOffsetMs;
    std::atomic<bool> m_schemaReady{false};
    int m_latestSchema;
};

/// One notification of NotificationChannel, parsed.
struct OperationNotification
{
    std::string ns;
    std::string key;
    std::string runId;
    OperationState state = OperationState::Received;
    std::int64_t version = 0;
};

/// Reads a NotificationChannel payload; std::nullopt when it is not one.
std::optional<OperationNotification> parseOperationNotification(const std::string &payload);

} // namespace idempo
