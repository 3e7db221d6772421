// SPDX-License-Identifier: Apache-2.0
#include "ledgerstore.h"

#include "changefeed.h"
#include "error.h"
#include "sandboxjournal.h"

namespace idempo {

void checkAuditFilter(const AuditFilter &filter)
{
    if (filter.limit < 1 || filter.limit > AuditFilterMaxLimit)
        throw Error(ErrorCode::InvalidArgument, "audit page limit must be 1.." +
                                                    std::to_string(AuditFilterMaxLimit) + ", not " +
                                                    std::to_string(filter.limit));
    if (filter.afterSeq < 0)
        throw Error(ErrorCode::InvalidArgument, "audit cursor must be a seq (0 or more), not " +
                                                    std::to_string(filter.afterSeq));
    if (filter.fromMs && filter.toMs && *filter.fromMs >= *filter.toMs)
        throw Error(ErrorCode::InvalidArgument,
                    "audit time range is empty: from " + std::to_string(*filter.fromMs) +
                        " ms is not before to " + std::to_string(*filter.toMs) + " ms");
}

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
