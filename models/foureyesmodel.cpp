// SPDX-License-Identifier: Apache-2.0
#include "foureyesmodel.h"

#include <algorithm>

#include "amount.h"
#include "displayformat.h"
#include "ledgerconnection.h"
#include "operationquery.h"
#include "pagedtablemodel.h"

namespace idempo {

FourEyesModel::FourEyesModel(LedgerConnection *connection, QObject *parent)
    : QAbstractTableModel(parent), m_connection(connection)
{
}

void FourEyesModel::setActorName(const QString &name)
{
    if (name == m_actor)
        return;
    m_actor = name;
    apply();
}

void FourEyesModel::setIncludeMine(bool on)
{
    m_includeMine = on;
    apply();
}

void FourEyesModel::setShowSandbox(bool on)
{
    m_showSandbox = on;
    apply();
}

void FourEyesModel::reload()
{
    m_all.clear();
    m_more = false;
    apply();
    refresh();
}

void FourEyesModel::refresh()
{
    const std::uint64_t generation = ++m_generation;
    m_connection->query(
        this, [](LedgerStore &s, MessageQueue *) { return s.pendingApprovals(Limit + 1); },
        [this, generation](std::vector<PendingApproval> rows) {
            if (generation != m_generation)
                return;
            m_more = rows.size() > std::size_t(Limit);
            if (m_more)
                rows.resize(Limit);
            m_all = std::move(rows);
            apply();
            Q_EMIT loaded();
        });
}

bool FourEyesModel::isMine(const PendingApproval &p) const
{
    return !m_actor.isEmpty() && QString::fromStdString(p.approval.operatorName) == m_actor;
}

void FourEyesModel::apply()
{
    std::vector<PendingApproval> shown;
    int waitingForMe = 0;
    int mineWaiting = 0;
    for (const PendingApproval &p : m_all) {
        if (!m_showSandbox && isSandboxNamespace(p.operation.ns))
            continue;
        const bool mine = isMine(p);
        ++(mine ? mineWaiting : waitingForMe);
        if (!mine || m_includeMine)
            shown.push_back(p);
    }
    m_waitingForMe = waitingForMe;
    m_mineWaiting = mineWaiting;
    // A live refresh that finds the same approvals on the same operation versions leaves the
    // rows (and the selection) alone.
    const auto same = [](const PendingApproval &a, const PendingApproval &b) {
        return a.approval.approvalId == b.approval.approvalId &&
               a.operation.version == b.operation.version;
    };
    if (std::equal(shown.begin(), shown.end(), m_shown.begin(), m_shown.end(), same) &&
        m_mineShown == m_actor)
        return;
    beginResetModel();
    m_shown = std::move(shown);
    m_mineShown = m_actor;
    endResetModel();
}

int FourEyesModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_shown.size());
}

int FourEyesModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant FourEyesModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const PendingApproval &p = m_shown[static_cast<std::size_t>(index.row())];
    const ApprovalRecord &a = p.approval;
    if (role == KeyRole)
        return QString::fromStdString(p.operation.key);
    if (role == MineRole)
        return isMine(p);
    if (role == Qt::ToolTipRole && isMine(p))
        return tr("You approved this first: another approver must second it");
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Waiting:
        return timestampText(a.createdAtMs);
    case Namespace:
        return displayText(p.operation.ns);
    case Key:
        return displayText(p.operation.key);
    case Value:
        return p.operation.value ? QString::fromStdString(formatAmount(*p.operation.value))
                                 : QString();
    case Decision:
        return a.decision == "confirm"
                   ? tr("confirm as succeeded, evidence %1").arg(displayText(a.externalReference))
               : a.decision == "reject" ? tr("reject")
                                        : tr("dispatch again");
    case FirstApprover:
        return isMine(p) ? tr("%1 (%2) — you").arg(displayText(a.operatorName), displayText(a.role))
                         : tr("%1 (%2)").arg(displayText(a.operatorName), displayText(a.role));
    case Reason:
        return displayText(a.reason);
    case RequestedBy:
        return displayText(p.requestedBy);
    default:
        return {};
    }
}

QVariant FourEyesModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    // The key gives way last; who asked for the operation is read whole, as who approved first.
    if (orientation == Qt::Horizontal && role == HeaderElidesRole)
        return section == Key      ? QVariant(ElidesLast)
               : section == Reason ? QVariant(ElidesFirst)
                                   : QVariant(section == Namespace || section == Decision);
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Waiting:
        return tr("First approved");
    case Namespace:
        return tr("Namespace");
    case Key:
        return tr("Operation key");
    case Value:
        return tr("Value");
    case Decision:
        return tr("Proposal");
    case FirstApprover:
        return tr("First approver");
    case Reason:
        return tr("Their reason");
    case RequestedBy:
        return tr("Requested by");
    default:
        return {};
    }
}

} // namespace idempo
