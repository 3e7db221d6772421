// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "operationquery.h"
#include "pagedtablemodel.h"

namespace idempo {

/// Operations matching an OperationQuery, oldest or highest value first, paged from the ledger. The
/// lease column counts down on the store's clock (tick()); lapsed leases carry LapsedRole.
class OperationTableModel final : public PagedTableModel<Operation>
{
    Q_OBJECT
public:
    enum Column
    {
        Key,
        Namespace,
        Run,
        Step,
        State,
        Value,
        Attempt,
        Owner,
        Token,
        LeaseExpiry,
        Created,
        Updated,
        Error,
        ColumnCount
    };
    enum Role
    {
        RawRole = Qt::UserRole, ///< a sortable raw value per column
        KeyRole,                ///< the operation key
        LapsedRole,             ///< true for a dispatching record whose lease has expired
    };

    explicit OperationTableModel(LedgerConnection *connection, QObject *parent = nullptr);

    /// Lists `query` in its order (query.order).
    void setQuery(const OperationQuery &query);
    /// setQuery() with the filters of `query` in the order the list follows now.
    void setFilters(OperationQuery query);
    /// Orders by `column` in the store (a header click); a column the store cannot order by,
    /// or not in that direction, changes nothing. headerData(HeaderSortOrdersRole) says which.
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;
    /// The store order a header sort means; nullopt when the store cannot order so.
    static std::optional<ListOrder> listOrder(int column, Qt::SortOrder order);
    const OperationQuery &query() const { return m_query; }
    const Operation &operationAt(const QModelIndex &index) const { return rowAt(index.row()); }
    /// Re-renders the time columns (countdowns, ages) without touching the ledger.
    void tick();

    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

Q_SIGNALS:
    void pageLoaded();

protected:
    Loader loader() const override;
    std::int64_t rowId(const Operation &row) const override { return row.id; }
    KeysetPosition rowPosition(const Operation &row) const override
    {
        return m_query.position(row);
    }
    bool sameRow(const Operation &a, const Operation &b) const override
    {
        return a.version == b.version && a.state == b.state;
    }
    void pageApplied() override { Q_EMIT pageLoaded(); }

private:
    bool lapsed(const Operation &op) const;

    OperationQuery m_query;
};

} // namespace idempo
