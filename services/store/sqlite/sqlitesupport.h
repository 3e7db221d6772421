// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QSqlDatabase>
#include <QSqlQuery>
#include <QString>
#include <QVariantList>

#include <memory>
#include <unordered_map>

namespace idempo {

/// One thread's connection to the embedded ledger with its prepared statements.
struct SqliteConnection
{
    QSqlDatabase db;
    std::unordered_map<QString, std::unique_ptr<QSqlQuery>> statements; ///< by SQL text
};

/// A cached prepared statement, reset when the borrower is done so that no read snapshot or
/// lock outlives the call.
class Statement final
{
public:
    explicit Statement(QSqlQuery &query) : m_query(query) {}
    ~Statement() { m_query.finish(); }
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;
    QSqlQuery *operator->() { return &m_query; }
    QSqlQuery &operator*() { return m_query; }

private:
    QSqlQuery &m_query;
};

/// Prepares `sql` once per connection, binds `binds` positionally and executes it.
/// Throws Error(LedgerUnavailable) when SQLite stayed busy past the busy timeout, else
/// Error(Internal) with `what` and SQLite's message.
Statement run(SqliteConnection &connection, const QString &sql, const QVariantList &binds, const char *what);

/// BEGIN IMMEDIATE … COMMIT: takes the write lock up front, so a read-then-write cannot
/// interleave with another writer's; rolled back when an exception leaves the scope.
class WriteTransaction final
{
public:
    explicit WriteTransaction(SqliteConnection &connection);
    ~WriteTransaction();
    WriteTransaction(const WriteTransaction &) = delete;
    WriteTransaction &operator=(const WriteTransaction &) = delete;
    void commit();

private:
    SqliteConnection &m_connection;
    bool m_done = false;
};

} // namespace idempo
