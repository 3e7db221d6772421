// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerstore.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace idempo {

/// What a list view asks for: pushed into the store's ListFilter, one per state.
struct OperationQuery
{
    std::vector<OperationState> states;    ///< empty = every state
    std::string runId;
    std::string keyPrefix;
    std::optional<std::int64_t> minAgeMs;  ///< only records untouched for at least this long

    bool operator==(const OperationQuery &) const = default;

    /// The store's filters for one state (or none), relative to the store's `nowMs`.
    std::vector<ListFilter> filters(std::int64_t nowMs, std::int64_t afterId, int limit) const;

    /// One keyset page: the first `limit` records with id > afterId across every state
    /// filter, merged by id. Runs on the worker thread.
    std::vector<Operation> page(LedgerStore &store, std::int64_t afterId, int limit) const;
};

} // namespace idempo
