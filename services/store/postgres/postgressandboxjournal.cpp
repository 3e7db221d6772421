// SPDX-License-Identifier: Apache-2.0
#include "postgressandboxjournal.h"

#include "pgconnection.h"
#include "postgresledgerstore.h"

namespace idempo::sandbox {
namespace {

constexpr const char *CreateSql[] = {
    "CREATE TABLE IF NOT EXISTS sandbox_runs (namespace text COLLATE \"C\" NOT NULL, run_id text "
    "COLLATE \"C\" NOT NULL, "
    "scenario text NOT NULL, naive boolean NOT NULL, PRIMARY KEY (namespace, run_id))",
    "CREATE TABLE IF NOT EXISTS sandbox_effects (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY "
    "KEY, "
    "namespace text COLLATE \"C\" NOT NULL, provider text NOT NULL, operation_key text COLLATE "
    "\"C\" NOT NULL, "
    "received_key text COLLATE \"C\" NOT NULL, fencing_token bigint NOT NULL, effect_id text "
    "COLLATE \"C\" NOT NULL, "
    "at_ms bigint NOT NULL, confirmed_at_ms bigint NOT NULL)",
    "CREATE INDEX IF NOT EXISTS sandbox_effects_operation ON sandbox_effects (namespace, "
    "operation_key)",
    "CREATE INDEX IF NOT EXISTS sandbox_effects_received ON sandbox_effects (namespace, provider, "
    "received_key)",
    "CREATE TABLE IF NOT EXISTS sandbox_effect_keys (namespace text COLLATE \"C\" NOT NULL, "
    "provider text NOT NULL, "
    "received_key text COLLATE \"C\" NOT NULL, effect_id text COLLATE \"C\" NOT NULL, "
    "PRIMARY KEY (namespace, provider, received_key))",
    "CREATE TABLE IF NOT EXISTS sandbox_fault_windows (namespace text COLLATE \"C\" NOT NULL, "
    "operation_key text COLLATE \"C\" NOT NULL, fault text NOT NULL, PRIMARY KEY (namespace, "
    "operation_key, fault))",
    "CREATE TABLE IF NOT EXISTS sandbox_queue_holders (queue text COLLATE \"C\" PRIMARY KEY, "
    "namespace text NOT NULL, "
    "driver text NOT NULL, instance text NOT NULL, lease_expires_at_ms bigint NOT NULL)",
    // Reconciling a sandbox operation reads its provider's journal: every role that may look at
    // or act on the ledger reads these tables (only the sandbox's runner writes them).
    "DO $$ DECLARE r text; BEGIN FOR r IN SELECT rolname FROM pg_catalog.pg_roles WHERE rolname "
    "IN ('idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP EXECUTE "
    "pg_catalog.format('GRANT SELECT ON sandbox_runs, sandbox_effects, sandbox_effect_keys, "
    "sandbox_fault_windows, sandbox_queue_holders TO %I', r); END LOOP; END $$",
};

/// The ledger's clock in milliseconds ($1, $2: PostgresLedgerStore::clockParams()).
const std::string kNow = "idempo.now_ms($1::bigint, $2::bigint)";

constexpr std::string_view EffectColumns =
    "e.provider, e.operation_key, e.received_key, e.fencing_token, e.effect_id, e.at_ms, "
    "e.confirmed_at_ms";

constexpr std::string_view InsertEffectSql =
    "INSERT INTO sandbox_effects (namespace, provider, operation_key, received_key, fencing_token, "
    "effect_id, at_ms, "
    "confirmed_at_ms) VALUES ($1, $2, $3, $4, $5::bigint, $6, $7::bigint, $8::bigint)";

/// A unit separator between namespace and key: neither can hold it ambiguously in a lock name.
std::string lockName(const std::string &ns, const std::string &key)
{
    return ns + '\x1f' + key;
}

Effect effectFrom(const PgResult &r, int row, const std::string &ns)
{
    Effect e;
    e.ns = ns;
    e.provider = r.text(row, 0);
    e.operationKey = r.text(row, 1);
    e.receivedKey = r.text(row, 2);
    e.fencingToken = r.integer(row, 3);
    e.effectId = r.text(row, 4);
    e.atMs = r.integer(row, 5);
    e.confirmedAtMs = r.integer(row, 6);
    return e;
}

PgParams effectParams(const Effect &e)
{
    PgParams p;
    p.text(e.ns)
        .text(e.provider)
        .text(e.operationKey)
        .text(e.receivedKey)
        .integer(e.fencingToken)
        .text(e.effectId)
        .integer(e.atMs)
        .integer(e.confirmedAtMs);
    return p;
}

} // namespace

PostgresSandboxJournal::PostgresSandboxJournal(PostgresLedgerStore &store) : m_store(store) {}

void PostgresSandboxJournal::createTables()
{
    PgConnection &c = m_store.connection();
    PgTransaction tx(c);
    // CREATE … IF NOT EXISTS races with itself in PostgreSQL: workers starting together take turns.
    c.exec("lock the sandbox tables' creation",
           "SELECT pg_advisory_xact_lock(hashtext('idempo-sandbox-tables'))");
    for (const char *sql : CreateSql)
        c.exec("create the sandbox tables", sql);
    tx.commit();
}

bool PostgresSandboxJournal::tablesExist()
{
    const PgResult r =
        m_store.connection().execPrepared("look for sandbox tables", "sandbox_tables",
                                          "SELECT to_regclass('sandbox_runs') IS NOT NULL AND "
                                          "to_regclass('sandbox_effects') IS NOT NULL",
                                          {});
    return r.text(0, 0) == "t";
}

void PostgresSandboxJournal::addRuns(const std::vector<RunRecord> &runs)
{
    PgConnection &c = m_store.connection();
    PgTransaction tx(c);
    for (const RunRecord &r : runs) {
        PgParams p;
        p.text(r.ns).text(r.runId).text(r.scenario).boolean(r.naive);
        c.execPrepared("record sandbox run", "sandbox_add_run",
                       "INSERT INTO sandbox_runs (namespace, run_id, scenario, naive) VALUES ($1, "
                       "$2, $3, $4::boolean) "
                       "ON CONFLICT (namespace, run_id) DO NOTHING",
                       p);
    }
    tx.commit();
}

void PostgresSandboxJournal::removeRuns(const std::string &ns,
                                        const std::vector<std::string> &runIds)
{
    PgConnection &c = m_store.connection();
    PgTransaction tx(c);
    for (const std::string &runId : runIds) {
        PgParams p;
        p.text(ns).text(runId);
        c.execPrepared("withdraw sandbox run", "sandbox_remove_run",
                       "DELETE FROM sandbox_runs WHERE namespace = $1 AND run_id = $2", p);
    }
    tx.commit();
}

void PostgresSandboxJournal::addEffects(const std::vector<Effect> &effects)
{
    if (effects.empty())
        return;
    PgConnection &c = m_store.connection();
    PgTransaction tx(c);
    for (const Effect &e : effects)
        c.execPrepared("record provider effect", "sandbox_add_effect", InsertEffectSql,
                       effectParams(e));
    tx.commit();
}

Performed PostgresSandboxJournal::perform(const Effect &proposed, bool dedupe)
{
    PgConnection &c = m_store.connection();
    PgTransaction tx(c);
    PgParams lock;
    lock.text(lockName(proposed.ns, proposed.operationKey));
    c.execPrepared("lock the operation's effects", "sandbox_effect_lock",
                   "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", lock);
    PgParams op;
    op.text(proposed.ns).text(proposed.operationKey);
    const PgResult count = c.execPrepared(
        "count an operation's effects", "sandbox_effect_count",
        "SELECT count(*) FROM sandbox_effects WHERE namespace = $1 AND operation_key = $2", op);
    Effect e = proposed;
    e.effectId = e.provider + "/" + e.operationKey + "/" + std::to_string(count.integer(0, 0) + 1);
    if (dedupe && !e.receivedKey.empty()) {
        PgParams key;
        key.text(e.ns).text(e.provider).text(e.receivedKey).text(e.effectId);
        // The primary key is the dedupe: a key seen before inserts nothing, and the original
        // effect answers (a concurrent insert of the same key is waited for, then conflicts).
        const PgResult inserted =
            c.execPrepared("record a deduplicating key", "sandbox_effect_key",
                           "INSERT INTO sandbox_effect_keys (namespace, provider, received_key, "
                           "effect_id) VALUES ($1, $2, $3, $4) "
                           "ON CONFLICT DO NOTHING RETURNING effect_id",
                           key);
        if (inserted.rows() == 0) {
            PgParams seen;
            seen.text(e.ns).text(e.provider).text(e.receivedKey);
            const PgResult original =
                c.execPrepared("look up a deduplicated key", "sandbox_effect_original",
                               "SELECT " + std::string(EffectColumns) +
                                   " FROM sandbox_effect_keys k JOIN sandbox_effects e ON "
                                   "e.namespace = k.namespace "
                                   "AND e.effect_id = k.effect_id WHERE k.namespace = $1 AND "
                                   "k.provider = $2 AND k.received_key = $3",
                               seen);
            tx.commit();
            return {effectFrom(original, 0, e.ns), true};
        }
    }
    c.execPrepared("record provider effect", "sandbox_add_effect", InsertEffectSql,
                   effectParams(e));
    tx.commit();
    return {std::move(e), false};
}

std::optional<Effect> PostgresSandboxJournal::lookup(const std::string &ns,
                                                     const std::string &provider,
                                                     const std::string &receivedKey)
{
    PgParams p;
    p.text(ns).text(provider).text(receivedKey);
    const PgResult r =
        m_store.connection().execPrepared("look up an effect by key", "sandbox_effect_lookup",
                                          "SELECT " + std::string(EffectColumns) +
                                              " FROM sandbox_effects e WHERE e.namespace = $1 AND "
                                              "e.provider = $2 AND e.received_key = $3 "
                                              "ORDER BY e.id LIMIT 1",
                                          p);
    if (r.rows() == 0)
        return std::nullopt;
    return effectFrom(r, 0, ns);
}

bool PostgresSandboxJournal::openWindow(const std::string &ns, const std::string &operationKey,
                                        std::string_view fault)
{
    PgParams p;
    p.text(ns).text(operationKey).text(fault);
    const PgResult r = m_store.connection().execPrepared(
        "record a fault window", "sandbox_fault_window",
        "INSERT INTO sandbox_fault_windows (namespace, operation_key, fault) VALUES ($1, $2, $3) "
        "ON CONFLICT DO NOTHING RETURNING 1",
        p);
    return r.rows() == 1;
}

std::pair<std::optional<QueueHolder>, std::int64_t>
PostgresSandboxJournal::queueHolder(const std::string &queue)
{
    PgParams p = m_store.clockParams();
    p.text(queue);
    // One statement: the clock and the row are read together, whether or not a row exists.
    const PgResult r = m_store.connection().exec(
        "read the queue holder",
        "SELECT " + kNow +
            ", h.namespace, h.driver, h.instance, h.lease_expires_at_ms FROM (SELECT 1) one "
            "LEFT JOIN sandbox_queue_holders h ON h.queue = $3",
        p);
    const std::int64_t now = r.integer(0, 0);
    if (r.isNull(0, 1))
        return {std::nullopt, now};
    return {QueueHolder{queue, r.text(0, 1), r.text(0, 2), r.text(0, 3), r.integer(0, 4)}, now};
}

bool PostgresSandboxJournal::takeQueue(const QueueHolder &holder,
                                       const std::optional<std::string> &previousInstance,
                                       std::int64_t leaseMs)
{
    PgParams p = m_store.clockParams();
    p.text(holder.queue).text(holder.ns).text(holder.driver).text(holder.instance).integer(leaseMs);
    PgConnection &c = m_store.connection();
    if (!previousInstance) {
        return c.exec("take the sandbox queue",
                      "INSERT INTO sandbox_queue_holders (queue, namespace, driver, instance, "
                      "lease_expires_at_ms) "
                      "VALUES ($3, $4, $5, $6, " +
                          kNow + " + $7::bigint) ON CONFLICT (queue) DO NOTHING RETURNING 1",
                      p)
                   .rows() == 1;
    }
    p.text(*previousInstance);
    return c.exec("take the sandbox queue",
                  "UPDATE sandbox_queue_holders SET namespace = $4, driver = $5, instance = $6, "
                  "lease_expires_at_ms = " +
                      kNow + " + $7::bigint WHERE queue = $3 AND instance = $8 RETURNING 1",
                  p)
               .rows() == 1;
}

bool PostgresSandboxJournal::renewQueue(const std::string &queue, const std::string &instance,
                                        std::int64_t leaseMs)
{
    PgParams p = m_store.clockParams();
    p.text(queue).text(instance).integer(leaseMs);
    return m_store.connection()
               .execPrepared("renew the sandbox queue", "sandbox_renew_queue",
                             "UPDATE sandbox_queue_holders SET lease_expires_at_ms = " + kNow +
                                 " + $5::bigint WHERE queue = $3 AND instance = $4 RETURNING 1",
                             p)
               .rows() == 1;
}

void PostgresSandboxJournal::releaseQueue(const std::string &queue, const std::string &instance)
{
    PgParams p;
    p.text(queue).text(instance);
    m_store.connection().exec(
        "release the sandbox queue",
        "DELETE FROM sandbox_queue_holders WHERE queue = $1 AND instance = $2", p);
}

bool PostgresSandboxJournal::hasRuns(const std::string &ns)
{
    if (!tablesExist())
        return false;
    PgParams p;
    p.text(ns);
    const PgResult r = m_store.connection().execPrepared(
        "count sandbox runs", "sandbox_has_runs",
        "SELECT EXISTS (SELECT 1 FROM sandbox_runs WHERE namespace = $1)", p);
    return r.text(0, 0) == "t";
}

std::vector<RunRecord> PostgresSandboxJournal::runs(const std::string &ns)
{
    std::vector<RunRecord> rows;
    if (!tablesExist())
        return rows;
    PgParams p;
    p.text(ns);
    const PgResult r = m_store.connection().execPrepared(
        "read sandbox runs", "sandbox_runs",
        "SELECT run_id, scenario, naive FROM sandbox_runs WHERE namespace = $1 ORDER BY run_id", p);
    for (int i = 0; i < r.rows(); ++i)
        rows.push_back({ns, r.text(i, 0), r.text(i, 1), r.text(i, 2) == "t"});
    return rows;
}

std::optional<RunRecord> PostgresSandboxJournal::findRun(const std::string &ns,
                                                         const std::string &runId)
{
    if (!tablesExist())
        return std::nullopt;
    PgParams p;
    p.text(ns).text(runId);
    const PgResult r = m_store.connection().execPrepared(
        "read a sandbox run", "sandbox_find_run",
        "SELECT scenario, naive FROM sandbox_runs WHERE namespace = $1 AND run_id = $2", p);
    if (r.rows() == 0)
        return std::nullopt;
    return RunRecord{ns, runId, r.text(0, 0), r.text(0, 1) == "t"};
}

std::vector<Effect> PostgresSandboxJournal::effects(const std::string &ns)
{
    std::vector<Effect> rows;
    if (!tablesExist())
        return rows;
    PgParams p;
    p.text(ns);
    const PgResult r = m_store.connection().execPrepared(
        "read provider effects", "sandbox_effects",
        "SELECT " + std::string(EffectColumns) +
            " FROM sandbox_effects e WHERE e.namespace = $1 ORDER BY e.operation_key, e.effect_id",
        p);
    for (int i = 0; i < r.rows(); ++i)
        rows.push_back(effectFrom(r, i, ns));
    return rows;
}

std::vector<HistoryRow> PostgresSandboxJournal::history(const std::string &ns)
{
    m_store.requireSchema();
    PgParams p;
    p.text(ns);
    const PgResult r = m_store.connection().execPrepared(
        "read history", "sandbox_history",
        "SELECT o.operation_key, e.from_state, e.to_state, e.fencing_token "
        "FROM operation_events e JOIN operations o ON o.id = e.operation_id "
        "WHERE o.namespace = $1 ORDER BY e.operation_id, e.id",
        p);
    std::vector<HistoryRow> rows;
    rows.reserve(static_cast<std::size_t>(r.rows()));
    for (int i = 0; i < r.rows(); ++i) {
        HistoryRow row;
        row.operationKey = r.text(i, 0);
        if (!r.isNull(i, 1))
            row.from = parseState(r.text(i, 1));
        row.to = parseState(r.text(i, 2)).value_or(OperationState::Received);
        row.fencingToken = r.integer(i, 3);
        rows.push_back(std::move(row));
    }
    return rows;
}

} // namespace idempo::sandbox

namespace idempo {

std::unique_ptr<sandbox::SandboxJournal> PostgresLedgerStore::sandboxJournal()
{
    return std::make_unique<sandbox::PostgresSandboxJournal>(*this);
}

} // namespace idempo
