// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <limits>
#include <string>

namespace idempo {

/// A row's place in a listing's order, which keyset pages follow: `rank` first, then `text`,
/// then id. Id order has rank 0 throughout; an order by a column descending uses the column's
/// negation as rank, so that "after" always means "greater". An order by a text column (the
/// operation key) keeps rank 0 and compares `text` byte for byte, as the stores do.
struct KeysetPosition
{
    std::int64_t rank = 0;
    std::int64_t id = 0;
    std::string text;

    // Spelled out: moc cannot parse <compare>, which a defaulted operator<=> needs.
    bool operator==(const KeysetPosition &o) const
    {
        return rank == o.rank && id == o.id && text == o.text;
    }
    bool operator<(const KeysetPosition &o) const
    {
        if (rank != o.rank)
            return rank < o.rank;
        if (const int c = text.compare(o.text); c != 0)
            return c < 0;
        return id < o.id;
    }
    bool operator>(const KeysetPosition &o) const { return o < *this; }
    bool operator<=(const KeysetPosition &o) const { return !(o < *this); }

    /// Before every row: the cursor of a first page.
    static KeysetPosition start() { return {std::numeric_limits<std::int64_t>::min(), 0, {}}; }
    bool isStart() const { return *this == start(); }
};

} // namespace idempo
