// SPDX-License-Identifier: Apache-2.0
#include "operationquery.h"

#include <algorithm>

namespace idempo {

std::vector<ListFilter> OperationQuery::filters(std::int64_t nowMs, std::int64_t afterId, int limit) const
{
    ListFilter base;
    base.runId = runId;
    base.keyPrefix = keyPrefix;
    if (minAgeMs)
        base.updatedBeforeMs = nowMs - *minAgeMs;
    base.afterId = afterId;
    base.limit = limit;
    if (states.empty())
        return {base};
    std::vector<ListFilter> out;
    for (OperationState state : states) {
        ListFilter f = base;
        f.state = state;
        out.push_back(f);
    }
    return out;
}

std::vector<Operation> OperationQuery::page(LedgerStore &store, std::int64_t afterId, int limit) const
{
    const std::int64_t now = minAgeMs ? store.nowMs() : 0;
    const std::vector<ListFilter> all = filters(now, afterId, limit);
    if (all.size() == 1)
        return store.list(all.front());
    // Each state's page holds its first `limit` ids, so the first `limit` of the merge are exact.
    std::vector<Operation> merged;
    for (const ListFilter &f : all) {
        std::vector<Operation> part = store.list(f);
        merged.insert(merged.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
    std::sort(merged.begin(), merged.end(), [](const Operation &a, const Operation &b) { return a.id < b.id; });
    if (merged.size() > static_cast<std::size_t>(limit))
        merged.resize(static_cast<std::size_t>(limit));
    return merged;
}

} // namespace idempo
