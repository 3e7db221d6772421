// SPDX-License-Identifier: Apache-2.0
#include "ledgerfixture.h"

#include <mutex>
#include <unordered_map>

#include <QtTest>

#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "recordjson.h"
#include "sqliteledgerstore.h"
#include "sqlitemessagequeue.h"

namespace idempo::test {
namespace {

/// The PostgreSQL ledger to run against (tests/pg/with-postgres.sh sets it); empty = SQLite.
std::string postgresUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

/// The PostgreSQL stores each fixture opened: advanceMs() moves all their clocks, as the
/// ManualClock the SQLite stores share moves theirs.
std::mutex g_storesMutex;
std::unordered_map<const LedgerFixture *, std::vector<std::weak_ptr<PostgresLedgerStore>>> g_stores;

/// A fresh ledger for every test: migrated on first use, then emptied.
void resetPostgresLedger(const std::string &url)
{
    PostgresLedgerStore(url).migrate();
    static PgConnection connection(url); // one for every reset: connecting costs more than emptying
    // The owner, past the audit chain's triggers: the chain and its head start again.
    connection.execScript(
        "empty the test ledger",
        "ALTER TABLE idempo.audit_log DISABLE TRIGGER USER; "
        "ALTER TABLE idempo.audit_head DISABLE TRIGGER USER; "
        "TRUNCATE idempo.operations, idempo.operation_events, idempo.suppressions, "
        "idempo.approvals, "
        "idempo.audit_log, idempo.guard_settings, idempo.dlq_replays, idempo.queue_acks, "
        "idempo.runs, idempo.run_actions RESTART "
        "IDENTITY; "
        "UPDATE idempo.audit_head SET seq = 0, hash = repeat('0', 64), updated_at_ms = NULL; "
        "ALTER TABLE idempo.audit_head ENABLE TRIGGER USER; "
        "ALTER TABLE idempo.audit_log ENABLE TRIGGER USER; "
        "ALTER SEQUENCE idempo.fencing_sequence RESTART");
}

} // namespace

LedgerFixture::LedgerFixture() : m_clock(std::make_shared<ManualClock>())
{
    if (!postgresUrl().empty())
        resetPostgresLedger(postgresUrl());
    open();
}

LedgerFixture::~LedgerFixture()
{
    std::lock_guard lock(g_storesMutex);
    g_stores.erase(this);
}

const char *LedgerFixture::storeName()
{
    return postgresUrl().empty() ? "sqlite" : "postgresql";
}

RetryPolicy LedgerFixture::steadyPolicy()
{
    return RetryPolicy([] { return 0.5; });
}

std::shared_ptr<LedgerStore> LedgerFixture::openAnother()
{
    const std::string url = postgresUrl();
    if (url.empty())
        return std::make_shared<SqliteLedgerStore>(m_dir.filePath(QStringLiteral("ledger.db")),
                                                   m_clock);
    // The server's clock, pinned to the fixture's: the contract checks expiries to the millisecond.
    auto store = std::make_shared<PostgresLedgerStore>(
        url, PostgresLedgerStore::Options{.pinnedClockMs = m_clock->nowMs()});
    std::lock_guard lock(g_storesMutex);
    g_stores[this].push_back(store);
    return store;
}

std::shared_ptr<MessageQueue> LedgerFixture::openQueue(const std::shared_ptr<LedgerStore> &store)
{
    if (auto sqlite = std::dynamic_pointer_cast<SqliteLedgerStore>(store))
        return std::make_shared<SqliteMessageQueue>(sqlite);
    return std::make_shared<PostgresMessageQueue>(
        std::dynamic_pointer_cast<PostgresLedgerStore>(store));
}

void LedgerFixture::open()
{
    QVERIFY(m_dir.isValid());
    m_store = openAnother();
    m_engine = std::make_unique<Engine>(m_store, Engine::Settings{}, steadyPolicy());
}

void LedgerFixture::advanceMs(std::int64_t ms)
{
    m_clock->advanceMs(ms);
    std::lock_guard lock(g_storesMutex);
    for (const auto &weak : g_stores[this])
        if (const auto store = weak.lock())
            store->advanceClockMs(ms);
}

void LedgerFixture::reopen()
{
    m_engine.reset();
    m_store.reset();
    open();
}

QByteArray LedgerFixture::snapshot()
{
    nlohmann::json all = nlohmann::json::array();
    ListFilter filter;
    filter.limit = 100'000;
    for (const Operation &op : m_store->list(filter)) {
        nlohmann::json events = nlohmann::json::array();
        for (const OperationEvent &e : m_store->history(op.ns, op.key))
            events.push_back(eventJson(e));
        nlohmann::json approvals = nlohmann::json::array();
        for (const ApprovalRecord &a : m_store->approvals(op.ns, op.key))
            approvals.push_back({a.approvalId, a.revision, a.decision, a.status, a.operatorName});
        all.push_back(
            {{"operation", operationJson(op)}, {"history", events}, {"approvals", approvals}});
    }
    for (const Suppression &s : m_store->suppressions({}, 0, 100'000))
        all.push_back({s.id, s.key, claimOutcomeName(s.outcome)});
    RunFilter runs;
    runs.limit = 100'000;
    for (const RunRecord &r : m_store->listRuns(runs))
        all.push_back(runJson(r));
    for (const AuditRecord &r : m_store->auditLog(0, 100'000))
        all.push_back({r.seq, r.entry.action, r.entry.target, r.hash});
    return QByteArray::fromStdString(all.dump());
}

} // namespace idempo::test
