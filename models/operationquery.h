// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "keysetposition.h"
#include "ledgerstore.h"

namespace idempo {

/// True for a namespace the sandbox writes (`sandbox…`, as SandboxSession proposes and the
/// Sandbox tab requires): simulated operations that review views hide unless asked for.
bool isSandboxNamespace(const std::string &ns);

/// What a list view asks for: pushed into the store's ListFilter, one per state (one in all when
/// the states are every state, as Find's "All listed states").
struct OperationQuery
{
    /// One keyset page as scanned: the rows kept, where the scan stopped, whether more may follow.
    struct Page
    {
        std::vector<Operation> rows;
        KeysetPosition cursor = KeysetPosition::start();
        bool more = false;
    };

    std::vector<OperationState> states; ///< empty = every state
    std::string ns; ///< one namespace (in the store's filter); empty = every one
    /// With no namespace chosen: leave out sandbox namespaces (isSandboxNamespace()). The store
    /// cannot exclude a namespace, so the page drops them and reads on, at most ScanPages pages.
    bool hideSandbox = false;
    std::string runId;
    std::string keyPrefix;
    std::optional<std::int64_t> minAgeMs; ///< only records untouched for at least this long
    std::vector<PayloadMatch> payload;    ///< payload fields every record holds (payloadmatch.h)
    std::string customer;                 ///< the payload's customer; empty = any
    /// The store's order (ListOrder): oldest (lowest id) first by default; ties go oldest first.
    ListOrder order = ListOrder::Id;

    bool operator==(const OperationQuery &) const = default;

    /// The store's filters for one state (or none), relative to the store's `nowMs`, the value
    /// orders ranked by `factors` (valueFactors()).
    std::vector<ListFilter> filters(std::int64_t nowMs, KeysetPosition after, int limit,
                                    const std::vector<ValueFactor> &factors = {}) const;
    /// What the value orders rank by: the ledger's reference rates as they stand (every value in
    /// the reference currency), none without rates or for another order.
    std::vector<ValueFactor> valueFactors(LedgerStore &store) const;

    /// One keyset page: the first `limit` records after `after` across every state filter,
    /// merged in the query's order. Runs on the worker thread.
    std::vector<Operation> page(LedgerStore &store, KeysetPosition after, int limit) const;
    /// page() with the sandbox namespaces left out when hideSandbox: reads on until `limit` rows
    /// are kept, the source ends, or ScanPages pages were read (then `more` holds and `cursor`
    /// names the last row read, so the next page goes on from there).
    Page scan(LedgerStore &store, KeysetPosition after, int limit) const;
    static constexpr int ScanPages = 20;

    /// Where `op` stands in this query's order, values ranked by `factors`.
    KeysetPosition position(const Operation &op,
                            const std::vector<ValueFactor> &factors = {}) const;

private:
    std::vector<Operation> page(LedgerStore &store, const std::vector<ValueFactor> &factors,
                                KeysetPosition after, int limit) const;
};

} // namespace idempo
