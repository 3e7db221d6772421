// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <QString>
#include <QVariant>

#include "operation.h"
#include "sqlitesupport.h"

class QSqlQuery;

// Rows of the embedded ledger's tables as the SQLite store reads and writes them
// (sqliteledgerstore.cpp, sqliteledgeractions.cpp), on the caller's connection and transaction.
namespace idempo::sqliterows {

/// The columns of an operation in readOperation() order.
extern const QString kOperationColumns;
inline constexpr int kOperationColumnCount = 28;

QVariant text(const std::string &s);
/// Bytes bound as a blob and cast to TEXT in SQL: compared byte for byte, never re-encoded.
QVariant bytes(const std::string &s);
QVariant optionalInt(const std::optional<std::int64_t> &v);
std::optional<std::int64_t> toOptionalInt(const QVariant &v);
std::string toStd(const QVariant &v);

/// The operation in the current row of `q`, selected with kOperationColumns.
Operation readOperation(const QSqlQuery &q);
std::optional<Operation> selectOperation(SqliteConnection &db, const std::string &ns,
                                         const std::string &key);
/// The history of (ns, key), oldest first.
std::vector<OperationEvent> selectHistory(SqliteConnection &db, const std::string &ns,
                                          const std::string &key);
std::int64_t nextFencingToken(SqliteConnection &db);
void appendEvent(SqliteConnection &db, const Operation &op, std::optional<OperationState> from,
                 const std::string &actor, const std::string &detail);
/// Writes every mutable column of `op` where the row still has `expectedVersion`.
void updateOperation(SqliteConnection &db, const Operation &op, std::int64_t expectedVersion);

/// How a listing follows `filter.order`: the keyset clause that continues after the previous
/// page, its values, and the ORDER BY with its values.
struct ListingOrder
{
    QString cursor;
    QVariantList binds;
    QString orderBy;
    QVariantList orderBinds;
};
ListingOrder listingOrder(const ListFilter &filter);

} // namespace idempo::sqliterows
