// SPDX-License-Identifier: Apache-2.0
#include "suppressiontablemodel.h"

#include "displayformat.h"
#include "operationquery.h"

namespace idempo {

namespace {

/// Bounds one page's scan, so a sparse filter answers in a bounded time and pages on.
constexpr int ScanBudget = 20'000;

QString kindText(ClaimOutcome outcome)
{
    switch (outcome) {
    case ClaimOutcome::Replayed:
        return QStringLiteral("replay");
    case ClaimOutcome::InProgress:
        return QStringLiteral("in progress");
    case ClaimOutcome::RetryLater:
        return QStringLiteral("retry later");
    case ClaimOutcome::ReconcileRequired:
        return QStringLiteral("reconcile required");
    case ClaimOutcome::PayloadMismatch:
        return QStringLiteral("payload mismatch");
    case ClaimOutcome::BudgetExhausted:
        return QStringLiteral("budget exhausted");
    case ClaimOutcome::Claimed:
        return QStringLiteral("claimed");
    }
    return {};
}

} // namespace

SuppressionTableModel::SuppressionTableModel(LedgerConnection *connection, QObject *parent)
    : PagedTableModel<Suppression>(connection, parent)
{
}

void SuppressionTableModel::setQuery(const SuppressionQuery &query)
{
    m_query = query;
    reload();
}

int SuppressionTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant SuppressionTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const Suppression &s = rowAt(index.row());
    if (role == KeyRole)
        return displayText(s.key);
    if (role == RawRole && index.column() == When)
        return static_cast<qlonglong>(s.atMs);
    if (role == Qt::ForegroundRole && index.column() == Kind &&
        s.outcome == ClaimOutcome::PayloadMismatch)
        return stateColor(OperationState::ConfirmationRequired);
    if (role != Qt::DisplayRole && role != RawRole)
        return {};
    switch (index.column()) {
    case When:
        return timestampText(s.atMs);
    case Key:
        return displayText(s.key);
    case Namespace:
        return displayText(s.ns);
    case Kind:
        return kindText(s.outcome);
    case StateAtTime:
        return stateText(s.state);
    case Source:
        return displayText(s.source);
    }
    return {};
}

QVariant SuppressionTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == HeaderElidesRole)
        return section == Key ? QVariant(ElidesLast)
                              : QVariant(section == Namespace || section == Source);
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole)
        return tr("Listed oldest first, as the ledger pages suppressions (by id): it cannot order "
                  "them by a column");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case When:
        return tr("When");
    case Key:
        return tr("Operation key");
    case Namespace:
        return tr("Namespace");
    case Kind:
        return tr("Kind");
    case StateAtTime:
        return tr("Record state");
    case Source:
        return tr("Source");
    }
    return {};
}

PagedTableModel<Suppression>::Loader SuppressionTableModel::loader() const
{
    return [query = m_query](LedgerStore &store, MessageQueue *, KeysetPosition after, int limit) {
        PageResult<Suppression> page;
        page.storeNowMs = store.nowMs();
        const std::string runPrefix = query.runId.empty() ? std::string() : query.runId + ":";
        const auto matches = [&](const Suppression &s) {
            if (query.hideSandbox && isSandboxNamespace(s.ns))
                return false;
            if (query.outcome && s.outcome != *query.outcome)
                return false;
            if (!query.keyPrefix.empty() &&
                s.key.compare(0, query.keyPrefix.size(), query.keyPrefix) != 0)
                return false;
            if (!runPrefix.empty() && s.key.compare(0, runPrefix.size(), runPrefix) != 0)
                return false;
            return !query.maxAgeMs || s.atMs >= page.storeNowMs - *query.maxAgeMs;
        };
        std::int64_t cursor = after.id;
        int scanned = 0;
        page.more = true;
        while (static_cast<int>(page.rows.size()) < limit && scanned < ScanBudget) {
            const int chunk = std::max(limit, 1000);
            std::vector<Suppression> batch = store.suppressions(query.ns, cursor, chunk);
            for (Suppression &s : batch) {
                cursor = s.id;
                ++scanned;
                if (matches(s)) {
                    page.rows.push_back(std::move(s));
                    if (static_cast<int>(page.rows.size()) == limit)
                        break;
                }
            }
            if (static_cast<int>(batch.size()) < chunk &&
                static_cast<int>(page.rows.size()) < limit) {
                page.more = false;
                break;
            }
        }
        page.cursor = {0, cursor};
        return page;
    };
}

} // namespace idempo
