// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "keysetposition.h"
#include "ledgerstore.h"

namespace idempo {

/// What a list view asks for: pushed into the store's ListFilter, one per state.
struct OperationQuery
{
    std::vector<OperationState> states; ///< empty = every state
    std::string runId;
    std::string keyPrefix;
    std::optional<std::int64_t> minAgeMs; ///< only records untouched for at least this long
    /// Highest value (minor units) first, records without a value last, oldest first among
    /// equals; otherwise oldest (lowest id) first. Ordered by the store.
    bool highestValueFirst = false;

    bool operator==(const OperationQuery &) const = default;

    /// The store's filters for one state (or none), relative to the store's `nowMs`.
    std::vector<ListFilter> filters(std::int64_t nowMs, KeysetPosition after, int limit) const;

    /// One keyset page: the first `limit` records after `after` across every state filter,
    /// merged in the query's order. Runs on the worker thread.
    std::vector<Operation> page(LedgerStore &store, KeysetPosition after, int limit) const;

    /// Where `op` stands in this query's order.
    KeysetPosition position(const Operation &op) const;
};

} // namespace idempo
