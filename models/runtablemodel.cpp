// SPDX-License-Identifier: Apache-2.0
#include "runtablemodel.h"

#include <algorithm>
#include <unordered_map>

#include <QColor>

#include "displayformat.h"
#include "pagedtablemodel.h"
#include "runbudgetuse.h"

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
    m_pinned.clear();
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
    s.nowMs = store.nowMs();
    const OperationQuery::Page page = query.scan(store, {0, afterId}, limit);
    s.runs = RunSummary::fold(page.rows);
    attachRecords(store, s.runs);
    s.more = page.more;
    s.cursor = page.cursor.id;
    return s;
}

void RunTableModel::attachRecords(LedgerStore &store, std::vector<RunSummary> &runs)
{
    std::vector<std::pair<std::string, std::string>> ids;
    ids.reserve(runs.size());
    for (const RunSummary &run : runs)
        ids.emplace_back(run.ns, run.runId);
    std::unordered_map<std::string, RunRecord> byIdentity;
    for (RunRecord &record : store.findRuns(ids)) {
        std::string identity = record.ns + '\x1f' + record.runId;
        byIdentity.emplace(std::move(identity), std::move(record));
    }
    for (RunSummary &run : runs)
        if (const auto found = byIdentity.find(run.identity()); found != byIdentity.end())
            run.record = found->second;
}

std::vector<RunSummary> RunTableModel::halted(LedgerStore &store, const OperationQuery &query)
{
    RunFilter filter;
    filter.ns = query.ns;
    filter.state = RunState::Halted;
    filter.limit = MaxPinned;
    // A filter on the steps pins only the halted runs with a step that passes it.
    const bool narrowed = !query.states.empty() || !query.keyPrefix.empty() || query.minAgeMs;
    std::vector<RunSummary> pinned;
    for (RunRecord &record : store.listRuns(filter)) {
        if (!query.runId.empty() && record.runId != query.runId)
            continue;
        if (query.ns.empty() && query.hideSandbox && isSandboxNamespace(record.ns))
            continue;
        OperationQuery one = query;
        one.ns = record.ns;
        one.runId = record.runId;
        std::vector<RunSummary> folded =
            RunSummary::fold(one.page(store, KeysetPosition::start(), 1000));
        if (folded.empty() && narrowed)
            continue;
        RunSummary run = folded.empty() ? RunSummary{} : std::move(folded.front());
        run.ns = record.ns;
        run.runId = record.runId;
        run.record = std::move(record);
        pinned.push_back(std::move(run));
    }
    // The latest halt first: it is the one the person was just told about.
    std::stable_sort(pinned.begin(), pinned.end(), [](const RunSummary &a, const RunSummary &b) {
        return a.record->haltedAtMs.value_or(0) > b.record->haltedAtMs.value_or(0);
    });
    return pinned;
}

void RunTableModel::fetchMore(const QModelIndex &parent)
{
    if (!canFetchMore(parent))
        return;
    m_fetching = true;
    const quint64 generation = m_generation;
    m_connection->query(
        this,
        [query = m_query, after = m_cursor,
         first = m_rows.empty() && m_cursor == 0](LedgerStore &s, MessageQueue *) {
            Scan result = scan(s, query, after, OperationsPerPage);
            if (first)
                result.pinned = halted(s, query);
            return result;
        },
        [this, generation](Scan result) {
            if (generation != m_generation)
                return;
            if (!result.pinned.empty() && m_rows.empty()) {
                beginInsertRows({}, 0, static_cast<int>(result.pinned.size()) - 1);
                for (RunSummary &run : result.pinned) {
                    const QString identity = QString::fromStdString(run.identity());
                    m_pinned.insert(identity);
                    m_rowOf.insert(identity, static_cast<int>(m_rows.size()));
                    m_rows.push_back(std::move(run));
                }
                endInsertRows();
            }
            m_nowMs = result.nowMs;
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
        const QString identity = QString::fromStdString(run.identity());
        const auto found = m_rowOf.constFind(identity);
        if (found == m_rowOf.constEnd()) {
            fresh.push_back(run);
            continue;
        }
        if (isPinned(identity))
            continue;
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
        std::int64_t nowMs = 0;
    };
    const quint64 generation = m_generation;
    m_connection->query(
        this,
        [query = m_query, visible, tail = !m_more, after = m_cursor](LedgerStore &s,
                                                                     MessageQueue *) {
            Result r;
            r.nowMs = s.nowMs();
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
            attachRecords(s, r.visible);
            if (tail)
                r.tail = scan(s, query, after, OperationsPerPage);
            return r;
        },
        [this, generation, first, tail = !m_more](Result r) {
            if (generation != m_generation)
                return;
            m_refreshing = false;
            m_nowMs = r.nowMs;
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
                } else if (current.record && current.record->budgets.noProgressMs &&
                           current.open() > 0) {
                    // Only the clock moved: the time-without-progress bar grows.
                    Q_EMIT dataChanged(index(row, Budget), index(row, Budget));
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
    const std::vector<BudgetUse> uses = run.record && index.column() == Budget
                                            ? budgetUses(*run.record, run.open(), m_nowMs)
                                            : std::vector<BudgetUse>{};
    if (index.column() == Budget) {
        QStringList labels;
        for (const BudgetUse &use : uses)
            labels << use.label;
        if (role == BudgetRole) {
            QVariantList bars;
            for (const BudgetUse &use : uses)
                bars << QVariantMap{{QStringLiteral("fraction"), use.fraction},
                                    {QStringLiteral("label"), use.label},
                                    {QStringLiteral("brief"), use.brief},
                                    {QStringLiteral("halted_it"), use.haltedIt}};
            return bars;
        }
        if (role == Qt::ToolTipRole)
            return labels.isEmpty() ? QVariant() : QVariant(labels.join(QLatin1Char('\n')));
        if (role == RawRole) {
            double most = 0;
            for (const BudgetUse &use : uses)
                most = std::max(most, use.fraction);
            return most;
        }
        if (role == Qt::DisplayRole)
            return labels.isEmpty() ? (run.record ? tr("no limits") : tr("no run record"))
                                    : labels.join(QStringLiteral(" · "));
        return {};
    }
    if (index.column() == State && run.halted()) {
        if (role == Qt::DecorationRole)
            return QColor(QStringLiteral("#c62828"));
        if (role == Qt::ToolTipRole)
            return runStateText(*run.record);
        if (role == Qt::DisplayRole || role == RawRole)
            return run.record->haltBudget
                       ? tr("Halted: %1").arg(budgetText(*run.record->haltBudget))
                       : tr("Halted");
    }
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
    // The budget bars shorten their labels (BudgetBarDelegate) before a time is cut short.
    if (orientation == Qt::Horizontal && role == HeaderElidesRole)
        return section == Namespace || section == Budget;
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole)
        return tr("Halted runs first, then in order of their first operation: runs are folded from "
                  "the ledger's pages of operations, which cannot be ordered by a run's column");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case RunId:
        return tr("Run");
    case Namespace:
        return tr("Namespace");
    case State:
        return tr("Most urgent state");
    case Budget:
        return tr("Budget use");
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
