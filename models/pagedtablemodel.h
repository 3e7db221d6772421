// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include <QAbstractTableModel>
#include <QDateTime>

#include "keysetdiff.h"
#include "keysetposition.h"
#include "ledgerconnection.h"

namespace idempo {

/// Header data of a list's column: which directions the store can order it by, a bitmask of
/// SortsAscending and SortsDescending (0: the column cannot be ordered by).
inline constexpr int HeaderSortOrdersRole = Qt::UserRole + 0x100;
inline constexpr int SortsAscending = 1;
inline constexpr int SortsDescending = 2;
/// Header data of a list's column: whether, and how soon, its text may be cut short with an
/// ellipsis when the list is narrow (LedgerTableView). A column without it (states, amounts,
/// counts, times) is kept whole. ElidesFirst: free text the detail pane shows whole (errors, a
/// first approver's reason, a dead letter's payload), cut before anything else; true: names
/// (namespaces, steps, owners), cut after the titles wider than their columns; ElidesLast: the
/// column that names the row (its operation key), cut only after all the others.
inline constexpr int HeaderElidesRole = Qt::UserRole + 0x101;
inline constexpr int ElidesLast = 2;
inline constexpr int ElidesFirst = 3;

/// One keyset page as the worker returns it: plain values only.
template <typename Row> struct PageResult
{
    std::vector<Row> rows;
    KeysetPosition cursor = KeysetPosition::start(); ///< keyset cursor after the last row scanned
    bool more = false; ///< the source may hold further rows past `cursor`
    std::int64_t storeNowMs = 0;
};

/// The paging engine shared by the ledger's table models: rows arrive in keyset pages through
/// canFetchMore()/fetchMore(), every query runs on LedgerConnection's worker, and a generation
/// token drops the answers of a superseded filter. A live change refreshes the visible window
/// (setViewport) and, once everything is loaded, the tail, as ranged row changes.
template <typename Row> class PagedTableModel : public QAbstractTableModel
{
public:
    /// Loads rows after the keyset position `after`, at most `limit` matches. Runs on the worker
    /// thread, so it must capture only values.
    using Loader = std::function<PageResult<Row>(LedgerStore &, MessageQueue *,
                                                 KeysetPosition after, int limit)>;

    int rowCount(const QModelIndex &parent = {}) const override
    {
        return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
    }

    bool canFetchMore(const QModelIndex &parent) const override
    {
        return !parent.isValid() && m_more && !m_fetching && m_connection->isOpen();
    }

    void fetchMore(const QModelIndex &parent) override
    {
        if (!canFetchMore(parent))
            return;
        m_fetching = true;
        const quint64 generation = m_generation;
        m_connection->query(
            this,
            [loader = loader(), after = m_cursor, limit = m_pageSize](
                LedgerStore &s, MessageQueue *q) { return loader(s, q, after, limit); },
            [this, generation](PageResult<Row> page) {
                if (generation != m_generation)
                    return;
                noteStoreClock(page.storeNowMs);
                // The cursor moves before the rows go in: a view reacting to rowsInserted may
                // ask for the next page at once.
                m_cursor = std::max(m_cursor, page.cursor);
                m_more = page.more;
                if (!page.rows.empty()) {
                    const int first = rowCount();
                    beginInsertRows({}, first, first + static_cast<int>(page.rows.size()) - 1);
                    m_rows.insert(m_rows.end(), std::make_move_iterator(page.rows.begin()),
                                  std::make_move_iterator(page.rows.end()));
                    endInsertRows();
                }
                m_fetching = false;
                ++m_revision;
                pageApplied();
                if (m_refreshPending)
                    refresh();
            });
    }

    const Row &rowAt(int row) const { return m_rows.at(static_cast<std::size_t>(row)); }
    bool isLoading() const { return m_fetching; }
    int pageSize() const { return m_pageSize; }
    void setPageSize(int rows) { m_pageSize = std::max(1, rows); }

    /// The rows a view shows; a live refresh re-reads these.
    void setViewport(int first, int count)
    {
        m_viewFirst = std::max(0, first);
        m_viewCount = std::max(0, count);
    }

    /// Drops every row and loads the first page again (after a filter change).
    void reload()
    {
        ++m_generation;
        beginResetModel();
        m_rows.clear();
        m_cursor = KeysetPosition::start();
        m_more = true;
        m_fetching = false;
        m_refreshing = false;
        m_refreshPending = false;
        ++m_revision;
        endResetModel();
        fetchMore({});
    }

    /// Re-reads the visible window and, when everything is loaded, looks for new rows.
    void refresh()
    {
        if (!m_connection->isOpen())
            return;
        if (m_fetching || m_refreshing) {
            m_refreshPending = true;
            return;
        }
        m_refreshPending = false;
        m_refreshing = true;
        const int size = rowCount();
        const int first = std::min(m_viewFirst, size);
        const int count = std::min(m_viewCount + 20, size - first);
        const KeysetPosition after = first > 0
                                         ? position(m_rows[static_cast<std::size_t>(first - 1)])
                                         : KeysetPosition::start();
        const bool tail = !m_more;
        const int windowLimit = count + 50;
        const quint64 generation = m_generation;
        const quint64 revision = m_revision;
        struct Refresh
        {
            PageResult<Row> window;
            PageResult<Row> tail;
        };
        m_connection->query(
            this,
            [loader = loader(), after, count, windowLimit, tail, tailAfter = m_cursor,
             limit = m_pageSize](LedgerStore &s, MessageQueue *q) {
                Refresh r;
                if (count > 0)
                    r.window = loader(s, q, after, windowLimit);
                if (tail)
                    r.tail = loader(s, q, tailAfter, limit);
                return r;
            },
            [this, generation, revision, first, count, windowLimit, tail](Refresh r) {
                if (generation != m_generation)
                    return;
                m_refreshing = false;
                if (revision != m_revision) {
                    refresh();
                    return;
                }
                noteStoreClock(std::max(r.window.storeNowMs, r.tail.storeNowMs));
                applyWindow(first, count, windowLimit, std::move(r.window.rows));
                if (tail)
                    appendTail(std::move(r.tail));
                ++m_revision;
                pageApplied();
                if (m_refreshPending)
                    refresh();
            });
    }

    /// The ledger's clock now, as last reported by the store and carried forward locally.
    std::int64_t storeNowMs() const
    {
        return QDateTime::currentMSecsSinceEpoch() + m_clockOffsetMs;
    }

protected:
    PagedTableModel(LedgerConnection *connection, QObject *parent)
        : QAbstractTableModel(parent), m_connection(connection)
    {
    }

    /// A loader for the current filter (captured by value).
    virtual Loader loader() const = 0;
    virtual std::int64_t rowId(const Row &row) const = 0;
    /// The rank before the id in the listing's order (see KeysetPosition); 0 for id order.
    virtual std::int64_t rowRank(const Row &) const { return 0; }
    /// The row's whole keyset position; an order with a text column overrides it.
    virtual KeysetPosition rowPosition(const Row &row) const
    {
        return {rowRank(row), rowId(row), {}};
    }
    virtual bool sameRow(const Row &a, const Row &b) const = 0;
    /// Called after rows were added or refreshed.
    virtual void pageApplied() {}

    LedgerConnection *connection() const { return m_connection; }

private:
    KeysetPosition position(const Row &row) const { return rowPosition(row); }

    void noteStoreClock(std::int64_t storeNowMs)
    {
        if (storeNowMs > 0)
            m_clockOffsetMs = storeNowMs - QDateTime::currentMSecsSinceEpoch();
    }

    void applyWindow(int first, int count, int windowLimit, std::vector<Row> fresh)
    {
        if (count <= 0)
            return;
        KeysetPosition bound = position(m_rows[static_cast<std::size_t>(first + count - 1)]);
        // A full page may stop short of the window's end: compare only what it covers.
        if (static_cast<int>(fresh.size()) >= windowLimit && !fresh.empty())
            bound = std::min(bound, position(fresh.back()));
        std::erase_if(fresh, [&](const Row &row) { return position(row) > bound; });
        int covered = 0;
        while (covered < count &&
               position(m_rows[static_cast<std::size_t>(first + covered)]) <= bound)
            ++covered;
        KeysetDiffHooks hooks{
            [this](int a, int b) { beginRemoveRows({}, a, b); },
            [this] { endRemoveRows(); },
            [this](int a, int b) { beginInsertRows({}, a, b); },
            [this] { endInsertRows(); },
            [this](int a, int b) { Q_EMIT dataChanged(index(a, 0), index(b, columnCount() - 1)); },
        };
        applyKeysetDiff(
            m_rows, first, covered, std::move(fresh),
            [this](const Row &row) { return position(row); },
            [this](const Row &a, const Row &b) { return sameRow(a, b); }, hooks);
    }

    void appendTail(PageResult<Row> page)
    {
        const KeysetPosition last =
            m_rows.empty() ? KeysetPosition::start() : position(m_rows.back());
        std::erase_if(page.rows, [&](const Row &row) { return position(row) <= last; });
        m_cursor = std::max(m_cursor, page.cursor);
        m_more = page.more;
        if (!page.rows.empty()) {
            const int first = rowCount();
            beginInsertRows({}, first, first + static_cast<int>(page.rows.size()) - 1);
            m_rows.insert(m_rows.end(), std::make_move_iterator(page.rows.begin()),
                          std::make_move_iterator(page.rows.end()));
            endInsertRows();
        }
    }

    LedgerConnection *m_connection;
    std::vector<Row> m_rows;
    KeysetPosition m_cursor = KeysetPosition::start();
    std::int64_t m_clockOffsetMs = 0;
    quint64 m_generation = 0;
    quint64 m_revision = 0;
    int m_pageSize = 200;
    int m_viewFirst = 0;
    int m_viewCount = 60;
    bool m_more = true;
    bool m_fetching = false;
    bool m_refreshing = false;
    bool m_refreshPending = false;
};

} // namespace idempo
