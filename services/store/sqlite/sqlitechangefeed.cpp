// SPDX-License-Identifier: Apache-2.0
#include "sqlitechangefeed.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

#include "error.h"
#include "sqliteledgerstore.h"

namespace idempo {

SqliteChangeFeed::SqliteChangeFeed(SqliteLedgerStore &store) : m_store(store) {}

bool SqliteChangeFeed::changed()
{
    QSqlQuery q(m_store.connection().db);
    if (!q.exec(QStringLiteral("PRAGMA data_version")) || !q.next())
        throw Error(ErrorCode::LedgerUnavailable, q.lastError().text().toStdString());
    const std::int64_t version = q.value(0).toLongLong();
    const bool moved = m_lastVersion >= 0 && version != m_lastVersion;
    m_lastVersion = version;
    return moved;
}

std::unique_ptr<ChangeFeed> SqliteLedgerStore::changeFeed()
{
    return std::make_unique<SqliteChangeFeed>(*this);
}

} // namespace idempo
