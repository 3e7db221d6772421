// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerstore.h"
#include "pgconnection.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace idempo {

/// The shared ledger: PostgreSQL through libpq, for many workers and consoles at once.
///
/// A claim is one statement (one round trip): it locks the key's row, decides with the rules of
/// planClaim() (ledgerrules.h), writes the record, its history event and any suppression, and
/// notifies. A transition is one short transaction: the row is locked, checked and changed
/// with checkTransition()/applyTransition(). Every time is the server's wall clock, read by the
/// deciding statement once it holds the row lock (`clock_timestamp()`, never the transaction's
/// `now()` or a client's clock), and stored as milliseconds since the Unix epoch.
///
/// Live changes: every creation and transition sends, in its own transaction,
/// `NOTIFY idempo_operations, '{"ns":…,"key":…,"run_id":…,"state":…,"version":…}'`
/// (run_id cut to 500 characters to stay below NOTIFY's 8000-byte limit). listen() opens a
/// listener; parseOperationNotification() reads a payload.
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

    /// The channel creations and transitions are announced on.
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
    std::int64_t nowMs() override;
    /// The outbox in one transaction, to a queue of this ledger (postgresoutbox.h).
    OutboxWrite transitionAndSend(const TransitionRequest &request, const std::string &queue,
                                  const std::string &messageJson, const std::string &headersJson) override;

    /// `current_user` and the first idempo group it acts through (owner, admin, approver,
    /// operator, worker, viewer).
    ActorIdentity actor() override;
    ActionResult applyAction(const ActionTarget &target, const ActionDecider &decide) override;
    std::vector<AuditRecord> auditLog(std::int64_t afterSeq, int limit) override;
    std::vector<ApprovalRecord> approvals(const std::string &ns, const std::string &key) override;
    std::optional<std::string> guardSetting(const std::string &name) override;

    std::string_view dialect() const override { return "postgresql"; }
    /// Pushed: a LISTEN on NotificationChannel over a new connection (postgreschangefeed.h).
    std::unique_ptr<ChangeFeed> changeFeed() override;
    std::unique_ptr<sandbox::SandboxJournal> sandboxJournal() override;

    /// Moves this store's clock by `ms` milliseconds (adds to Options::clockOffsetMs). Tests only.
    void advanceClockMs(std::int64_t ms);

    /// A listener on NotificationChannel over a new connection of its own.
    /// Throws Error(LedgerUnavailable).
    std::unique_ptr<PgListener> listen() const;

    /// pgbench's side of `idempo bench claim`: a script and the variables it reads.
    struct PgbenchCycle
    {
        std::string script;               ///< for `pgbench -f FILE`
        std::vector<std::string> defines; ///< `NAME=VALUE` each, for `pgbench -D`
    };
    /// Benchmark support: `claim`, then `completion` (a worker's write to succeeded), then
    /// `claim` again (replayed), as one pgbench transaction built from the very statements
    /// claim() and transition() run (kClaimSql; BEGIN, kLockSql, kTransitionSql, COMMIT;
    /// kClaimSql), so that the baseline follows any change to them. Their $n become pgbench
    /// variables: the requests' values as defines, the locked row captured with `\gset`, and
    /// literals where pgbench cannot bind the value (NULL, the empty string). Clock unpinned,
    /// no offset. The key is a number unique per client and cycle, in place of `claim.key`, so
    /// the namespace `claim.ns` must hold no such keys yet. Throws Error(InvalidArgument) unless
    /// `completion` goes to succeeded without an error class.
    static PgbenchCycle pgbenchCycle(const ClaimRequest &claim, const TransitionRequest &completion);

    /// The server's clock in milliseconds since the epoch, read when the expression is
    /// evaluated; $1 and $2 of the statement are clockParams().
    static constexpr std::string_view ServerClockSql =
        "(coalesce($1::bigint, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint) + "
        "$2::bigint)";

    /// This thread's connection, opened on first use; shared with the ledger's queues
    /// (PostgresMessageQueue) so that they run inside the same transactions and statement cache.
    PgConnection &connection();
    /// Throws Error(SchemaMismatch) unless the ledger holds exactly this build's schema.
    void requireSchema();
    /// $1 and $2 of every statement that reads the clock (ServerClockSql): the pinned instant
    /// and the offset, so the queues judge time on the ledger's clock.
    PgParams clockParams() const;

private:
    /// transition() inside a transaction the caller holds open on `c`.
    Operation writeTransition(PgConnection &c, const TransitionRequest &request);
    /// Locks the operation's row; returns the clock read once the lock is held, and the row.
    std::pair<std::int64_t, std::optional<Operation>> lockOperation(PgConnection &c, const std::string &ns,
                                                                    const std::string &key);
    /// checkTransition() and applyTransition() on the locked row: the record the write will hold.
    Operation planLockedTransition(PgConnection &c, const std::optional<Operation> &existing,
                                   const TransitionRequest &request, std::int64_t nowMs);
    /// Writes a planned transition with its history event and notification.
    void writePlannedTransition(PgConnection &c, const Operation &existing, const Operation &op,
                                const TransitionRequest &request);
    Operation writeLockedTransition(PgConnection &c, const std::optional<Operation> &existing,
                                    const TransitionRequest &request, std::int64_t nowMs);

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
