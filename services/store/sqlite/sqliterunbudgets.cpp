// SPDX-License-Identifier: Apache-2.0
#include "sqliterunbudgets.h"

#include <algorithm>

#include <QVariant>

#include "sqliteledgerstore.h"

namespace idempo {
namespace {

const QString kRunColumns = QStringLiteral(
    "namespace, run_id, state, failed_dispatch_limit, no_progress_ms, spend_limit_minor, "
    "token_limit, currency, failed_dispatches, spent_minor, tokens_used, last_progress_at_ms, "
    "created_at_ms, updated_at_ms, halted_at_ms, halt_budget, halt_detail, run_version");

/// The last progress of the run a row of `runs` names: its own stamp (created, resumed, an
/// operation received again) or the newest operation of it created or final.
const QString kProgress = QStringLiteral(
    "max(runs.last_progress_at_ms, coalesce((SELECT max(CASE WHEN o.state IN ('succeeded', "
    "'failed_terminal') THEN o.updated_at_ms ELSE o.created_at_ms END) FROM operations o "
    "WHERE o.namespace = runs.namespace AND o.run_id = runs.run_id), 0))");

/// The state a caller is shown (RunRead::Reported).
const QString kReportedState = QStringLiteral(
    "CASE WHEN state = 'active' AND EXISTS (SELECT 1 FROM operations o WHERE o.namespace = "
    "runs.namespace AND o.run_id = runs.run_id) AND NOT EXISTS (SELECT 1 FROM operations o "
    "WHERE o.namespace = runs.namespace AND o.run_id = runs.run_id AND o.state NOT IN "
    "('succeeded', 'failed_terminal')) THEN 'finished' ELSE state END");

QString columns(RunRead read)
{
    QString columns = kRunColumns;
    if (read == RunRead::Stored)
        return columns;
    columns.replace(QStringLiteral("last_progress_at_ms"), kProgress);
    if (read == RunRead::Reported)
        columns.replace(QStringLiteral("run_id, state,"),
                        QStringLiteral("run_id, ") + kReportedState + QStringLiteral(","));
    return columns;
}

QVariant text(const std::string &s)
{
    return QString::fromStdString(s);
}

QVariant optionalInt(const std::optional<std::int64_t> &v)
{
    return v ? QVariant(static_cast<qlonglong>(*v)) : QVariant();
}

std::optional<std::int64_t> toOptionalInt(const QVariant &v)
{
    if (v.isNull())
        return std::nullopt;
    return v.toLongLong();
}

std::string toStd(const QVariant &v)
{
    return v.toString().toStdString();
}

RunRecord readRun(const QSqlQuery &q)
{
    RunRecord r;
    r.ns = toStd(q.value(0));
    r.runId = toStd(q.value(1));
    r.state = parseRunState(toStd(q.value(2))).value_or(RunState::Active);
    r.budgets.failedDispatches = toOptionalInt(q.value(3));
    r.budgets.noProgressMs = toOptionalInt(q.value(4));
    r.currency = toStd(q.value(7));
    if (!q.value(5).isNull())
        r.budgets.spend = Amount{q.value(5).toLongLong(), r.currency};
    r.budgets.tokens = toOptionalInt(q.value(6));
    r.failedDispatches = q.value(8).toLongLong();
    r.spentMinor = q.value(9).toLongLong();
    r.tokensUsed = q.value(10).toLongLong();
    r.lastProgressAtMs = q.value(11).toLongLong();
    r.createdAtMs = q.value(12).toLongLong();
    r.updatedAtMs = q.value(13).toLongLong();
    r.haltedAtMs = toOptionalInt(q.value(14));
    if (!q.value(15).isNull())
        r.haltBudget = parseBudget(toStd(q.value(15)));
    r.haltDetail = toStd(q.value(16));
    r.version = q.value(17).toLongLong();
    return r;
}

QVariantList runValues(const RunRecord &r)
{
    return {text(r.ns),
            text(r.runId),
            text(std::string(runStateName(r.state))),
            optionalInt(r.budgets.failedDispatches),
            optionalInt(r.budgets.noProgressMs),
            r.budgets.spend ? QVariant(static_cast<qlonglong>(r.budgets.spend->minorUnits))
                            : QVariant(),
            optionalInt(r.budgets.tokens),
            text(r.currency),
            static_cast<qlonglong>(r.failedDispatches),
            static_cast<qlonglong>(r.spentMinor),
            static_cast<qlonglong>(r.tokensUsed),
            static_cast<qlonglong>(r.lastProgressAtMs),
            static_cast<qlonglong>(r.createdAtMs),
            static_cast<qlonglong>(r.updatedAtMs),
            optionalInt(r.haltedAtMs),
            r.haltBudget ? text(std::string(budgetName(*r.haltBudget))) : QVariant(),
            text(r.haltDetail),
            static_cast<qlonglong>(r.version)};
}

RunRecord newRun(SqliteConnection &db, const ClaimRequest &request, std::int64_t nowMs)
{
    Statement q =
        run(db,
            QStringLiteral("SELECT name, value FROM guard_settings WHERE name LIKE 'run\\_%' "
                           "ESCAPE '\\'"),
            {}, "read run budget defaults");
    std::vector<std::pair<std::string, std::string>> settings;
    while (q->next())
        settings.emplace_back(toStd(q->value(0)), toStd(q->value(1)));
    RunRecord r;
    r.ns = request.ns;
    r.runId = request.runId;
    r.budgets = defaultRunBudgets([&](std::string_view name) -> std::optional<std::string> {
        for (const auto &[n, v] : settings)
            if (n == name)
                return v;
        return std::nullopt;
    });
    r.currency = r.budgets.spend ? r.budgets.spend->currency : std::string();
    r.lastProgressAtMs = r.createdAtMs = r.updatedAtMs = nowMs;
    run(db,
        QStringLiteral("INSERT INTO runs (") + kRunColumns +
            QStringLiteral(") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"),
        runValues(r), "create run");
    return r;
}

const QString kRequestColumns =
    QStringLiteral("request_id, namespace, run_id, action, proposal, status, operator, role, "
                   "reason, audit_seq, created_at_ms");

RunActionRecord readRequest(const QSqlQuery &q)
{
    RunActionRecord r;
    r.requestId = toStd(q.value(0));
    r.ns = toStd(q.value(1));
    r.runId = toStd(q.value(2));
    r.action = toStd(q.value(3));
    r.proposal = toStd(q.value(4));
    r.status = toStd(q.value(5));
    r.operatorName = toStd(q.value(6));
    r.role = toStd(q.value(7));
    r.reason = toStd(q.value(8));
    r.auditSeq = q.value(9).toLongLong();
    r.createdAtMs = q.value(10).toLongLong();
    return r;
}

} // namespace

std::vector<RunActionRecord> selectRunRequests(SqliteConnection &db, const std::string &ns,
                                               const std::string &runId)
{
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kRequestColumns +
                          QStringLiteral(" FROM run_actions WHERE namespace = ? AND run_id = ? "
                                         "ORDER BY created_at_ms, rowid"),
                      {text(ns), text(runId)}, "read run requests");
    std::vector<RunActionRecord> rows;
    while (q->next())
        rows.push_back(readRequest(*q));
    return rows;
}

std::optional<RunActionRecord> selectRunRequest(SqliteConnection &db, const std::string &requestId)
{
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kRequestColumns +
                          QStringLiteral(" FROM run_actions WHERE request_id = ?"),
                      {text(requestId)}, "read run request");
    if (!q->next())
        return std::nullopt;
    return readRequest(*q);
}

void insertRunRequest(SqliteConnection &db, const RunActionRecord &r, std::int64_t nowMs)
{
    run(db,
        QStringLiteral("INSERT INTO run_actions (") + kRequestColumns +
            QStringLiteral(") VALUES (?,?,?,?,?,?,?,?,?,?,?)"),
        {text(r.requestId), text(r.ns), text(r.runId), text(r.action), text(r.proposal),
         text(r.status), text(r.operatorName), text(r.role), text(r.reason),
         static_cast<qlonglong>(r.auditSeq), static_cast<qlonglong>(nowMs)},
        "record run request");
}

void secondRunRequest(SqliteConnection &db, const std::string &requestId)
{
    run(db,
        QStringLiteral("UPDATE run_actions SET status = 'seconded' WHERE request_id = ? AND "
                       "status = 'pending'"),
        {text(requestId)}, "second run request");
}

std::optional<RunRecord> selectRun(SqliteConnection &db, const std::string &ns,
                                   const std::string &runId, RunRead read)
{
    Statement q = run(db,
                      QStringLiteral("SELECT ") + columns(read) +
                          QStringLiteral(" FROM runs WHERE namespace = ? AND run_id = ?"),
                      {text(ns), text(runId)}, "read run");
    if (!q->next())
        return std::nullopt;
    return readRun(*q);
}

std::vector<RunRecord> selectRuns(SqliteConnection &db, const RunFilter &filter)
{
    Statement q = run(
        db,
        QStringLiteral("SELECT ") + columns(RunRead::Reported) +
            QStringLiteral(" FROM runs WHERE (namespace, run_id) > (?, ?) "
                           "AND (? = '' OR namespace = ?) AND (? = '' OR ") +
            kReportedState + QStringLiteral(" = ?) ORDER BY namespace, run_id LIMIT ?"),
        {text(filter.afterNs), text(filter.afterRunId), text(filter.ns), text(filter.ns),
         filter.state ? text(std::string(runStateName(*filter.state))) : text({}),
         filter.state ? text(std::string(runStateName(*filter.state))) : text({}), filter.limit},
        "list runs");
    std::vector<RunRecord> runs;
    while (q->next())
        runs.push_back(readRun(*q));
    return runs;
}

void updateRun(SqliteConnection &db, const RunRecord &r, std::int64_t expectedVersion)
{
    QVariantList binds = runValues(r);
    binds.removeFirst();
    binds.removeFirst();
    binds << text(r.ns) << text(r.runId) << static_cast<qlonglong>(expectedVersion);
    Statement q =
        run(db,
            QStringLiteral(
                "UPDATE runs SET state = ?, failed_dispatch_limit = ?, no_progress_ms = ?, "
                "spend_limit_minor = ?, token_limit = ?, currency = ?, failed_dispatches = ?, "
                "spent_minor = ?, tokens_used = ?, last_progress_at_ms = ?, created_at_ms = ?, "
                "updated_at_ms = ?, halted_at_ms = ?, halt_budget = ?, halt_detail = ?, "
                "run_version = ? WHERE namespace = ? AND run_id = ? AND run_version = ?"),
            binds, "update run");
    if (q->numRowsAffected() != 1)
        throw Error(ErrorCode::Internal, "run changed inside its own write transaction");
}

std::optional<BudgetExhaustion> chargeRun(SqliteConnection &db, const ClaimRequest &request,
                                          bool redispatch, std::int64_t nowMs)
{
    if (request.runId.empty())
        return std::nullopt;
    // Only a re-dispatch is judged on progress (a new operation is progress itself).
    std::optional<RunRecord> found =
        selectRun(db, request.ns, request.runId, redispatch ? RunRead::Judged : RunRead::Stored);
    RunRecord r = found ? *found : newRun(db, request, nowMs);
    const RunRecord before = r;
    const std::optional<BudgetExhaustion> exhausted =
        checkRunBudget(r, {request.cost, request.tokens, redispatch}, nowMs);
    if (exhausted) {
        if (r.state == RunState::Halted)
            return exhausted;
        r.state = RunState::Halted;
        r.haltBudget = exhausted->budget;
        r.haltedAtMs = nowMs;
        r.haltDetail = exhausted->detail;
    } else {
        if (request.cost) {
            r.spentMinor += request.cost->minorUnits;
            r.currency = request.cost->currency;
        }
        r.tokensUsed += request.tokens;
        if (r.spentMinor == before.spentMinor && r.tokensUsed == before.tokensUsed &&
            r.currency == before.currency)
            return std::nullopt;
    }
    r.updatedAtMs = nowMs;
    r.version += 1;
    updateRun(db, r, before.version);
    return exhausted;
}

std::int64_t haltStalledRuns(SqliteConnection &db, const std::string &ns, std::int64_t nowMs)
{
    const auto now = static_cast<qlonglong>(nowMs);
    Statement q =
        run(db,
            QStringLiteral(
                "UPDATE runs SET state = 'halted', halt_budget = 'no_progress', halted_at_ms = ?, "
                "halt_detail = 'no progress for ' || ((? - %1) / 1000) || "
                "' s (limit ' || (no_progress_ms / 1000) || ' s)', updated_at_ms = ?, "
                "run_version = run_version + 1 "
                "WHERE state = 'active' AND no_progress_ms IS NOT NULL "
                "AND %1 + no_progress_ms <= ? AND (? = '' OR namespace = ?) "
                "AND EXISTS (SELECT 1 FROM operations o WHERE o.namespace = runs.namespace "
                "AND o.run_id = runs.run_id AND o.state NOT IN ('succeeded', 'failed_terminal'))")
                .arg(kProgress),
            {now, now, now, now, text(ns), text(ns)}, "sweep runs");
    return q->numRowsAffected();
}

// The store's run-budget reads and sweep, beside the rules they share with the claim.

std::optional<RunRecord> SqliteLedgerStore::findRun(const std::string &ns, const std::string &runId)
{
    return selectRun(connection(), ns, runId, RunRead::Reported);
}

std::vector<RunRecord> SqliteLedgerStore::listRuns(const RunFilter &filter)
{
    return selectRuns(connection(), filter);
}

std::vector<RunActionRecord> SqliteLedgerStore::runRequests(const std::string &ns,
                                                            const std::string &runId)
{
    return selectRunRequests(connection(), ns, runId);
}

std::int64_t SqliteLedgerStore::sweepRuns(const std::string &ns)
{
    SqliteConnection &db = connection();
    WriteTransaction tx(db);
    const std::int64_t halted = haltStalledRuns(db, ns, m_clock->nowMs());
    tx.commit();
    return halted;
}

} // namespace idempo
