// SPDX-License-Identifier: Apache-2.0
#include "sandboxjournal.h"

#include "error.h"
#include "postgresledgerstore.h"
#include "postgressandboxjournal.h"
#include "sqliteledgerstore.h"
#include "sqlitesandboxjournal.h"

namespace idempo::sandbox {

std::unique_ptr<SandboxJournal> SandboxJournal::open(LedgerStore &store)
{
    if (auto *sqlite = dynamic_cast<SqliteLedgerStore *>(&store))
        return std::make_unique<SqliteSandboxJournal>(*sqlite);
    if (auto *postgres = dynamic_cast<PostgresLedgerStore *>(&store))
        return std::make_unique<PostgresSandboxJournal>(*postgres);
    throw Error(ErrorCode::InvalidArgument, "the sandbox journal needs an embedded (sqlite:) or PostgreSQL ledger");
}

} // namespace idempo::sandbox
