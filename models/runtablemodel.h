// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QAbstractTableModel>
#include <QHash>

#include "ledgerconnection.h"
#include "operationquery.h"
#include "runsummary.h"

namespace idempo {

/// Runs, in order of their first operation, folded from keyset pages of operations on the worker.
/// The store keeps no run table, so a page of runs is a page of operations grouped; a run whose
/// steps span pages is merged as later pages arrive. A live change re-reads the visible runs.
class RunTableModel final : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        RunId,
        Namespace,
        State,
        Steps,
        Pending,
        Started,
        LastChange,
        ColumnCount
    };
    enum Role
    {
        RawRole = Qt::UserRole,
        KeyRole
    };

    explicit RunTableModel(LedgerConnection *connection, QObject *parent = nullptr);

    /// Runs with an operation matching `query` (state, run, key prefix, age).
    void setQuery(const OperationQuery &query);
    void reload();
    void refresh();
    void setViewport(int first, int count);
    const RunSummary &runAt(int row) const { return m_rows.at(static_cast<std::size_t>(row)); }

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
        std::int64_t cursor = 0;
        bool more = false;
    };
    static Scan scan(LedgerStore &store, const OperationQuery &query, std::int64_t afterId,
                     int limit);
    void mergeRuns(const std::vector<RunSummary> &runs);

    LedgerConnection *m_connection;
    OperationQuery m_query;
    std::vector<RunSummary> m_rows;
    QHash<QString, int> m_rowOf;
    std::int64_t m_cursor = 0;
    quint64 m_generation = 0;
    int m_viewFirst = 0;
    int m_viewCount = 40;
    bool m_more = true;
    bool m_fetching = false;
    bool m_refreshing = false;
};

} // namespace idempo
