// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace idempo {

/// How a model applies a refreshed window: callbacks onto its begin/end row calls.
struct KeysetDiffHooks
{
    std::function<void(int first, int last)> beginRemove;
    std::function<void()> endRemove;
    std::function<void(int first, int last)> beginInsert;
    std::function<void()> endInsert;
    std::function<void(int first, int last)> changed;
};

/// Replaces rows[first, first + count) with `fresh` (both in keyset order, as keyset pages are),
/// emitting the smallest ranged removals, insertions and changes, so selections and scroll
/// positions survive a live refresh. `idOf` reads a row's keyset position (an id, or a
/// KeysetPosition), `same` compares contents.
template <typename T, typename IdOf, typename Same>
void applyKeysetDiff(std::vector<T> &rows, int first, int count, std::vector<T> fresh, IdOf idOf,
                     Same same, const KeysetDiffHooks &hooks)
{
    int pos = first;
    int end = first + count;
    std::size_t j = 0;
    int changedFrom = -1;
    const auto flushChanged = [&](int upTo) {
        if (changedFrom >= 0 && upTo > changedFrom)
            hooks.changed(changedFrom, upTo - 1);
        changedFrom = -1;
    };
    while (pos < end || j < fresh.size()) {
        if (pos < end && (j >= fresh.size() || idOf(rows[pos]) < idOf(fresh[j]))) {
            flushChanged(pos);
            int stop = pos + 1;
            while (stop < end && (j >= fresh.size() || idOf(rows[stop]) < idOf(fresh[j])))
                ++stop;
            hooks.beginRemove(pos, stop - 1);
            rows.erase(rows.begin() + pos, rows.begin() + stop);
            hooks.endRemove();
            end -= stop - pos;
        } else if (pos >= end || idOf(fresh[j]) < idOf(rows[pos])) {
            flushChanged(pos);
            std::size_t stop = j + 1;
            while (stop < fresh.size() && (pos >= end || idOf(fresh[stop]) < idOf(rows[pos])))
                ++stop;
            const int n = static_cast<int>(stop - j);
            hooks.beginInsert(pos, pos + n - 1);
            rows.insert(rows.begin() + pos,
                        std::make_move_iterator(fresh.begin() + static_cast<std::ptrdiff_t>(j)),
                        std::make_move_iterator(fresh.begin() + static_cast<std::ptrdiff_t>(stop)));
            hooks.endInsert();
            pos += n;
            end += n;
            j = stop;
        } else {
            if (!same(rows[pos], fresh[j])) {
                rows[pos] = std::move(fresh[j]);
                if (changedFrom < 0)
                    changedFrom = pos;
            } else {
                flushChanged(pos);
            }
            ++pos;
            ++j;
        }
    }
    flushChanged(pos);
}

} // namespace idempo
