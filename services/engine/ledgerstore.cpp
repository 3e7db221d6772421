// SPDX-License-Identifier: Apache-2.0
#include "ledgerstore.h"

#include "changefeed.h"
#include "sandboxjournal.h"

namespace idempo {

std::vector<RunRecord>
LedgerStore::findRuns(const std::vector<std::pair<std::string, std::string>> &runs)
{
    std::vector<RunRecord> found;
    for (const auto &[ns, runId] : runs)
        if (std::optional<RunRecord> run = findRun(ns, runId))
            found.push_back(std::move(*run));
    return found;
}

std::unique_ptr<ChangeFeed> LedgerStore::changeFeed()
{
    return nullptr;
}

std::unique_ptr<sandbox::SandboxJournal> LedgerStore::sandboxJournal()
{
    return nullptr;
}

} // namespace idempo
