// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <limits>

namespace idempo {

/// A row's place in a listing's order, which keyset pages follow: `rank` first, then id. Id
/// order has rank 0 throughout; an order by a column descending uses the column's negation as
/// rank, so that "after" always means "greater".
struct KeysetPosition
{
    std::int64_t rank = 0;
    std::int64_t id = 0;

    // Spelled out: moc cannot parse <compare>, which a defaulted operator<=> needs.
    bool operator==(const KeysetPosition &o) const { return rank == o.rank && id == o.id; }
    bool operator<(const KeysetPosition &o) const
    {
        return rank < o.rank || (rank == o.rank && id < o.id);
    }
    bool operator>(const KeysetPosition &o) const { return o < *this; }
    bool operator<=(const KeysetPosition &o) const { return !(o < *this); }

    /// Before every row: the cursor of a first page.
    static constexpr KeysetPosition start()
    {
        return {std::numeric_limits<std::int64_t>::min(), 0};
    }
    bool isStart() const { return *this == start(); }
};

} // namespace idempo
