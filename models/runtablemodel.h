// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QAbstractTableModel>
#include <QHash>
#include <QSet>

#include "ledgerconnection.h"
#include "operationquery.h"
#include "runsummary.h"

namespace idempo {

/// Runs folded from keyset pages of operations on the worker, in order of their first operation,
/// with the ledger's record of each (budgets, their use, halted or not). Halted runs come first:
/// they wait for a person. A run whose steps span pages is merged as later pages arrive; a live
/// change re-reads the visible runs.
class RunTableModel final : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        RunId,
        Namespace,
        State,
        Budget,
        Steps,
        Pending,
        Started,
        LastChange,
        ColumnCount
    };
    enum Role
    {
        RawRole = Qt::UserRole,
        KeyRole,
        /// Budget column: a QVariantList of QVariantMap {"fraction", "label", "brief",
        /// "halted_it"}, one per limited budget (runbudgetuse.h).
        BudgetRole
    };
    /// At most this many halted runs are pinned above the others.
    static constexpr int MaxPinned = 200;

    explicit RunTableModel(LedgerConnection *connection, QObject *parent = nullptr);

    /// Runs with an operation matching `query` (state, run, key prefix, age).
    void setQuery(const OperationQuery &query);
    void reload();
    void refresh();
    void setViewport(int first, int count);
    const RunSummary &runAt(int row) const { return m_rows.at(static_cast<std::size_t>(row)); }
    /// The ledger's clock when the rows were last read (time without progress is judged on it).
    std::int64_t ledgerNowMs() const { return m_nowMs; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;

Q_SIGNALS:
    void pageLoaded();

private:
    struct Scan
    {
        std::vector<RunSummary> runs;
        std::vector<RunSummary> pinned; ///< halted runs, read with the first page only
        std::int64_t cursor = 0;
        std::int64_t nowMs = 0;
        bool more = false;
    };
    static Scan scan(LedgerStore &store, const OperationQuery &query, std::int64_t afterId,
                     int limit);
    static std::vector<RunSummary> halted(LedgerStore &store, const OperationQuery &query);
    static void attachRecords(LedgerStore &store, std::vector<RunSummary> &runs);
    void mergeRuns(const std::vector<RunSummary> &runs);
    bool isPinned(const QString &identity) const { return m_pinned.contains(identity); }

    LedgerConnection *m_connection;
    OperationQuery m_query;
    std::vector<RunSummary> m_rows;
    QHash<QString, int> m_rowOf;
    QSet<QString> m_pinned; ///< identities of the pinned halted runs, counted by their own reads
    std::int64_t m_nowMs = 0;
    std::int64_t m_cursor = 0;
    quint64 m_generation = 0;
    int m_viewFirst = 0;
    int m_viewCount = 40;
    bool m_more = true;
    bool m_fetching = false;
    bool m_refreshing = false;
};

} // namespace idempo
