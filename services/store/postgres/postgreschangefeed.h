// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>

#include "changefeed.h"
#include "pgconnection.h"

namespace idempo {

/// The change feed of a PostgreSQL ledger: PgChangeFeed's long poll of idempo.wait_for_changes()
/// (PostgresLedgerStore::listen()) on a connection of its own; writers never notify.
class PostgresChangeFeed final : public ChangeFeed
{
public:
    explicit PostgresChangeFeed(std::unique_ptr<PgChangeFeed> listener);

    int socket() const override;
    bool changed() override;
    void ping() override;

private:
    std::unique_ptr<PgChangeFeed> m_listener;
};

} // namespace idempo
