// SPDX-License-Identifier: Apache-2.0
#include "ledgerstore.h"

#include "changefeed.h"
#include "sandboxjournal.h"

namespace idempo {

std::unique_ptr<ChangeFeed> LedgerStore::changeFeed()
{
    return nullptr;
}

std::unique_ptr<sandbox::SandboxJournal> LedgerStore::sandboxJournal()
{
    return nullptr;
}

} // namespace idempo
