// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <QString>

#include "clock.h"
#include "ledgerstore.h"
#include "sqlitesupport.h"

namespace idempo {

/// The embedded ledger: one SQLite file through Qt Sql, in WAL mode. Every write runs in a
/// `BEGIN IMMEDIATE` transaction, so a claim's read and write cannot interleave with another
/// writer's; waits for the write lock up to the busy timeout. Each calling thread gets its own
/// connection. Times come from the injected Clock.
class SqliteLedgerStore final : public LedgerStore
{
public:
    struct Options
    {
        int busyTimeoutMs = 10'000;
        /// PRAGMA synchronous: "FULL" (default: a claim survives power loss) or "NORMAL".
        QString synchronous = QStringLiteral("FULL");
        /// Opens an existing file for reading only (openLedgerFile()): no WAL switch, no
        /// migration, nothing created beside it; every write fails as Error(LedgerUnavailable).
        bool readOnly = false;
    };

    /// Opens (creating if needed) the ledger file at `path` and applies migrations; read-only,
    /// opens it as it is. Throws Error(LedgerUnavailable) when the file cannot be opened,
    /// Error(SchemaMismatch) when it holds a newer schema, or read-only an older one or none.
    SqliteLedgerStore(const QString &path, std::shared_ptr<const Clock> clock, Options options);
    SqliteLedgerStore(const QString &path, std::shared_ptr<const Clock> clock);
    ~SqliteLedgerStore() override;

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

    /// The outbox in one BEGIN IMMEDIATE transaction, to a queue of this file (sqliteoutbox.h).
    OutboxWrite transitionAndSend(const TransitionRequest &request, const std::string &queue,
                                  const std::string &messageJson,
                                  const std::string &headersJson) override;

    /// The OS user running this process, role "owner".
    ActorIdentity actor() override;
    ActionResult applyAction(const ActionTarget &target, const ActionDecider &decide) override;
    std::vector<AuditRecord> auditLog(std::int64_t afterSeq, int limit) override;
    std::vector<AuditRecord> auditRecords(const AuditFilter &filter) override;
    std::vector<ApprovalRecord> approvals(const std::string &ns, const std::string &key) override;
    std::vector<PendingApproval> pendingApprovals(int limit) override;
    std::optional<std::string> guardSetting(const std::string &name) override;

    // Run budgets (sqliterunbudgets.cpp).
    std::optional<RunRecord> findRun(const std::string &ns, const std::string &runId) override;
    std::vector<RunRecord> listRuns(const RunFilter &filter) override;
    std::int64_t sweepRuns(const std::string &ns) override;
    std::vector<RunActionRecord> runRequests(const std::string &ns,
                                             const std::string &runId) override;

    std::string_view dialect() const override { return "sqlite"; }
    /// Polled: SQLite's data_version on the calling thread's connection (sqlitechangefeed.h).
    std::unique_ptr<ChangeFeed> changeFeed() override;
    std::unique_ptr<sandbox::SandboxJournal> sandboxJournal() override;

    /// This thread's connection, opened on first use; shared with the queue and the
    /// benchmark's raw baseline so they run inside the same transactions and statement cache.
    SqliteConnection &connection();

private:
    SqliteConnection &threadConnection();

    QString m_path;
    std::shared_ptr<const Clock> m_clock;
    Options m_options;
    std::uint64_t m_serial;
    std::mutex m_connectionsMutex;
    std::vector<std::unique_ptr<SqliteConnection>> m_connections;
};

} // namespace idempo
