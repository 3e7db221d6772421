// SPDX-License-Identifier: Apache-2.0
// SqliteLedgerStore's guarded actions: approvals, the audit chain and guard settings.
#include <pwd.h>
#include <unistd.h>

#include <QSqlQuery>

#include "actiontransaction.h"
#include "auditchain.h"
#include "error.h"
#include "keyprefix.h"
#include "sqlitedlqreplays.h"
#include "sqliteledgerrows.h"
#include "sqliteledgerstore.h"
#include "sqliterunbudgets.h"

namespace idempo {
namespace {

using namespace sqliterows;

/// At most this many records in a range make it rare (see auditRecords()).
constexpr int kRareAuditRows = 2000;

const QString kAuditSelect = QStringLiteral(
    "SELECT seq, at_ms, who, role, action, target, reason, before_state, after_state, "
    "approval_id, detail, prev_hash, target_prev_hash, hash FROM ");

std::vector<AuditRecord> readAudit(Statement q)
{
    std::vector<AuditRecord> rows;
    while (q->next()) {
        AuditRecord r;
        r.seq = q->value(0).toLongLong();
        r.atMs = q->value(1).toLongLong();
        r.entry = {toStd(q->value(2)), toStd(q->value(3)), toStd(q->value(4)),
                   toStd(q->value(5)), toStd(q->value(6)), toStd(q->value(7)),
                   toStd(q->value(8)), toStd(q->value(9)), toStd(q->value(10))};
        r.prevHash = toStd(q->value(11));
        r.targetPrevHash = toStd(q->value(12));
        r.hash = toStd(q->value(13));
        rows.push_back(std::move(r));
    }
    return rows;
}

const QString kApprovalColumns = QStringLiteral(
    "approval_id, namespace, operation_key, revision, decision, reason, operator, role, "
    "external_reference, proposal, status, operation_version, created_at_ms");

ApprovalRecord readApproval(const QSqlQuery &q)
{
    ApprovalRecord a;
    a.approvalId = toStd(q.value(0));
    a.ns = toStd(q.value(1));
    a.key = toStd(q.value(2));
    a.revision = q.value(3).toInt();
    a.decision = toStd(q.value(4));
    a.reason = toStd(q.value(5));
    a.operatorName = toStd(q.value(6));
    a.role = toStd(q.value(7));
    a.externalReference = toStd(q.value(8));
    a.proposal = toStd(q.value(9));
    a.status = toStd(q.value(10));
    a.operationVersion = q.value(11).toLongLong();
    a.createdAtMs = q.value(12).toLongLong();
    return a;
}

std::vector<ApprovalRecord> selectApprovals(SqliteConnection &db, const std::string &ns,
                                            const std::string &key)
{
    Statement q =
        run(db,
            QStringLiteral("SELECT ") + kApprovalColumns +
                QStringLiteral(" FROM approvals WHERE namespace = ? AND operation_key = ? "
                               "ORDER BY created_at_ms, rowid"),
            {text(ns), text(key)}, "read approvals");
    std::vector<ApprovalRecord> rows;
    while (q->next())
        rows.push_back(readApproval(*q));
    return rows;
}

std::optional<ApprovalRecord> selectApproval(SqliteConnection &db, const std::string &approvalId)
{
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kApprovalColumns +
                          QStringLiteral(" FROM approvals WHERE approval_id = ?"),
                      {text(approvalId)}, "read approval");
    if (!q->next())
        return std::nullopt;
    return readApproval(*q);
}

void insertApprovalRow(SqliteConnection &db, const ApprovalRecord &a, std::int64_t nowMs)
{
    run(db,
        QStringLiteral("INSERT INTO approvals (") + kApprovalColumns +
            QStringLiteral(") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        {text(a.approvalId), text(a.ns), text(a.key), a.revision, text(a.decision), text(a.reason),
         text(a.operatorName), text(a.role), text(a.externalReference), text(a.proposal),
         text(a.status), static_cast<qlonglong>(a.operationVersion), static_cast<qlonglong>(nowMs)},
        "record approval");
}

AuditRecord appendAuditRow(SqliteConnection &db, const AuditEntry &entry, std::int64_t nowMs)
{
    std::int64_t lastSeq = 0;
    std::string lastHash = AuditGenesisHash;
    {
        Statement q =
            run(db, QStringLiteral("SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1"), {},
                "read audit chain");
        if (q->next()) {
            lastSeq = q->value(0).toLongLong();
            lastHash = toStd(q->value(1));
        }
    }
    std::string targetHash = AuditGenesisHash;
    {
        Statement q = run(db,
                          QStringLiteral("SELECT hash FROM audit_log INDEXED BY audit_log_target "
                                         "WHERE target = ? ORDER BY seq DESC LIMIT 1"),
                          {text(entry.target)}, "read audit chain");
        if (q->next())
            targetHash = toStd(q->value(0));
    }
    const AuditRecord r = chainAuditEntry(entry, lastSeq + 1, nowMs, lastHash, targetHash);
    run(db,
        QStringLiteral(
            "INSERT INTO audit_log (seq, at_ms, who, role, action, target, reason, before_state, "
            "after_state, approval_id, detail, prev_hash, target_prev_hash, hash) VALUES "
            "(?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        {static_cast<qlonglong>(r.seq), static_cast<qlonglong>(r.atMs), text(entry.who),
         text(entry.role), text(entry.action), text(entry.target), text(entry.reason),
         text(entry.beforeState), text(entry.afterState), text(entry.approvalId),
         text(entry.detail), text(r.prevHash), text(r.targetPrevHash), text(r.hash)},
        "append audit record");
    return r;
}

/// runAction()'s primitives on this thread's connection, inside its BEGIN IMMEDIATE transaction:
/// the write lock is held from the start, so locking an operation is reading it, and the clock
/// is read once, when the transaction began.
class SqliteActionTransaction final : public ActionTransaction
{
public:
    SqliteActionTransaction(SqliteConnection &db, std::int64_t nowMs) : m_db(db), m_nowMs(nowMs) {}

    Locked lockOperation(const std::string &ns, const std::string &key) override
    {
        return {m_nowMs, selectOperation(m_db, ns, key)};
    }
    std::int64_t nowMs() override { return m_nowMs; }
    std::vector<ApprovalRecord> approvals(const std::string &ns, const std::string &key) override
    {
        return selectApprovals(m_db, ns, key);
    }
    std::vector<OperationEvent> history(const std::string &ns, const std::string &key) override
    {
        return selectHistory(m_db, ns, key);
    }
    std::optional<ApprovalRecord> approval(const std::string &approvalId) override
    {
        return selectApproval(m_db, approvalId);
    }
    std::int64_t nextFencingToken() override { return sqliterows::nextFencingToken(m_db); }
    void insertApproval(const ApprovalRecord &approval, std::int64_t nowMs) override
    {
        insertApprovalRow(m_db, approval, nowMs);
    }
    void secondApproval(const std::string &approvalId) override
    {
        run(m_db,
            QStringLiteral("UPDATE approvals SET status = 'seconded' WHERE approval_id = ? AND "
                           "status = 'pending'"),
            {text(approvalId)}, "second approval");
    }
    void storeSetting(const std::string &name, const std::string &value) override
    {
        run(m_db,
            QStringLiteral("INSERT INTO guard_settings (name, value) VALUES (?, ?) "
                           "ON CONFLICT (name) DO UPDATE SET value = excluded.value"),
            {text(name), text(value)}, "store setting");
    }
    AuditRecord appendAudit(const AuditEntry &entry, std::int64_t nowMs) override
    {
        return appendAuditRow(m_db, entry, nowMs);
    }
    void writeTransition(const Operation &before, const Operation &after,
                         const TransitionRequest &request) override
    {
        updateOperation(m_db, after, before.version);
        appendEvent(m_db, after, before.state, request.actor, request.detail);
    }
    std::optional<RunRecord> lockRun(const std::string &ns, const std::string &runId) override
    {
        return selectRun(m_db, ns, runId, RunRead::Judged);
    }
    std::vector<RunActionRecord> runRequests(const std::string &ns,
                                             const std::string &runId) override
    {
        return selectRunRequests(m_db, ns, runId);
    }
    std::optional<RunActionRecord> runRequest(const std::string &requestId) override
    {
        return selectRunRequest(m_db, requestId);
    }
    void insertRunRequest(const RunActionRecord &request, std::int64_t nowMs) override
    {
        idempo::insertRunRequest(m_db, request, nowMs);
    }
    void secondRunRequest(const std::string &requestId) override
    {
        idempo::secondRunRequest(m_db, requestId);
    }
    void writeRun(const RunRecord &before, const RunRecord &after) override
    {
        updateRun(m_db, after, before.version);
    }

private:
    SqliteConnection &m_db;
    std::int64_t m_nowMs;
};

} // namespace

ActorIdentity SqliteLedgerStore::actor()
{
    const passwd *pw = getpwuid(geteuid());
    return {pw && pw->pw_name ? std::string(pw->pw_name) : "uid:" + std::to_string(geteuid()),
            "owner"};
}

ActionResult SqliteLedgerStore::applyAction(const ActionTarget &target, const ActionDecider &decide)
{
    SqliteConnection &db = connection();
    WriteTransaction tx(db);
    const std::int64_t now = m_clock->nowMs();
    SqliteActionTransaction action(db, now);
    // A DLQ replay's records open and close it (sqlitedlqreplays.h), as PostgreSQL's functions do.
    ActionResult result = runAction(action, target, [&](const ActionState &state) {
        ActionPlan plan = decide(state);
        if (plan.audit)
            sqlitedlqreplays::checkAudit(db, *plan.audit, now);
        return plan;
    });
    if (result.audit)
        sqlitedlqreplays::recordAudit(db, *result.audit, now);
    tx.commit();
    return result;
}

std::vector<AuditRecord> SqliteLedgerStore::auditLog(std::int64_t afterSeq, int limit)
{
    SqliteConnection &db = connection();
    return readAudit(
        run(db, kAuditSelect + QStringLiteral("audit_log WHERE seq > ? ORDER BY seq LIMIT ?"),
            {static_cast<qlonglong>(afterSeq), limit}, "read audit log"));
}

std::vector<AuditRecord> SqliteLedgerStore::auditRecords(const AuditFilter &filter)
{
    checkAuditFilter(filter);
    SqliteConnection &db = connection();
    // Equality filters have an index (column, seq) each that yields their records in seq order.
    // A range (target prefix, namespace, time) on its index comes unordered and a page would sort
    // every match; SQLite plans bound values blind, so a bounded count tells a rare range (walk
    // its index, sort the few) from a common one (walk seq, filter, stop at the limit).
    struct Range
    {
        const char *index;
        QString condition; ///< on column "%1"
        QString column;
        QVariantList binds;
    };
    std::vector<Range> ranges;
    const auto prefixRange = [&ranges](const std::string &prefix) {
        Range r{"audit_log_target",
                QStringLiteral("%1 >= CAST(? AS TEXT)"),
                QStringLiteral("target"),
                {bytes(prefix)}};
        if (const std::optional<std::string> upper = keyPrefixUpperBound(prefix)) {
            r.condition += QStringLiteral(" AND %1 < CAST(? AS TEXT)");
            r.binds << bytes(*upper);
        }
        ranges.push_back(std::move(r));
    };
    if (!filter.targetPrefix.empty())
        prefixRange(filter.targetPrefix);
    if (!filter.ns.empty())
        prefixRange(filter.ns + "/");
    if (filter.fromMs || filter.toMs) {
        Range r{"audit_log_at", {}, QStringLiteral("at_ms"), {}};
        if (filter.fromMs) {
            r.condition = QStringLiteral("%1 >= ?");
            r.binds << static_cast<qlonglong>(*filter.fromMs);
        }
        if (filter.toMs) {
            r.condition += (r.condition.isEmpty() ? QString() : QStringLiteral(" AND ")) +
                           QStringLiteral("%1 < ?");
            r.binds << static_cast<qlonglong>(*filter.toMs);
        }
        ranges.push_back(std::move(r));
    }
    QString where = filter.newestFirst && filter.afterSeq > 0 ? QStringLiteral("seq < ?")
                                                              : QStringLiteral("seq > ?");
    QVariantList binds{static_cast<qlonglong>(
        filter.newestFirst && filter.afterSeq == 0 ? std::int64_t{0} : filter.afterSeq)};
    bool equality = false;
    for (const auto &[column, value] :
         {std::pair{"target", &filter.target}, std::pair{"who", &filter.who},
          std::pair{"action", &filter.action}}) {
        if (value->empty())
            continue;
        equality = true;
        where += QStringLiteral(" AND %1 = ?").arg(QLatin1String(column));
        binds << text(*value);
    }
    const Range *rare = nullptr;
    for (const Range &r : ranges) {
        if (!equality && !rare) {
            QVariantList probeBinds = r.binds;
            probeBinds << kRareAuditRows;
            Statement probe = run(db,
                                  QStringLiteral("SELECT count(*) FROM (SELECT 1 FROM audit_log "
                                                 "WHERE ") +
                                      r.condition.arg(r.column) + QStringLiteral(" LIMIT ?)"),
                                  probeBinds, "read audit log");
            if (probe->next() && probe->value(0).toInt() < kRareAuditRows)
                rare = &r;
        }
        // The unary + keeps a common range off its index.
        where += QStringLiteral(" AND ") +
                 r.condition.arg(&r == rare ? r.column : QStringLiteral("+") + r.column);
        binds << r.binds;
    }
    const QString from =
        rare ? QStringLiteral("audit_log INDEXED BY %1 WHERE ").arg(QLatin1String(rare->index))
             : QStringLiteral("audit_log WHERE ");
    binds << filter.limit;
    return readAudit(run(db,
                         kAuditSelect + from + where +
                             (filter.newestFirst ? QStringLiteral(" ORDER BY seq DESC LIMIT ?")
                                                 : QStringLiteral(" ORDER BY seq LIMIT ?")),
                         binds, "read audit log"));
}

std::vector<ApprovalRecord> SqliteLedgerStore::approvals(const std::string &ns,
                                                         const std::string &key)
{
    return selectApprovals(connection(), ns, key);
}

std::vector<PendingApproval> SqliteLedgerStore::pendingApprovals(int limit)
{
    // As on PostgreSQL: two reads joined here by key, so an operation that moved on between
    // them drops its approval from the list.
    const QString waiting = QStringLiteral(
        " FROM approvals AS a WHERE a.status = 'pending' AND a.revision = (SELECT "
        "max(x.revision) FROM approvals AS x WHERE x.namespace = a.namespace AND x.operation_key "
        "= a.operation_key) AND EXISTS (SELECT 1 FROM operations AS o WHERE o.namespace = "
        "a.namespace AND o.operation_key = a.operation_key AND o.operation_version = "
        "a.operation_version) ORDER BY a.created_at_ms, a.rowid LIMIT ?");
    SqliteConnection &db = connection();
    Statement aq = run(db, QStringLiteral("SELECT ") + kApprovalColumns + waiting, {limit},
                       "read pending approvals");
    std::vector<ApprovalRecord> approvals;
    while (aq->next())
        approvals.push_back(readApproval(*aq));
    Statement oq =
        run(db,
            QStringLiteral("SELECT ") + kOperationColumns +
                QStringLiteral(", (SELECT e.actor FROM operation_events AS e WHERE "
                               "e.operation_id = operations.id ORDER BY e.id DESC "
                               "LIMIT 1) FROM operations WHERE (namespace, "
                               "operation_key) IN (SELECT a.namespace, a.operation_key") +
                waiting + QLatin1Char(')'),
            {limit}, "read operations awaiting a second approval");
    std::vector<std::pair<Operation, std::string>> operations;
    while (oq->next())
        operations.emplace_back(readOperation(*oq), toStd(oq->value(kOperationColumnCount)));
    std::vector<PendingApproval> rows;
    for (ApprovalRecord &a : approvals)
        for (auto &[op, requestedBy] : operations)
            if (op.ns == a.ns && op.key == a.key && op.version == a.operationVersion) {
                rows.push_back({std::move(a), op, requestedBy});
                break;
            }
    return rows;
}

std::optional<std::string> SqliteLedgerStore::guardSetting(const std::string &name)
{
    Statement q =
        run(connection(), QStringLiteral("SELECT value FROM guard_settings WHERE name = ?"),
            {text(name)}, "read setting");
    if (!q->next())
        return std::nullopt;
    return toStd(q->value(0));
}

} // namespace idempo
