// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "changefeed.h"
#include "pgconnection.h"

#include <memory>

namespace idempo {

/// The change feed of a PostgreSQL ledger: a LISTEN on PostgresLedgerStore::NotificationChannel
/// (PostgresLedgerStore::listen()), which every creation and transition notifies.
class PostgresChangeFeed final : public ChangeFeed
{
public:
    explicit PostgresChangeFeed(std::unique_ptr<PgListener> listener);

    int socket() const override;
    bool changed() override;
    void ping() override;

private:
    std::unique_ptr<PgListener> m_listener;
};

} // namespace idempo
