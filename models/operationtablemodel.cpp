// SPDX-License-Identifier: Apache-2.0
#include "operationtablemodel.h"

#include <QFont>

#include "displayformat.h"

namespace idempo {

OperationTableModel::OperationTableModel(LedgerConnection *connection, QObject *parent)
    : PagedTableModel<Operation>(connection, parent)
{
}

void OperationTableModel::setQuery(const OperationQuery &query)
{
    m_query = query;
    reload();
}

void OperationTableModel::setFilters(OperationQuery query)
{
    query.order = m_query.order;
    setQuery(query);
}

void OperationTableModel::sort(int column, Qt::SortOrder order)
{
    const std::optional<ListOrder> by = listOrder(column, order);
    if (!by || *by == m_query.order)
        return;
    m_query.order = *by;
    reload();
}

std::optional<ListOrder> OperationTableModel::listOrder(int column, Qt::SortOrder order)
{
    const bool up = order == Qt::AscendingOrder;
    switch (column) {
    case Key:
        return up ? std::optional(ListOrder::KeyAscending) : std::nullopt;
    case Value:
        return up ? ListOrder::ValueAscending : ListOrder::ValueDescending;
    case Created:
        return up ? ListOrder::Id : ListOrder::IdDescending;
    case Updated:
        return up ? ListOrder::UpdatedAscending : ListOrder::UpdatedDescending;
    }
    return std::nullopt;
}

void OperationTableModel::tick()
{
    if (rowCount() > 0)
        Q_EMIT dataChanged(index(0, LeaseExpiry), index(rowCount() - 1, Updated));
}

int OperationTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

bool OperationTableModel::lapsed(const Operation &op) const
{
    return op.state == OperationState::Dispatching && op.leaseExpiresAtMs &&
           *op.leaseExpiresAtMs <= storeNowMs();
}

QVariant OperationTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Operation &op = rowAt(index.row());
    const std::int64_t now = storeNowMs();
    switch (role) {
    case KeyRole:
        return displayText(op.key);
    case LapsedRole:
        return lapsed(op);
    case Qt::DisplayRole:
        switch (index.column()) {
        case Key:
            return displayText(op.key);
        case Namespace:
            return displayText(op.ns);
        case Run:
            return displayText(op.runId);
        case Step:
            return displayText(op.stepId);
        case State:
            return stateText(op.state);
        case Value:
            return op.value ? QString::fromStdString(formatAmount(*op.value)) : QString();
        case Attempt:
            return QStringLiteral("%1 / %2").arg(op.attempt).arg(op.maxAttempts);
        case Owner:
            return displayText(op.leaseOwner);
        case Token:
            return static_cast<qlonglong>(op.fencingToken);
        case LeaseExpiry:
            if (op.state != OperationState::Dispatching || !op.leaseExpiresAtMs)
                return QString();
            return *op.leaseExpiresAtMs > now
                       ? tr("%1 left").arg(durationText(*op.leaseExpiresAtMs - now))
                       : tr("LAPSED %1 ago").arg(durationText(now - *op.leaseExpiresAtMs));
        case Created:
            return tr("%1 ago").arg(durationText(std::max<std::int64_t>(0, now - op.createdAtMs)));
        case Updated:
            return tr("%1 ago").arg(durationText(std::max<std::int64_t>(0, now - op.updatedAtMs)));
        case Error:
            if (!op.errorClass)
                return QString();
            return QString(QString::fromLatin1(errorClassName(*op.errorClass).data()) +
                           (op.errorDetail.empty()
                                ? QString()
                                : QString(QStringLiteral(": ") + displayText(op.errorDetail))));
        }
        return {};
    case RawRole:
        switch (index.column()) {
        case Value:
            return static_cast<qlonglong>(op.value ? op.value->minorUnits : -1);
        case Attempt:
            return op.attempt;
        case Token:
            return static_cast<qlonglong>(op.fencingToken);
        case LeaseExpiry:
            return static_cast<qlonglong>(op.leaseExpiresAtMs.value_or(0));
        case Created:
            return static_cast<qlonglong>(op.createdAtMs);
        case Updated:
            return static_cast<qlonglong>(op.updatedAtMs);
        default:
            return data(index, Qt::DisplayRole);
        }
    case Qt::ToolTipRole:
        if (index.column() == Created)
            return timestampText(op.createdAtMs);
        if (index.column() == Updated)
            return timestampText(op.updatedAtMs);
        if (index.column() == LeaseExpiry && op.leaseExpiresAtMs)
            return tr("Lease expires %1").arg(timestampText(*op.leaseExpiresAtMs));
        return {};
    case Qt::DecorationRole:
        return index.column() == State ? QVariant(stateColor(op.state)) : QVariant();
    case Qt::FontRole:
        if ((index.column() == LeaseExpiry && lapsed(op)) ||
            (index.column() == State && needsAttention(op.state))) {
            QFont bold;
            bold.setBold(true);
            return bold;
        }
        return {};
    case Qt::ForegroundRole:
        if (index.column() == LeaseExpiry && lapsed(op))
            return stateColor(OperationState::ConfirmationRequired);
        return {};
    case Qt::TextAlignmentRole:
        if (index.column() == Token || index.column() == Attempt || index.column() == Value)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    }
    return {};
}

QVariant OperationTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal)
        return {};
    const bool up = listOrder(section, Qt::AscendingOrder).has_value();
    const bool down = listOrder(section, Qt::DescendingOrder).has_value();
    switch (role) {
    case HeaderSortOrdersRole:
        return (up ? SortsAscending : 0) | (down ? SortsDescending : 0);
    case HeaderElidesRole:
        if (section == Key)
            return ElidesLast;
        if (section == Error)
            return ElidesFirst;
        return section == Namespace || section == Run || section == Step || section == Owner;
    case Qt::InitialSortOrderRole:
        // Newest, highest and latest first on a first click; the key alphabetically.
        if (section == Key)
            return QVariant(int(Qt::AscendingOrder));
        return down ? QVariant(int(Qt::DescendingOrder)) : QVariant();
    case Qt::ToolTipRole:
        if (section == Value)
            return tr("Click to order by value in the ledger. With reference rates (idempo "
                      "four-eyes --rates) every value is ranked in the reference currency, and a "
                      "currency without a rate above every priced value; without rates each "
                      "value is ranked by its minor units as written");
        if (section == Key)
            return tr("Click to order by operation key (byte order) in the ledger");
        if (up || down)
            return tr("Click to order by %1 time in the ledger (ascending: earliest first)")
                .arg(headerData(section, orientation).toString().toLower());
        return tr("The ledger cannot order by %1: order by key, value, created or last change")
            .arg(headerData(section, orientation).toString().toLower());
    case Qt::DisplayRole:
        break;
    default:
        return {};
    }
    switch (section) {
    case Key:
        return tr("Operation key");
    case Namespace:
        return tr("Namespace");
    case Run:
        return tr("Run");
    case Step:
        return tr("Step");
    case State:
        return tr("State");
    case Value:
        return tr("Value");
    case Attempt:
        return tr("Attempt");
    case Owner:
        return tr("Lease owner");
    case Token:
        return tr("Fencing token");
    case LeaseExpiry:
        return tr("Lease");
    case Created:
        return tr("Created");
    case Updated:
        return tr("Last change");
    case Error:
        return tr("Last error");
    }
    return {};
}

PagedTableModel<Operation>::Loader OperationTableModel::loader() const
{
    return [query = m_query](LedgerStore &store, MessageQueue *, KeysetPosition after, int limit) {
        PageResult<Operation> page;
        OperationQuery::Page scanned = query.scan(store, after, limit);
        page.rows = std::move(scanned.rows);
        page.more = scanned.more;
        page.cursor = scanned.cursor;
        page.storeNowMs = store.nowMs();
        return page;
    };
}

} // namespace idempo
