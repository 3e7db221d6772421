// SPDX-License-Identifier: Apache-2.0
#include "operationquery.h"

#include <algorithm>

#include "money.h"

namespace idempo {

bool isSandboxNamespace(const std::string &ns)
{
    return ns.starts_with("sandbox");
}

std::vector<ListFilter> OperationQuery::filters(std::int64_t nowMs, KeysetPosition after, int limit,
                                                const std::vector<ValueFactor> &factors) const
{
    ListFilter base;
    base.valueFactors = factors;
    base.ns = ns;
    base.runId = runId;
    base.keyPrefix = keyPrefix;
    base.payload = payload;
    base.customer = customer;
    if (minAgeMs)
        base.updatedBeforeMs = nowMs - *minAgeMs;
    base.afterId = after.id;
    base.order = order;
    if (!after.isStart()) {
        switch (order) {
        case ListOrder::Id:
        case ListOrder::IdDescending:
            break;
        case ListOrder::ValueDescending:
            base.afterValueMinor = -after.rank;
            break;
        case ListOrder::ValueAscending:
            base.afterValueMinor = after.rank;
            break;
        case ListOrder::UpdatedAscending:
            base.afterUpdatedMs = after.rank;
            break;
        case ListOrder::UpdatedDescending:
            base.afterUpdatedMs = -after.rank;
            break;
        case ListOrder::KeyAscending:
            base.afterKey = after.text;
            break;
        }
    }
    base.limit = limit;
    // Every state is no state filter: one listing the payload index drives, not one per state.
    std::vector<OperationState> distinct = states;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    if (distinct.empty() || distinct.size() == static_cast<std::size_t>(OperationStateCount))
        return {base};
    std::vector<ListFilter> out;
    for (OperationState state : states) {
        ListFilter f = base;
        f.state = state;
        out.push_back(f);
    }
    return out;
}

std::vector<ValueFactor> OperationQuery::valueFactors(LedgerStore &store) const
{
    if (order != ListOrder::ValueDescending && order != ListOrder::ValueAscending)
        return {};
    return ReferenceRates::factorsOf(store.guardSetting(ReferenceRatesSetting));
}

KeysetPosition OperationQuery::position(const Operation &op,
                                        const std::vector<ValueFactor> &factors) const
{
    const std::int64_t value = valueRank(op.value, factors);
    switch (order) {
    case ListOrder::Id:
        break;
    case ListOrder::IdDescending:
        return {-op.id, op.id, {}};
    case ListOrder::ValueDescending:
        return {-value, op.id, {}};
    case ListOrder::ValueAscending:
        return {value, op.id, {}};
    case ListOrder::UpdatedAscending:
        return {op.updatedAtMs, op.id, {}};
    case ListOrder::UpdatedDescending:
        return {-op.updatedAtMs, op.id, {}};
    case ListOrder::KeyAscending:
        return {0, op.id, op.key};
    }
    return {0, op.id, {}};
}

std::vector<Operation> OperationQuery::page(LedgerStore &store, KeysetPosition after,
                                            int limit) const
{
    return page(store, valueFactors(store), after, limit);
}

std::vector<Operation> OperationQuery::page(LedgerStore &store,
                                            const std::vector<ValueFactor> &factors,
                                            KeysetPosition after, int limit) const
{
    const std::int64_t now = minAgeMs ? store.nowMs() : 0;
    const std::vector<ListFilter> all = filters(now, after, limit, factors);
    if (all.size() == 1)
        return store.list(all.front());
    // Each state's page holds its first `limit` records, so the first `limit` of the merge are
    // exact.
    std::vector<Operation> merged;
    for (const ListFilter &f : all) {
        std::vector<Operation> part = store.list(f);
        merged.insert(merged.end(), std::make_move_iterator(part.begin()),
                      std::make_move_iterator(part.end()));
    }
    std::sort(merged.begin(), merged.end(), [&](const Operation &a, const Operation &b) {
        return position(a, factors) < position(b, factors);
    });
    if (merged.size() > static_cast<std::size_t>(limit))
        merged.resize(static_cast<std::size_t>(limit));
    return merged;
}

OperationQuery::Page OperationQuery::scan(LedgerStore &store, KeysetPosition after, int limit) const
{
    Page out;
    out.cursor = after;
    const bool drop = hideSandbox && ns.empty();
    const std::vector<ValueFactor> factors = valueFactors(store);
    for (int read = 0; read < (drop ? ScanPages : 1); ++read) {
        std::vector<Operation> rows = page(store, factors, out.cursor, limit);
        out.more = static_cast<int>(rows.size()) == limit;
        if (rows.empty())
            break;
        out.cursor = position(rows.back(), factors);
        for (Operation &op : rows)
            if (!drop || !isSandboxNamespace(op.ns))
                out.rows.push_back(std::move(op));
        if (!out.more || static_cast<int>(out.rows.size()) >= limit)
            break;
    }
    return out;
}

} // namespace idempo
