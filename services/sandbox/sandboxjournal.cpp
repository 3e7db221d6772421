// SPDX-License-Identifier: Apache-2.0
#include "sandboxjournal.h"

#include "error.h"
#include "sqliteledgerstore.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

namespace idempo::sandbox {
namespace {

QVariant text(const std::string &s) { return QString::fromStdString(s); }
std::string str(const QVariant &v) { return v.toString().toStdString(); }

void exec(QSqlQuery &q, const char *what)
{
    if (!q.exec())
        throw Error(ErrorCode::Internal, std::string(what) + ": " + q.lastError().text().toStdString());
}

void exec(QSqlDatabase &db, const QString &sql, const char *what)
{
    QSqlQuery q(db);
    if (!q.exec(sql))
        throw Error(ErrorCode::Internal, std::string(what) + ": " + q.lastError().text().toStdString());
}

/// BEGIN IMMEDIATE … COMMIT on the sandbox's own statements, rolled back on an exception.
class Batch final
{
public:
    explicit Batch(QSqlDatabase &db) : m_db(db) { exec(m_db, QStringLiteral("BEGIN IMMEDIATE"), "begin"); }
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

} // namespace

SandboxJournal::SandboxJournal(SqliteLedgerStore &store) : m_store(store) {}

void SandboxJournal::createTables()
{
    QSqlDatabase db = m_store.connection().db;
    exec(db,
         QStringLiteral("CREATE TABLE IF NOT EXISTS sandbox_runs (namespace TEXT NOT NULL, run_id TEXT NOT NULL, "
                        "scenario TEXT NOT NULL, naive INTEGER NOT NULL, PRIMARY KEY (namespace, run_id))"),
         "create sandbox_runs");
    exec(db,
         QStringLiteral("CREATE TABLE IF NOT EXISTS sandbox_effects (id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, "
                        "provider TEXT NOT NULL, operation_key TEXT NOT NULL, received_key TEXT NOT NULL, "
                        "fencing_token INTEGER NOT NULL, effect_id TEXT NOT NULL, at_ms INTEGER NOT NULL, "
                        "confirmed_at_ms INTEGER NOT NULL)"),
         "create sandbox_effects");
    exec(db, QStringLiteral("CREATE INDEX IF NOT EXISTS sandbox_effects_operation ON sandbox_effects "
                            "(namespace, operation_key)"),
         "create sandbox_effects index");
}

bool SandboxJournal::tablesExist()
{
    QSqlDatabase db = m_store.connection().db;
    QSqlQuery q(db);
    q.prepare(QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                             "('sandbox_runs', 'sandbox_effects')"));
    exec(q, "look for sandbox tables");
    q.next();
    return q.value(0).toInt() == 2;
}

void SandboxJournal::addRuns(const std::vector<RunRecord> &runs)
{
    QSqlDatabase db = m_store.connection().db;
    Batch batch(db);
    QSqlQuery q(db);
    q.prepare(QStringLiteral("INSERT INTO sandbox_runs (namespace, run_id, scenario, naive) VALUES (?,?,?,?)"));
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

void SandboxJournal::addEffects(const std::vector<Effect> &effects)
{
    if (effects.empty())
        return;
    QSqlDatabase db = m_store.connection().db;
    Batch batch(db);
    QSqlQuery q(db);
    q.prepare(QStringLiteral("INSERT INTO sandbox_effects (namespace, provider, operation_key, received_key, "
                             "fencing_token, effect_id, at_ms, confirmed_at_ms) VALUES (?,?,?,?,?,?,?,?)"));
    for (const Effect &e : effects) {
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
    q.finish();
    batch.commit();
}

bool SandboxJournal::hasRuns(const std::string &ns)
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

std::vector<RunRecord> SandboxJournal::runs(const std::string &ns)
{
    std::vector<RunRecord> rows;
    if (!tablesExist())
        return rows;
    QSqlDatabase db = m_store.connection().db;
    QSqlQuery q(db);
    q.setForwardOnly(true);
    q.prepare(QStringLiteral("SELECT run_id, scenario, naive FROM sandbox_runs WHERE namespace = ? ORDER BY run_id"));
    q.bindValue(0, text(ns));
    exec(q, "read sandbox runs");
    while (q.next())
        rows.push_back({ns, str(q.value(0)), str(q.value(1)), q.value(2).toInt() != 0});
    return rows;
}

std::vector<Effect> SandboxJournal::effects(const std::string &ns)
{
    std::vector<Effect> rows;
    if (!tablesExist())
        return rows;
    QSqlDatabase db = m_store.connection().db;
    QSqlQuery q(db);
    q.setForwardOnly(true);
    q.prepare(QStringLiteral("SELECT provider, operation_key, received_key, fencing_token, effect_id, at_ms, "
                             "confirmed_at_ms FROM sandbox_effects WHERE namespace = ? ORDER BY operation_key, effect_id"));
    q.bindValue(0, text(ns));
    exec(q, "read provider effects");
    while (q.next()) {
        Effect e;
        e.ns = ns;
        e.provider = str(q.value(0));
        e.operationKey = str(q.value(1));
        e.receivedKey = str(q.value(2));
        e.fencingToken = q.value(3).toLongLong();
        e.effectId = str(q.value(4));
        e.atMs = q.value(5).toLongLong();
        e.confirmedAtMs = q.value(6).toLongLong();
        rows.push_back(std::move(e));
    }
    return rows;
}

} // namespace idempo::sandbox
