// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>

#include "changefeed.h"

namespace idempo {

class SqliteLedgerStore;

/// The change feed of the embedded ledger, polled: SQLite's `PRAGMA data_version` on the
/// calling thread's connection moves whenever another connection commits (one page-cache read).
class SqliteChangeFeed final : public ChangeFeed
{
public:
    /// A feed on `store`, which must outlive it.
    explicit SqliteChangeFeed(SqliteLedgerStore &store);

    int socket() const override { return -1; }
    /// Throws Error(LedgerUnavailable) when the file cannot be read.
    bool changed() override;
    void ping() override {}

private:
    SqliteLedgerStore &m_store;
    std::int64_t m_lastVersion = -1;
};

} // namespace idempo
