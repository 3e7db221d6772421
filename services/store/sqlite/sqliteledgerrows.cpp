// SPDX-License-Identifier: Apache-2.0
#include "sqliteledgerrows.h"

#include <nlohmann/json.hpp>

#include <QSqlQuery>

#include "error.h"

namespace idempo::sqliterows {

const QString kOperationColumns = QStringLiteral(
    "id, namespace, operation_key, run_id, step_id, target, tool_kind, state, payload, "
    "payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner, "
    "lease_expires_at_ms, fencing_token, next_attempt_at_ms, error_class, error_detail, result, "
    "receipt, created_at_ms, updated_at_ms, retention_expires_at_ms, operation_version, "
    "schema_version, value_minor, value_currency");

QVariant text(const std::string &s)
{
    return QString::fromStdString(s);
}

/// Bytes bound as a blob and cast to TEXT in SQL: compared byte for byte, never re-encoded.
QVariant bytes(const std::string &s)
{
    return QByteArray(s.data(), static_cast<qsizetype>(s.size()));
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

Operation readOperation(const QSqlQuery &q)
{
    Operation op;
    op.id = q.value(0).toLongLong();
    op.ns = toStd(q.value(1));
    op.key = toStd(q.value(2));
    op.runId = toStd(q.value(3));
    op.stepId = toStd(q.value(4));
    op.target = toStd(q.value(5));
    op.kind = parseToolKind(toStd(q.value(6))).value_or(ToolKind::ProtectedWrite);
    op.state = parseState(toStd(q.value(7))).value_or(OperationState::Received);
    op.payload = toStd(q.value(8));
    op.fingerprint = toStd(q.value(9));
    op.fingerprintFields =
        nlohmann::json::parse(toStd(q.value(10))).get<std::vector<std::string>>();
    op.attempt = q.value(11).toInt();
    op.maxAttempts = q.value(12).toInt();
    op.leaseOwner = toStd(q.value(13));
    op.leaseExpiresAtMs = toOptionalInt(q.value(14));
    op.fencingToken = q.value(15).toLongLong();
    op.nextAttemptAtMs = toOptionalInt(q.value(16));
    if (!q.value(17).isNull())
        op.errorClass = parseErrorClass(toStd(q.value(17)));
    op.errorDetail = toStd(q.value(18));
    op.result = toStd(q.value(19));
    op.receipt = toStd(q.value(20));
    op.createdAtMs = q.value(21).toLongLong();
    op.updatedAtMs = q.value(22).toLongLong();
    op.retentionExpiresAtMs = toOptionalInt(q.value(23));
    op.version = q.value(24).toLongLong();
    op.schemaVersion = q.value(25).toInt();
    if (!q.value(26).isNull())
        op.value = Amount{q.value(26).toLongLong(), toStd(q.value(27))};
    return op;
}

std::optional<Operation> selectOperation(SqliteConnection &db, const std::string &ns,
                                         const std::string &key)
{
    Statement q =
        run(db,
            QStringLiteral("SELECT ") + kOperationColumns +
                QStringLiteral(" FROM operations WHERE namespace = ? AND operation_key = ?"),
            {text(ns), text(key)}, "read operation");
    if (!q->next())
        return std::nullopt;
    return readOperation(*q);
}

std::vector<OperationEvent> selectHistory(SqliteConnection &db, const std::string &ns,
                                          const std::string &key)
{
    Statement q =
        run(db,
            QStringLiteral("SELECT e.id, e.at_ms, e.from_state, e.to_state, e.fencing_token, "
                           "e.attempt, e.actor, e.error_class, e.detail FROM operation_events e "
                           "JOIN operations o ON o.id = e.operation_id "
                           "WHERE o.namespace = ? AND o.operation_key = ? ORDER BY e.id"),
            {text(ns), text(key)}, "read history");
    std::vector<OperationEvent> events;
    while (q->next()) {
        OperationEvent e;
        e.id = q->value(0).toLongLong();
        e.ns = ns;
        e.key = key;
        e.atMs = q->value(1).toLongLong();
        if (!q->value(2).isNull())
            e.fromState = parseState(toStd(q->value(2)));
        e.toState = parseState(toStd(q->value(3))).value_or(OperationState::Received);
        e.fencingToken = q->value(4).toLongLong();
        e.attempt = q->value(5).toInt();
        e.actor = toStd(q->value(6));
        if (!q->value(7).isNull())
            e.errorClass = parseErrorClass(toStd(q->value(7)));
        e.detail = toStd(q->value(8));
        events.push_back(std::move(e));
    }
    return events;
}

std::int64_t nextFencingToken(SqliteConnection &db)
{
    Statement q = run(db,
                      QStringLiteral("UPDATE fencing_sequence SET last_token = last_token + 1 "
                                     "WHERE id = 1 RETURNING last_token"),
                      {}, "issue fencing token");
    q->next();
    return q->value(0).toLongLong();
}

void appendEvent(SqliteConnection &db, const Operation &op, std::optional<OperationState> from,
                 const std::string &actor, const std::string &detail)
{
    run(db,
        QStringLiteral(
            "INSERT INTO operation_events (operation_id, at_ms, from_state, to_state, "
            "fencing_token, attempt, actor, error_class, detail) VALUES (?,?,?,?,?,?,?,?,?)"),
        {static_cast<qlonglong>(op.id), static_cast<qlonglong>(op.updatedAtMs),
         from ? text(std::string(stateName(*from))) : QVariant(),
         text(std::string(stateName(op.state))), static_cast<qlonglong>(op.fencingToken),
         op.attempt, text(actor),
         op.errorClass ? text(std::string(errorClassName(*op.errorClass))) : QVariant(),
         text(detail)},
        "append history");
}

/// Writes every mutable column of `op` where the row still has `expectedVersion`.
void updateOperation(SqliteConnection &db, const Operation &op, std::int64_t expectedVersion)
{
    Statement q = run(
        db,
        QStringLiteral(
            "UPDATE operations SET state = ?, attempt = ?, max_attempts = ?, lease_owner = ?, "
            "lease_expires_at_ms = ?, fencing_token = ?, next_attempt_at_ms = ?, error_class = ?, "
            "error_detail = ?, result = ?, receipt = ?, updated_at_ms = ?, retention_expires_at_ms "
            "= ?, "
            "operation_version = ?, schema_version = ? WHERE id = ? AND operation_version = ?"),
        {text(std::string(stateName(op.state))), op.attempt, op.maxAttempts, text(op.leaseOwner),
         optionalInt(op.leaseExpiresAtMs), static_cast<qlonglong>(op.fencingToken),
         optionalInt(op.nextAttemptAtMs),
         op.errorClass ? text(std::string(errorClassName(*op.errorClass))) : QVariant(),
         text(op.errorDetail), text(op.result), text(op.receipt),
         static_cast<qlonglong>(op.updatedAtMs), optionalInt(op.retentionExpiresAtMs),
         static_cast<qlonglong>(op.version), op.schemaVersion, static_cast<qlonglong>(op.id),
         static_cast<qlonglong>(expectedVersion)},
        "update operation");
    if (q->numRowsAffected() != 1)
        throw Error(ErrorCode::Internal, "operation changed inside its own write transaction");
}

namespace {

/// valueRank() in SQL, with its binds: without factors the expression `operations_value`
/// indexes; with them a CASE over the bound factors, which no index serves.
std::pair<QString, QVariantList> valueRankSql(const std::vector<ValueFactor> &factors)
{
    if (factors.empty())
        return {QStringLiteral("coalesce(value_minor, %1)").arg(ListFilter::NoValue), {}};
    QString sql = QStringLiteral("(CASE WHEN value_minor IS NULL THEN %1").arg(ListFilter::NoValue);
    QVariantList binds;
    for (const ValueFactor &f : factors) {
        sql += QStringLiteral(" WHEN value_currency = ? THEN CAST(min(value_minor * ?, %1) AS "
                              "INTEGER)")
                   .arg(QString::number(PricedRankCeiling, 'e', 1));
        binds << text(f.currency) << f.factor;
    }
    return {sql + QStringLiteral(" ELSE %1 END)").arg(UnpricedRank), binds};
}

} // namespace

ListingOrder listingOrder(const ListFilter &filter)
{
    const auto [value, valueBinds] = valueRankSql(filter.valueFactors);
    const auto id = static_cast<qlonglong>(filter.afterId);
    ListingOrder o{QStringLiteral("id > ?"), {id}, QStringLiteral("id"), {}};
    // A first page of another order has no bound on id: SQLite (no statistics) would take the
    // id range for an index and sort every record (12.7 s on 1,000,000 by last change).
    if (filter.order != ListOrder::Id && filter.order != ListOrder::IdDescending &&
        filter.afterId == 0)
        o = {QStringLiteral("1"), {}, {}, {}};
    // (column, id) > (x, afterId) in the column's direction, spelled so that the column's own
    // bound (`column >= x`) is an index range; ties go by id ascending.
    const auto continueAfter = [&](const QString &column, bool down, const QString &x,
                                   const QVariant &bind, const QVariantList &columnBinds = {}) {
        const QString beyond = down ? QStringLiteral("<") : QStringLiteral(">");
        o.cursor = QStringLiteral("%1 %2= %3 AND (%1 %2 %3 OR id > ?)").arg(column, beyond, x);
        o.binds = columnBinds;
        o.binds << bind << columnBinds << bind << id;
    };
    switch (filter.order) {
    case ListOrder::Id:
        break;
    case ListOrder::IdDescending:
        if (filter.afterId > 0)
            o.cursor = QStringLiteral("id < ?");
        o.orderBy = QStringLiteral("id DESC");
        break;
    case ListOrder::ValueDescending:
    case ListOrder::ValueAscending: {
        const bool down = filter.order == ListOrder::ValueDescending;
        if (filter.afterValueMinor)
            continueAfter(value, down, QStringLiteral("?"),
                          static_cast<qlonglong>(*filter.afterValueMinor), valueBinds);
        o.orderBy = value + (down ? QStringLiteral(" DESC, id") : QStringLiteral(", id"));
        o.orderBinds = valueBinds;
        break;
    }
    case ListOrder::UpdatedAscending:
    case ListOrder::UpdatedDescending: {
        const bool down = filter.order == ListOrder::UpdatedDescending;
        if (filter.afterUpdatedMs)
            continueAfter(QStringLiteral("updated_at_ms"), down, QStringLiteral("?"),
                          static_cast<qlonglong>(*filter.afterUpdatedMs));
        o.orderBy =
            down ? QStringLiteral("updated_at_ms DESC, id") : QStringLiteral("updated_at_ms, id");
        break;
    }
    case ListOrder::KeyAscending:
        if (filter.afterKey)
            continueAfter(QStringLiteral("operation_key"), false, QStringLiteral("CAST(? AS TEXT)"),
                          bytes(*filter.afterKey));
        o.orderBy = QStringLiteral("operation_key, id");
        break;
    }
    return o;
}

} // namespace idempo::sqliterows
