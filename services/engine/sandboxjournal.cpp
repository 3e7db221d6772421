// SPDX-License-Identifier: Apache-2.0
#include "sandboxjournal.h"

#include "error.h"
#include "ledgerstore.h"

namespace idempo::sandbox {

std::unique_ptr<SandboxJournal> SandboxJournal::open(LedgerStore &store)
{
    if (std::unique_ptr<SandboxJournal> journal = store.sandboxJournal())
        return journal;
    throw Error(ErrorCode::InvalidArgument,
                "the sandbox journal needs an embedded (sqlite:) or PostgreSQL ledger");
}

} // namespace idempo::sandbox
