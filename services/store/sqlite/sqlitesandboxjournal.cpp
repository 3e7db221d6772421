// SPDX-License-Identifier: Apache-2.0
#include "sqlitesandboxjournal.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "error.h"
#include "sqliteledgerstore.h"
#include "sqlitesupport.h"

namespace idempo::sandbox {
namespace {

QVariant text(const std::string &s)
{
    return QString::fromStdString(s);
}
std::string str(const QVariant &v)
{
    return v.toString().toStdString();
}

void exec(QSqlQuery &q, const char *what)
{
    if (!q.exec())
        throw sqliteError(q.lastError(), what);
}

void exec(QSqlDatabase &db, const QString &sql, const char *what)
{
    QSqlQuery q(db);
    if (!q.exec(sql))
        throw sqliteError(q.lastError(), what);
}

/// BEGIN IMMEDIATE … COMMIT on the sandbox's own statements, rolled back on an exception.
class Batch final
{
public:
    explicit Batch(QSqlDatabase &db) : m_db(db)
    {
        exec(m_db, QStringLiteral("BEGIN IMMEDIATE"), "begin");
    }
    ~Batch()
    {
        if (!m_done)
            QSqlQuery(m_db).exec(QStringLiteral("ROLLBACK"));
    }
    void commit()
    {
        exec(m_db, QStringLiteral("COMMIT"), "commit");
        m_done = true;
    }

private:
    QSqlDatabase &m_db;
    bool m_done = false;
};

constexpr const char *EffectColumns =
    "e.provider, e.operation_key, e.received_key, e.fencing_token, e.effect_id, "
    "e.at_ms, e.confirmed_at_ms";
constexpr const char *InsertEffectSql =
    "INSERT INTO sandbox_effects (namespace, provider, operation_key, received_key, "
    "fencing_token, effect_id, at_ms, confirmed_at_ms) VALUES (?,?,?,?,?,?,?,?)";

/// An effect from a row of EffectColumns.
Effect effectFrom(const QSqlQuery &q, const std::string &ns)
{
    Effect e;
    e.ns = ns;
    e.provider = str(q.value(0));
    e.operationKey = str(q.value(1));
    e.receivedKey = str(q.value(2));
    e.fencingToken = q.value(3).toLongLong();
    e.effectId = str(q.value(4));
    e.atMs = q.value(5).toLongLong();
    e.confirmedAtMs = q.value(6).toLongLong();
    return e;
}

void insertEffect(QSqlQuery &q, const Effect &e)
{
    q.bindValue(0, text(e.ns));
    q.bindValue(1, text(e.provider));
    q.bindValue(2, text(e.operationKey));
    q.bindValue(3, text(e.receivedKey));
    q.bindValue(4, static_cast<qlonglong>(e.fencingToken));
    q.bindValue(5, text(e.effectId));
    q.bindValue(6, static_cast<qlonglong>(e.atMs));
    q.bindValue(7, static_cast<qlonglong>(e.confirmedAtMs));
    exec(q, "record provider effect");
}

} // namespace

SqliteSandboxJournal::SqliteSandboxJournal(SqliteLedgerStore &store) : m_store(store) {}

void SqliteSandboxJournal::createTables()
{
    QSqlDatabase db = m_store.connection().db;
    exec(db,
         QStringLiteral(
             "CREATE TABLE IF NOT EXISTS sandbox_runs (namespace TEXT NOT NULL, run_id TEXT NOT "
             "NULL, "
             "scenario TEXT NOT NULL, naive INTEGER NOT NULL, PRIMARY KEY (namespace, run_id))"),
         "create sandbox_runs");
    exec(db,
         QStringLiteral(
             "CREATE TABLE IF NOT EXISTS sandbox_effects (id INTEGER PRIMARY KEY, namespace TEXT "
             "NOT NULL, "
             "provider TEXT NOT NULL, operation_key TEXT NOT NULL, received_key TEXT NOT NULL, "
             "fencing_token INTEGER NOT NULL, effect_id TEXT NOT NULL, at_ms INTEGER NOT NULL, "
             "confirmed_at_ms INTEGER NOT NULL)"),
         "create sandbox_effects");
    exec(db,
         QStringLiteral("CREATE INDEX IF NOT EXISTS sandbox_effects_operation ON sandbox_effects "
                        "(namespace, operation_key)"),
         "create sandbox_effects index");
    exec(db,
         QStringLiteral("CREATE INDEX IF NOT EXISTS sandbox_effects_received ON sandbox_effects "
                        "(namespace, provider, received_key)"),
         "create sandbox_effects key index");
    exec(db,
         QStringLiteral("CREATE TABLE IF NOT EXISTS sandbox_effect_keys (namespace TEXT NOT NULL, "
                        "provider TEXT NOT NULL, "
                        "received_key TEXT NOT NULL, effect_id TEXT NOT NULL, "
                        "PRIMARY KEY (namespace, provider, received_key))"),
         "create sandbox_effect_keys");
    exec(
        db,
        QStringLiteral("CREATE TABLE IF NOT EXISTS sandbox_fault_windows (namespace TEXT NOT NULL, "
                       "operation_key TEXT NOT NULL, fault TEXT NOT NULL, PRIMARY KEY (namespace, "
                       "operation_key, fault))"),
        "create sandbox_fault_windows");
    exec(db,
         QStringLiteral("CREATE TABLE IF NOT EXISTS sandbox_queue_holders (queue TEXT PRIMARY KEY, "
                        "namespace TEXT NOT "
                        "NULL, driver TEXT NOT NULL, instance TEXT NOT NULL, lease_expires_at_ms "
                        "INTEGER NOT NULL)"),
         "create sandbox_queue_holders");
}

bool SqliteSandboxJournal::tablesExist()
{
    QSqlDatabase db = m_store.connection().db;
    QSqlQuery q(db);
    q.prepare(QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                             "('sandbox_runs', 'sandbox_effects')"));
    exec(q, "look for sandbox tables");
    q.next();
    return q.value(0).toInt() == 2;
}

void SqliteSandboxJournal::addRuns(const std::vector<RunRecord> &runs)
{
    QSqlDatabase db = m_store.connection().db;
    Batch batch(db);
    QSqlQuery q(db);
    q.prepare(QStringLiteral(
        "INSERT INTO sandbox_runs (namespace, run_id, scenario, naive) VALUES (?,?,?,?) "
        "ON CONFLICT (namespace, run_id) DO NOTHING"));
    for (const RunRecord &r : runs) {
        q.bindValue(0, text(r.ns));
        q.bindValue(1, text(r.runId));
        q.bindValue(2, text(r.scenario));
        q.bindValue(3, r.naive ? 1 : 0);
        exec(q, "record sandbox run");
    }
    q.finish();
    batch.commit();
}

void SqliteSandboxJournal::removeRuns(const std::string &ns, const std::vector<std::string> &runIds)
{
    QSqlDatabase db = m_store.connection().db;
    Batch batch(db);
    QSqlQuery q(db);
    q.prepare(QStringLiteral("DELETE FROM sandbox_runs WHERE namespace = ? AND run_id = ?"));
    for (const std::string &runId : runIds) {
        q.bindValue(0, text(ns));
        q.bindValue(1, text(runId));
        exec(q, "withdraw sandbox run");
    }
    q.finish();
    batch.commit();
}

void SqliteSandboxJournal::addEffects(const std::vector<Effect> &effects)
{
    if (effects.empty())
        return;
    QSqlDatabase db = m_store.connection().db;
    Batch batch(db);
    QSqlQuery q(db);
    q.prepare(QString::fromLatin1(InsertEffectSql));
    for (const Effect &e : effects)
        insertEffect(q, e);
    q.finish();
    batch.commit();
}

Performed SqliteSandboxJournal::perform(const Effect &proposed, bool dedupe)
{
    QSqlDatabase db = m_store.connection().db;
    Batch batch(db);
    const bool keyed = dedupe && !proposed.receivedKey.empty();
    if (keyed) {
        QSqlQuery seen(db);
        seen.prepare(
            QStringLiteral("SELECT ") + QString::fromLatin1(EffectColumns) +
            QStringLiteral(
                " FROM sandbox_effect_keys k JOIN sandbox_effects e ON e.namespace = k.namespace "
                "AND e.effect_id = k.effect_id WHERE k.namespace = ? AND k.provider = ? "
                "AND k.received_key = ?"));
        seen.bindValue(0, text(proposed.ns));
        seen.bindValue(1, text(proposed.provider));
        seen.bindValue(2, text(proposed.receivedKey));
        exec(seen, "look up a deduplicated key");
        if (seen.next()) {
            Effect original = effectFrom(seen, proposed.ns);
            seen.finish();
            batch.commit();
            return {std::move(original), true};
        }
    }
    QSqlQuery count(db);
    count.prepare(QStringLiteral(
        "SELECT count(*) FROM sandbox_effects WHERE namespace = ? AND operation_key = ?"));
    count.bindValue(0, text(proposed.ns));
    count.bindValue(1, text(proposed.operationKey));
    exec(count, "count an operation's effects");
    count.next();
    Effect e = proposed;
    e.effectId =
        e.provider + "/" + e.operationKey + "/" + std::to_string(count.value(0).toLongLong() + 1);
    count.finish();
    QSqlQuery insert(db);
    insert.prepare(QString::fromLatin1(InsertEffectSql));
    insertEffect(insert, e);
    if (keyed) {
        QSqlQuery key(db);
        key.prepare(QStringLiteral(
            "INSERT INTO sandbox_effect_keys (namespace, provider, received_key, effect_id) "
            "VALUES (?,?,?,?)"));
        key.bindValue(0, text(e.ns));
        key.bindValue(1, text(e.provider));
        key.bindValue(2, text(e.receivedKey));
        key.bindValue(3, text(e.effectId));
        exec(key, "record a deduplicating key");
    }
    batch.commit();
    return {std::move(e), false};
}

std::optional<Effect> SqliteSandboxJournal::lookup(const std::string &ns,
                                                   const std::string &provider,
                                                   const std::string &receivedKey)
{
    QSqlQuery q(m_store.connection().db);
    q.prepare(QStringLiteral("SELECT ") + QString::fromLatin1(EffectColumns) +
              QStringLiteral(" FROM sandbox_effects e WHERE e.namespace = ? AND e.provider = ? AND "
                             "e.received_key = ? "
                             "ORDER BY e.id LIMIT 1"));
    q.bindValue(0, text(ns));
    q.bindValue(1, text(provider));
    q.bindValue(2, text(receivedKey));
    exec(q, "look up an effect by key");
    if (!q.next())
        return std::nullopt;
    return effectFrom(q, ns);
}

bool SqliteSandboxJournal::openWindow(const std::string &ns, const std::string &operationKey,
                                      std::string_view fault)
{
    QSqlQuery q(m_store.connection().db);
    q.prepare(QStringLiteral(
        "INSERT OR IGNORE INTO sandbox_fault_windows (namespace, operation_key, fault) "
        "VALUES (?,?,?)"));
    q.bindValue(0, text(ns));
    q.bindValue(1, text(operationKey));
    q.bindValue(2, text(std::string(fault)));
    exec(q, "record a fault window");
    return q.numRowsAffected() == 1;
}

std::pair<std::optional<QueueHolder>, std::int64_t>
SqliteSandboxJournal::queueHolder(const std::string &queue)
{
    const std::int64_t now = m_store.nowMs();
    QSqlDatabase db = m_store.connection().db;
    QSqlQuery look(db);
    look.prepare(
        QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                       "'sandbox_queue_holders'"));
    exec(look, "look for the queue holders");
    look.next();
    if (look.value(0).toInt() == 0)
        return {std::nullopt, now};
    QSqlQuery q(db);
    q.prepare(QStringLiteral(
        "SELECT namespace, driver, instance, lease_expires_at_ms FROM sandbox_queue_holders "
        "WHERE queue = ?"));
    q.bindValue(0, text(queue));
    exec(q, "read the queue holder");
    if (!q.next())
        return {std::nullopt, now};
    return {QueueHolder{queue, str(q.value(0)), str(q.value(1)), str(q.value(2)),
                        q.value(3).toLongLong()},
            now};
}

bool SqliteSandboxJournal::takeQueue(const QueueHolder &holder,
                                     const std::optional<std::string> &previousInstance,
                                     std::int64_t leaseMs)
{
    QSqlDatabase db = m_store.connection().db;
    Batch batch(db);
    QSqlQuery current(db);
    current.prepare(QStringLiteral("SELECT instance FROM sandbox_queue_holders WHERE queue = ?"));
    current.bindValue(0, text(holder.queue));
    exec(current, "read the queue holder");
    const std::optional<std::string> held =
        current.next() ? std::optional(str(current.value(0))) : std::nullopt;
    current.finish();
    if (held != previousInstance)
        return false;
    QSqlQuery q(db);
    q.prepare(QStringLiteral(
        "INSERT OR REPLACE INTO sandbox_queue_holders (queue, namespace, driver, instance, "
        "lease_expires_at_ms) VALUES (?,?,?,?,?)"));
    q.bindValue(0, text(holder.queue));
    q.bindValue(1, text(holder.ns));
    q.bindValue(2, text(holder.driver));
    q.bindValue(3, text(holder.instance));
    q.bindValue(4, static_cast<qlonglong>(m_store.nowMs() + leaseMs));
    exec(q, "take the sandbox queue");
    batch.commit();
    return true;
}

bool SqliteSandboxJournal::renewQueue(const std::string &queue, const std::string &instance,
                                      std::int64_t leaseMs)
{
    QSqlQuery q(m_store.connection().db);
    q.prepare(QStringLiteral("UPDATE sandbox_queue_holders SET lease_expires_at_ms = ? WHERE queue "
                             "= ? AND instance = ?"));
    q.bindValue(0, static_cast<qlonglong>(m_store.nowMs() + leaseMs));
    q.bindValue(1, text(queue));
    q.bindValue(2, text(instance));
    exec(q, "renew the sandbox queue");
    return q.numRowsAffected() == 1;
}

void SqliteSandboxJournal::releaseQueue(const std::string &queue, const std::string &instance)
{
    QSqlQuery q(m_store.connection().db);
    q.prepare(QStringLiteral("DELETE FROM sandbox_queue_holders WHERE queue = ? AND instance = ?"));
    q.bindValue(0, text(queue));
    q.bindValue(1, text(instance));
    exec(q, "release the sandbox queue");
}

bool SqliteSandboxJournal::hasRuns(const std::string &ns)
{
    if (!tablesExist())
        return false;
    QSqlDatabase db = m_store.connection().db;
    QSqlQuery q(db);
    q.prepare(QStringLiteral("SELECT count(*) FROM sandbox_runs WHERE namespace = ?"));
    q.bindValue(0, text(ns));
    exec(q, "count sandbox runs");
    q.next();
    return q.value(0).toLongLong() > 0;
}

std::vector<RunRecord> SqliteSandboxJournal::runs(const std::string &ns)
{
    std::vector<RunRecord> rows;
    if (!tablesExist())
        return rows;
    QSqlDatabase db = m_store.connection().db;
    QSqlQuery q(db);
    q.setForwardOnly(true);
    q.prepare(QStringLiteral(
        "SELECT run_id, scenario, naive FROM sandbox_runs WHERE namespace = ? ORDER BY run_id"));
    q.bindValue(0, text(ns));
    exec(q, "read sandbox runs");
    while (q.next())
        rows.push_back({ns, str(q.value(0)), str(q.value(1)), q.value(2).toInt() != 0});
    return rows;
}

std::optional<RunRecord> SqliteSandboxJournal::findRun(const std::string &ns,
                                                       const std::string &runId)
{
    if (!tablesExist())
        return std::nullopt;
    QSqlQuery q(m_store.connection().db);
    q.prepare(QStringLiteral(
        "SELECT scenario, naive FROM sandbox_runs WHERE namespace = ? AND run_id = ?"));
    q.bindValue(0, text(ns));
    q.bindValue(1, text(runId));
    exec(q, "read a sandbox run");
    if (!q.next())
        return std::nullopt;
    return RunRecord{ns, runId, str(q.value(0)), q.value(1).toInt() != 0};
}

std::vector<Effect> SqliteSandboxJournal::effects(const std::string &ns)
{
    std::vector<Effect> rows;
    if (!tablesExist())
        return rows;
    QSqlDatabase db = m_store.connection().db;
    QSqlQuery q(db);
    q.setForwardOnly(true);
    q.prepare(
        QStringLiteral("SELECT ") + QString::fromLatin1(EffectColumns) +
        QStringLiteral(
            " FROM sandbox_effects e WHERE e.namespace = ? ORDER BY e.operation_key, e.effect_id"));
    q.bindValue(0, text(ns));
    exec(q, "read provider effects");
    while (q.next())
        rows.push_back(effectFrom(q, ns));
    return rows;
}

std::vector<HistoryRow> SqliteSandboxJournal::history(const std::string &ns)
{
    QSqlQuery q(m_store.connection().db);
    q.setForwardOnly(true);
    q.prepare(QStringLiteral("SELECT o.operation_key, e.from_state, e.to_state, e.fencing_token "
                             "FROM operation_events e JOIN operations o ON o.id = e.operation_id "
                             "WHERE o.namespace = ? ORDER BY e.operation_id, e.id"));
    q.bindValue(0, text(ns));
    exec(q, "read history");
    std::vector<HistoryRow> rows;
    while (q.next()) {
        HistoryRow row;
        row.operationKey = str(q.value(0));
        if (!q.value(1).isNull())
            row.from = parseState(str(q.value(1)));
        row.to = parseState(str(q.value(2))).value_or(OperationState::Received);
        row.fencingToken = q.value(3).toLongLong();
        rows.push_back(std::move(row));
    }
    return rows;
}

} // namespace idempo::sandbox

namespace idempo {

std::unique_ptr<sandbox::SandboxJournal> SqliteLedgerStore::sandboxJournal()
{
    return std::make_unique<sandbox::SqliteSandboxJournal>(*this);
}

} // namespace idempo
