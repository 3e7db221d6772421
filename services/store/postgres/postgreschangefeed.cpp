// SPDX-License-Identifier: Apache-2.0
#include "postgreschangefeed.h"

#include <utility>

#include "postgresledgerstore.h"

namespace idempo {

PostgresChangeFeed::PostgresChangeFeed(std::unique_ptr<PgChangeFeed> listener)
    : m_listener(std::move(listener))
{
}

int PostgresChangeFeed::socket() const
{
    return m_listener->socket();
}

bool PostgresChangeFeed::changed()
{
    return !m_listener->takeNotifications().empty();
}

void PostgresChangeFeed::ping()
{
    m_listener->ping();
}

std::unique_ptr<ChangeFeed> PostgresLedgerStore::changeFeed()
{
    return std::make_unique<PostgresChangeFeed>(listen());
}

} // namespace idempo
