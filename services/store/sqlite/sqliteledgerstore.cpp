// SPDX-License-Identifier: Apache-2.0
#include "sqliteledgerstore.h"

#include <atomic>
#include <unordered_map>

#include <nlohmann/json.hpp>
#include <pwd.h>
#include <unistd.h>

#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QSqlRecord>
#include <QVariant>

#include "actiontransaction.h"
#include "auditchain.h"
#include "error.h"
#include "keyprefix.h"
#include "ledgerrules.h"
#include "migrations.h"
#include "sqliteledgerrows.h"
#include "sqliteoutbox.h"
#include "sqliterunbudgets.h"
#include "sqlitesupport.h"
#include "transitiontable.h"

namespace idempo {
namespace {

using namespace sqliterows;

std::atomic<std::uint64_t> g_storeSerial{0};
std::atomic<std::uint64_t> g_threadSerial{0};

/// Below this many matching keys a key-prefix listing walks the key index and sorts by id.
constexpr int kRarePrefixRows = 2000;

std::int64_t insertOperation(SqliteConnection &db, const Operation &op)
{
    Statement q = run(
        db,
        QStringLiteral(
            "INSERT INTO operations (namespace, operation_key, run_id, step_id, target, tool_kind, "
            "state, payload, payload_fingerprint, fingerprint_fields, attempt, max_attempts, "
            "lease_owner, lease_expires_at_ms, fencing_token, created_at_ms, updated_at_ms, "
            "operation_version, schema_version, value_minor, value_currency) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        {text(op.ns),
         text(op.key),
         text(op.runId),
         text(op.stepId),
         text(op.target),
         text(std::string(toolKindName(op.kind))),
         text(std::string(stateName(op.state))),
         text(op.payload),
         text(op.fingerprint),
         text(nlohmann::json(op.fingerprintFields).dump()),
         op.attempt,
         op.maxAttempts,
         text(op.leaseOwner),
         optionalInt(op.leaseExpiresAtMs),
         static_cast<qlonglong>(op.fencingToken),
         static_cast<qlonglong>(op.createdAtMs),
         static_cast<qlonglong>(op.updatedAtMs),
         static_cast<qlonglong>(op.version),
         op.schemaVersion,
         op.value ? QVariant(static_cast<qlonglong>(op.value->minorUnits)) : QVariant(),
         op.value ? text(op.value->currency) : QVariant()},
        "insert operation");
    return q->lastInsertId().toLongLong();
}

void deleteOperation(SqliteConnection &db, std::int64_t id)
{
    run(db, QStringLiteral("DELETE FROM operation_events WHERE operation_id = ?"),
        {static_cast<qlonglong>(id)}, "delete history");
    run(db, QStringLiteral("DELETE FROM operations WHERE id = ?"), {static_cast<qlonglong>(id)},
        "delete operation");
}

void recordSuppression(SqliteConnection &db, const ClaimRequest &request, ClaimOutcome outcome,
                       OperationState state, std::int64_t nowMs)
{
    run(db,
        QStringLiteral("INSERT INTO suppressions (namespace, operation_key, at_ms, outcome, state, "
                       "source, fingerprint) VALUES (?,?,?,?,?,?,?)"),
        {text(request.ns), text(request.key), static_cast<qlonglong>(nowMs),
         text(std::string(claimOutcomeName(outcome))), text(std::string(stateName(state))),
         text(request.owner), text(request.fingerprint)},
        "record suppression");
}

/// The compare-and-set of transition(), inside the caller's write transaction.
Operation writeTransition(SqliteConnection &db, const TransitionRequest &request,
                          std::int64_t nowMs)
{
    std::optional<Operation> existing = selectOperation(db, request.ns, request.key);
    checkTransition(existing ? &*existing : nullptr, request);

    Operation op = *existing;
    applyTransition(op, request, nowMs, [&] { return nextFencingToken(db); });
    updateOperation(db, op, existing->version);
    appendEvent(db, op, existing->state, request.actor, request.detail);
    return op;
}

int readSchemaVersion(SqliteConnection &db)
{
    Statement q =
        run(db,
            QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
                           "'schema_migrations'"),
            {}, "read schema version");
    q->next();
    if (q->value(0).toInt() == 0)
        return 0;
    Statement version =
        run(db, QStringLiteral("SELECT coalesce(max(version), 0) FROM schema_migrations"), {},
            "read schema version");
    version->next();
    return version->value(0).toInt();
}

} // namespace

SqliteLedgerStore::SqliteLedgerStore(const QString &path, std::shared_ptr<const Clock> clock)
    : SqliteLedgerStore(path, std::move(clock), Options{})
{
}

SqliteLedgerStore::SqliteLedgerStore(const QString &path, std::shared_ptr<const Clock> clock,
                                     Options options)
    : m_path(path), m_clock(std::move(clock)), m_options(std::move(options)),
      m_serial(++g_storeSerial)
{
    // migrate() upgrades an older schema and refuses a newer one; a read-only open changes nothing.
    const int current = schemaVersion();
    const int latest = latestSchemaVersion(QStringLiteral("sqlite"));
    if (current == latest)
        return;
    if (!m_options.readOnly) {
        migrate();
        return;
    }
    const std::string ledger = "ledger " + describe();
    if (current == 0)
        throw Error(ErrorCode::SchemaMismatch,
                    ledger + " holds no Idempo schema; create it with 'idempo init'");
    throw Error(
        ErrorCode::SchemaMismatch,
        ledger + " has schema version " + std::to_string(current) +
            (current < latest
                 ? ", older than this build's " + std::to_string(latest) +
                       "; this command only reads, so it opens the ledger read-only and does "
                       "not upgrade it: run 'idempo init' on it where it is writable"
                 : ", newer than this build's " + std::to_string(latest) + "; upgrade idempo"));
}

SqliteLedgerStore::~SqliteLedgerStore()
{
    std::lock_guard lock(m_connectionsMutex);
    for (auto &c : m_connections) {
        const QString name = c->db.connectionName();
        c.reset(); // statements and handle go before the connection is removed
        QSqlDatabase::removeDatabase(name);
    }
}

SqliteConnection &SqliteLedgerStore::connection()
{
    // Keyed by store serial: serials are never reused, unlike addresses and thread ids, so a
    // thread cannot pick up a connection of a store that is gone.
    thread_local std::unordered_map<std::uint64_t, SqliteConnection *> mine;
    if (auto found = mine.find(m_serial); found != mine.end())
        return *found->second;

    thread_local const std::uint64_t threadSerial = ++g_threadSerial;
    const QString name = QStringLiteral("idempo-sqlite-%1-%2").arg(m_serial).arg(threadSerial);
    auto connection = std::make_unique<SqliteConnection>();
    connection->db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
    try {
        openLedgerFile(*connection, m_path,
                       {.busyTimeoutMs = m_options.busyTimeoutMs,
                        .synchronous = m_options.synchronous,
                        .readOnly = m_options.readOnly});
    } catch (const Error &) {
        connection.reset();
        QSqlDatabase::removeDatabase(name);
        throw;
    }
    SqliteConnection *raw = connection.get();
    {
        std::lock_guard lock(m_connectionsMutex);
        m_connections.push_back(std::move(connection));
    }
    mine.emplace(m_serial, raw);
    return *raw;
}

std::string SqliteLedgerStore::describe() const
{
    return "sqlite:" + m_path.toStdString();
}

int SqliteLedgerStore::schemaVersion()
{
    SqliteConnection &db = connection();
    return readSchemaVersion(db);
}

void SqliteLedgerStore::migrate()
{
    const QString dialect = QStringLiteral("sqlite");
    SqliteConnection &db = connection();
    WriteTransaction tx(db);
    run(db,
        QStringLiteral("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                       "name TEXT NOT NULL, applied_at_ms INTEGER NOT NULL)"),
        {}, "create schema_migrations");
    const int current = readSchemaVersion(db);
    const int latest = latestSchemaVersion(dialect);
    if (current > latest) {
        throw Error(ErrorCode::SchemaMismatch,
                    "ledger " + describe() + " has schema version " + std::to_string(current) +
                        ", newer than this build's " + std::to_string(latest) + "; upgrade idempo");
    }
    for (const Migration &m : migrations(dialect)) {
        if (m.version <= current)
            continue;
        for (const QString &statement : m.statements)
            run(db, statement, {}, "migrate");
        run(db,
            QStringLiteral(
                "INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?,?,?)"),
            {m.version, m.name, static_cast<qlonglong>(m_clock->nowMs())}, "record migration");
    }
    tx.commit();
}

std::int64_t SqliteLedgerStore::nowMs()
{
    return m_clock->nowMs();
}

ClaimResult SqliteLedgerStore::claim(const ClaimRequest &request)
{
    SqliteConnection &db = connection();
    WriteTransaction tx(db);
    const std::int64_t now = m_clock->nowMs();
    std::optional<Operation> existing = selectOperation(db, request.ns, request.key);
    const ClaimPlan plan = planClaim(existing ? &*existing : nullptr, request, now);
    if (plan.outcome == ClaimOutcome::Claimed) {
        // A re-dispatch is judged and charged by the run its record belongs to, whatever run
        // the claim names: a retry that leaves the run id out must not slip past a halt.
        ClaimRequest charged = request;
        if (plan.write == ClaimWrite::Dispatch)
            charged.runId = existing->runId;
        if (auto exhausted = chargeRun(db, charged, plan.write == ClaimWrite::Dispatch, now)) {
            ClaimResult refused{ClaimOutcome::BudgetExhausted,
                                plan.write == ClaimWrite::Dispatch ? *existing
                                                                   : newOperation(request, now),
                                false, std::move(exhausted)};
            recordSuppression(db, request, refused.outcome, refused.operation.state, now);
            tx.commit();
            return refused;
        }
    }

    ClaimResult result{plan.outcome, {}, plan.projectionDiffers};
    switch (plan.write) {
    case ClaimWrite::None:
        result.operation = *existing;
        break;
    case ClaimWrite::Create: {
        if (existing)
            deleteOperation(db, existing->id);
        Operation op = newOperation(request, now);
        if (!request.requiresApproval)
            startDispatch(op, request.owner, request.leaseMs, now, nextFencingToken(db));
        op.id = insertOperation(db, op);
        appendEvent(db, op, std::nullopt, request.owner,
                    existing ? "created (previous record expired)" : "created");
        result.operation = op;
        break;
    }
    case ClaimWrite::Dispatch:
    case ClaimWrite::Revoke: {
        Operation op = *existing;
        std::string detail;
        if (plan.write == ClaimWrite::Dispatch) {
            detail = op.state == OperationState::Dispatching
                         ? "lease of " + op.leaseOwner + " lapsed; taken over"
                         : std::string("claimed");
            startDispatch(op, request.owner, request.leaseMs, now, nextFencingToken(db));
        } else {
            revokeLease(op, now, nextFencingToken(db));
            detail = op.errorDetail;
        }
        op.version += 1;
        updateOperation(db, op, existing->version);
        appendEvent(db, op, existing->state, request.owner, detail);
        result.operation = op;
        break;
    }
    }
    if (plan.outcome != ClaimOutcome::Claimed && !plan.projectionDiffers)
        recordSuppression(db, request, plan.outcome, result.operation.state, now);
    tx.commit();
    return result;
}

Operation SqliteLedgerStore::transition(const TransitionRequest &request)
{
    SqliteConnection &db = connection();
    WriteTransaction tx(db);
    Operation op = writeTransition(db, request, m_clock->nowMs());
    tx.commit();
    return op;
}

OutboxWrite SqliteLedgerStore::transitionAndSend(const TransitionRequest &request,
                                                 const std::string &queue,
                                                 const std::string &messageJson,
                                                 const std::string &headersJson)
{
    SqliteConnection &db = connection();
    WriteTransaction tx(db);
    const std::int64_t now = m_clock->nowMs();
    OutboxWrite written;
    written.operation = writeTransition(db, request, now);
    written.msgId = sendInTransaction(db, queue, messageJson, headersJson, 0, now);
    tx.commit();
    return written;
}

std::optional<Operation> SqliteLedgerStore::find(const std::string &ns, const std::string &key)
{
    SqliteConnection &db = connection();
    return selectOperation(db, ns, key);
}

std::vector<OperationEvent> SqliteLedgerStore::history(const std::string &ns,
                                                       const std::string &key)
{
    return selectHistory(connection(), ns, key);
}

std::vector<Operation> SqliteLedgerStore::list(const ListFilter &filter)
{
    const std::vector<PayloadMatch> terms = payloadTerms(filter.payload, filter.customer);
    SqliteConnection &db = connection();
    ListingOrder order = listingOrder(filter);
    // In id order, either way, the first payload term drives the scan: its side-table range is
    // in operation id order. In any other order each term is a probe of the side table's key.
    const bool down = filter.order == ListOrder::IdDescending;
    bool driven = !terms.empty() && (filter.order == ListOrder::Id || down);
    // A common first term with a state or run filter: that filter's index, in id order too,
    // drives instead and probes the term; a state none of a common customer's operations is in
    // would otherwise read all of them (372 ms for 100,000 of 1,000,000). SQLite plans blind,
    // so the term's rows are counted first, up to kRarePrefixRows, as for a key prefix.
    if (driven && (filter.state || !filter.runId.empty())) {
        Statement probe =
            run(db,
                QStringLiteral("SELECT count(*) FROM (SELECT 1 FROM payload_fields WHERE pointer "
                               "= ? AND value = ? LIMIT ?)"),
                {text(terms.front().pointer), text(terms.front().value), kRarePrefixRows},
                "list operations");
        driven = probe->next() && probe->value(0).toInt() < kRarePrefixRows;
    }
    QString sql =
        QStringLiteral("SELECT ") + kOperationColumns + QStringLiteral(" FROM operations WHERE ");
    QVariantList binds;
    if (driven) {
        sql = QStringLiteral("SELECT ") + kOperationColumns +
              QStringLiteral(" FROM payload_fields AS f CROSS JOIN operations ON id = "
                             "f.operation_id WHERE f.pointer = ? AND f.value = ? AND ");
        binds << text(terms.front().pointer) << text(terms.front().value);
        order.cursor = down && filter.afterId > 0 ? QStringLiteral("f.operation_id < ?")
                                                  : QStringLiteral("f.operation_id > ?");
        order.orderBy =
            down ? QStringLiteral("f.operation_id DESC") : QStringLiteral("f.operation_id");
    }
    sql += order.cursor;
    binds += order.binds;
    for (std::size_t i = driven ? 1 : 0; i < terms.size(); ++i) {
        sql += QStringLiteral(" AND EXISTS (SELECT 1 FROM payload_fields AS g WHERE g.pointer = ? "
                              "AND g.value = ? AND g.operation_id = id)");
        binds << text(terms[i].pointer) << text(terms[i].value);
    }
    if (!filter.ns.empty()) {
        sql += QStringLiteral(" AND namespace = ?");
        binds << text(filter.ns);
    }
    if (filter.state) {
        sql += QStringLiteral(" AND state = ?");
        binds << text(std::string(stateName(*filter.state)));
    }
    if (!filter.runId.empty()) {
        sql += QStringLiteral(" AND run_id = ?");
        binds << text(filter.runId);
    }
    if (!filter.keyPrefix.empty()) {
        // A range, not LIKE or substr: '%' and '_' stay plain characters and an index serves it.
        // SQLite keeps no statistics and plans bound parameters blind, so it cannot tell a rare
        // prefix (walk the key index, sort the few ids) from a common one (walk ids and stop at
        // the limit; sorting a million ids takes seconds). A bounded count on the key index
        // tells them apart: a rare prefix names the index, a common one takes the range off it
        // with the unary +.
        QVariantList rangeBinds{bytes(filter.keyPrefix)};
        QString range = QStringLiteral(" operation_key >= CAST(? AS TEXT)");
        if (const std::optional<std::string> upper = keyPrefixUpperBound(filter.keyPrefix)) {
            range += QStringLiteral(" AND operation_key < CAST(? AS TEXT)");
            rangeBinds << bytes(*upper);
        }
        // Listed by key, the key index serves the range and the order alike: nothing to probe.
        const bool byKey = filter.order == ListOrder::KeyAscending;
        QVariantList probeBinds = rangeBinds;
        probeBinds << kRarePrefixRows;
        const bool rare = terms.empty() && (byKey || [&] {
                              Statement probe = run(
                                  db,
                                  QStringLiteral("SELECT count(*) FROM (SELECT 1 FROM operations "
                                                 "WHERE") +
                                      range + QStringLiteral(" LIMIT ?)"),
                                  probeBinds, "list operations");
                              return probe->next() && probe->value(0).toInt() < kRarePrefixRows;
                          }());
        if (rare)
            sql.replace(QStringLiteral(" FROM operations WHERE"),
                        QStringLiteral(" FROM operations INDEXED BY operations_key WHERE"));
        sql += QStringLiteral(" AND") + (rare ? range
                                              : range.replace(QStringLiteral("operation_key"),
                                                              QStringLiteral("+operation_key")));
        binds << rangeBinds;
    }
    if (filter.updatedBeforeMs) {
        sql += QStringLiteral(" AND updated_at_ms < ?");
        binds << static_cast<qlonglong>(*filter.updatedBeforeMs);
    }
    sql += QStringLiteral(" ORDER BY ") + order.orderBy + QStringLiteral(" LIMIT ?");
    binds << order.orderBinds << filter.limit;
    Statement q = run(db, sql, binds, "list operations");
    std::vector<Operation> ops;
    while (q->next())
        ops.push_back(readOperation(*q));
    return ops;
}

std::vector<Suppression> SqliteLedgerStore::suppressions(const std::string &ns,
                                                         std::int64_t afterId, int limit)
{
    SqliteConnection &db = connection();
    Statement q = run(
        db,
        QStringLiteral("SELECT id, namespace, operation_key, at_ms, outcome, state, source, "
                       "fingerprint FROM suppressions WHERE id > ? AND (? = '' OR namespace = ?) "
                       "ORDER BY id LIMIT ?"),
        {static_cast<qlonglong>(afterId), text(ns), text(ns), limit}, "list suppressions");
    std::vector<Suppression> rows;
    while (q->next()) {
        Suppression s;
        s.id = q->value(0).toLongLong();
        s.ns = toStd(q->value(1));
        s.key = toStd(q->value(2));
        s.atMs = q->value(3).toLongLong();
        s.outcome = parseClaimOutcome(toStd(q->value(4))).value_or(ClaimOutcome::Replayed);
        s.state = parseState(toStd(q->value(5))).value_or(OperationState::Received);
        s.source = toStd(q->value(6));
        s.fingerprint = toStd(q->value(7));
        rows.push_back(std::move(s));
    }
    return rows;
}

std::int64_t SqliteLedgerStore::purgeExpired(const std::string &ns)
{
    SqliteConnection &db = connection();
    WriteTransaction tx(db);
    const QVariantList binds{static_cast<qlonglong>(m_clock->nowMs()), text(ns), text(ns)};
    const QString expired =
        QStringLiteral("retention_expires_at_ms <= ? AND (? = '' OR namespace = ?)");
    run(db,
        QStringLiteral("DELETE FROM operation_events WHERE operation_id IN (SELECT id FROM "
                       "operations WHERE ") +
            expired + QLatin1Char(')'),
        binds, "purge history");
    Statement q = run(db, QStringLiteral("DELETE FROM operations WHERE ") + expired, binds,
                      "purge operations");
    const std::int64_t removed = q->numRowsAffected();
    tx.commit();
    return removed;
}

std::vector<std::string> SqliteLedgerStore::namespaces()
{
    // A loose index scan: each step seeks the next namespace on the (namespace, key) and
    // (namespace, run id) keys instead of reading every record.
    Statement q =
        run(connection(),
            QStringLiteral(
                "WITH RECURSIVE o(ns) AS (SELECT min(namespace) FROM operations UNION ALL "
                "SELECT (SELECT min(namespace) FROM operations WHERE namespace > o.ns) FROM o "
                "WHERE o.ns IS NOT NULL), "
                "r(ns) AS (SELECT min(namespace) FROM runs UNION ALL "
                "SELECT (SELECT min(namespace) FROM runs WHERE namespace > r.ns) FROM r "
                "WHERE r.ns IS NOT NULL) "
                "SELECT ns FROM o WHERE ns IS NOT NULL UNION SELECT ns FROM r WHERE ns IS NOT "
                "NULL ORDER BY 1"),
            {}, "list namespaces");
    std::vector<std::string> names;
    while (q->next())
        names.push_back(toStd(q->value(0)));
    return names;
}

} // namespace idempo
