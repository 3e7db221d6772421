// SPDX-License-Identifier: Apache-2.0
#include "runtablemodel.h"

#include "displayformat.h"

namespace idempo {

namespace {
constexpr int OperationsPerPage = 2000;
}

RunTableModel::RunTableModel(LedgerConnection *connection, QObject *parent)
    : QAbstractTableModel(parent), m_connection(connection)
{
}

void RunTableModel::setQuery(const OperationQuery &query)
{
    m_query = query;
    reload();
}

void RunTableModel::reload()
{
    ++m_generation;
    beginResetModel();
    m_rows.clear();
    m_rowOf.clear();
    m_cursor = 0;
    m_more = true;
    m_fetching = false;
    m_refreshing = false;
    endResetModel();
    fetchMore({});
}

void RunTableModel::setViewport(int first, int count)
{
    m_viewFirst = std::max(0, first);
    m_viewCount = std::max(0, count);
}

int RunTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int RunTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

bool RunTableModel::canFetchMore(const QModelIndex &parent) const
{
    return !parent.isValid() && m_more && !m_fetching && m_connection->isOpen();
}

RunTableModel::Scan RunTableModel::scan(LedgerStore &store, const OperationQuery &query,
                                        std::int64_t afterId, int limit)
{
    Scan s;
    const OperationQuery::Page page = query.scan(store, {0, afterId}, limit);
    s.runs = RunSummary::fold(page.rows);
    s.more = page.more;
    s.cursor = page.cursor.id;
    return s;
}

void RunTableModel::fetchMore(const QModelIndex &parent)
{
    if (!canFetchMore(parent))
        return;
    m_fetching = true;
    const quint64 generation = m_generation;
    m_connection->query(
        this,
        [query = m_query, after = m_cursor](LedgerStore &s, MessageQueue *) {
            return scan(s, query, after, OperationsPerPage);
        },
        [this, generation](Scan result) {
            if (generation != m_generation)
                return;
            m_cursor = result.cursor;
            m_more = result.more;
            mergeRuns(result.runs);
            m_fetching = false;
            Q_EMIT pageLoaded();
        });
}

void RunTableModel::mergeRuns(const std::vector<RunSummary> &runs)
{
    std::vector<RunSummary> fresh;
    for (const RunSummary &run : runs) {
        const auto found = m_rowOf.constFind(QString::fromStdString(run.identity()));
        if (found == m_rowOf.constEnd()) {
            fresh.push_back(run);
            continue;
        }
        m_rows[static_cast<std::size_t>(*found)].merge(run);
        Q_EMIT dataChanged(index(*found, 0), index(*found, ColumnCount - 1));
    }
    if (fresh.empty())
        return;
    const int first = rowCount();
    beginInsertRows({}, first, first + static_cast<int>(fresh.size()) - 1);
    for (RunSummary &run : fresh) {
        m_rowOf.insert(QString::fromStdString(run.identity()), static_cast<int>(m_rows.size()));
        m_rows.push_back(std::move(run));
    }
    endInsertRows();
}

void RunTableModel::refresh()
{
    if (m_fetching || m_refreshing || !m_connection->isOpen())
        return;
    m_refreshing = true;
    const int first = std::min(m_viewFirst, rowCount());
    const int last = std::min(rowCount(), first + m_viewCount + 10);
    std::vector<std::pair<std::string, std::string>> visible; // (namespace, run id)
    for (int row = first; row < last; ++row)
        visible.emplace_back(m_rows[static_cast<std::size_t>(row)].ns,
                             m_rows[static_cast<std::size_t>(row)].runId);
    struct Result
    {
        std::vector<RunSummary> visible;
        Scan tail;
    };
    const quint64 generation = m_generation;
    m_connection->query(
        this,
        [query = m_query, visible, tail = !m_more, after = m_cursor](LedgerStore &s,
                                                                     MessageQueue *) {
            Result r;
            for (const auto &[ns, runId] : visible) {
                OperationQuery one = query;
                one.ns = ns;
                one.runId = runId;
                std::vector<RunSummary> folded =
                    RunSummary::fold(one.page(s, KeysetPosition::start(), 1000));
                RunSummary run = folded.empty() ? RunSummary{} : folded.front();
                run.ns = ns;
                run.runId = runId;
                r.visible.push_back(std::move(run));
            }
            if (tail)
                r.tail = scan(s, query, after, OperationsPerPage);
            return r;
        },
        [this, generation, first, tail = !m_more](Result r) {
            if (generation != m_generation)
                return;
            m_refreshing = false;
            for (std::size_t i = 0; i < r.visible.size(); ++i) {
                const int row = first + static_cast<int>(i);
                if (row >= rowCount() ||
                    m_rows[static_cast<std::size_t>(row)].identity() != r.visible[i].identity())
                    break;
                RunSummary &current = m_rows[static_cast<std::size_t>(row)];
                // Keep the run's place in the list even when its first record left the filter.
                r.visible[i].firstOperationId = current.firstOperationId;
                if (!(current == r.visible[i])) {
                    current = r.visible[i];
                    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
                }
            }
            if (tail) {
                m_cursor = std::max(m_cursor, r.tail.cursor);
                m_more = r.tail.more;
                // Steps of visible runs were just recounted: only fold in runs not on screen.
                std::vector<RunSummary> others;
                for (RunSummary &run : r.tail.runs) {
                    const auto found = m_rowOf.constFind(QString::fromStdString(run.identity()));
                    if (found == m_rowOf.constEnd() || *found < first ||
                        *found >= first + static_cast<int>(r.visible.size()))
                        others.push_back(std::move(run));
                }
                mergeRuns(others);
            }
            Q_EMIT pageLoaded();
        });
}

QVariant RunTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const RunSummary &run = runAt(index.row());
    const auto count = [&](OperationState s) { return run.byState[static_cast<std::size_t>(s)]; };
    const int pending = count(OperationState::ConfirmationRequired) +
                        count(OperationState::UnknownOutcome) +
                        count(OperationState::AwaitingApproval);
    if (role == KeyRole)
        return displayText(run.runId);
    if (role == Qt::DecorationRole && index.column() == State)
        return stateColor(run.headline());
    if (role == RawRole) {
        switch (index.column()) {
        case Steps:
            return run.steps();
        case Pending:
            return pending;
        case Started:
            return static_cast<qlonglong>(run.startedAtMs);
        case LastChange:
            return static_cast<qlonglong>(run.lastChangeAtMs);
        default:
            break;
        }
    }
    if (role != Qt::DisplayRole && role != RawRole)
        return {};
    switch (index.column()) {
    case RunId:
        return displayText(run.runId);
    case Namespace:
        return displayText(run.ns);
    case State:
        return stateText(run.headline());
    case Steps:
        return run.steps();
    case Pending:
        return pending;
    case Started:
        return timestampText(run.startedAtMs);
    case LastChange:
        return timestampText(run.lastChangeAtMs);
    }
    return {};
}

QVariant RunTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case RunId:
        return tr("Run");
    case Namespace:
        return tr("Namespace");
    case State:
        return tr("Most urgent state");
    case Steps:
        return tr("Steps");
    case Pending:
        return tr("Needs a person");
    case Started:
        return tr("Started");
    case LastChange:
        return tr("Last change");
    }
    return {};
}

} // namespace idempo
