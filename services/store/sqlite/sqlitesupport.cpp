// SPDX-License-Identifier: Apache-2.0
#include "sqlitesupport.h"

#include "error.h"

#include <QSqlError>

namespace idempo {
namespace {

[[noreturn]] void fail(const QSqlQuery &query, const char *what)
{
    const QSqlError error = query.lastError();
    const auto code = error.nativeErrorCode();
    // SQLITE_BUSY (5) / SQLITE_LOCKED (6): another writer held the ledger past the busy timeout.
    const bool busy = code == QLatin1String("5") || code == QLatin1String("6");
    throw Error(busy ? ErrorCode::LedgerUnavailable : ErrorCode::Internal,
                std::string(what) + ": " + error.text().toStdString());
}

} // namespace

Statement run(SqliteConnection &c, const QString &sql, const QVariantList &binds, const char *what)
{
    auto &slot = c.statements[sql];
    if (!slot) {
        auto query = std::make_unique<QSqlQuery>(c.db);
        query->setForwardOnly(true);
        if (!query->prepare(sql))
            fail(*query, what);
        slot = std::move(query);
    }
    QSqlQuery &query = *slot;
    for (int i = 0; i < binds.size(); ++i)
        query.bindValue(i, binds.at(i));
    if (!query.exec()) {
        query.finish();
        fail(query, what);
    }
    return Statement(query);
}

WriteTransaction::WriteTransaction(SqliteConnection &connection) : m_connection(connection)
{
    run(m_connection, QStringLiteral("BEGIN IMMEDIATE"), {}, "begin");
}

WriteTransaction::~WriteTransaction()
{
    if (!m_done)
        QSqlQuery(m_connection.db).exec(QStringLiteral("ROLLBACK"));
}

void WriteTransaction::commit()
{
    run(m_connection, QStringLiteral("COMMIT"), {}, "commit");
    m_done = true;
}

} // namespace idempo
