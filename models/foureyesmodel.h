// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <vector>

#include <QAbstractTableModel>
#include <QString>

#include "actionrecords.h"

namespace idempo {

class LedgerConnection;

/// The four-eyes worklist (LedgerStore::pendingApprovals): first approvals waiting for a second
/// approver, oldest first. The person at the console cannot second their own, so by default the
/// list holds those that wait for them; includeMine() adds their own, marked as waiting for
/// someone else. Sandbox namespaces are left out unless asked for, as in the review views.
class FourEyesModel final : public QAbstractTableModel
{
    Q_OBJECT
public:
    /// What the second approver weighs comes first: a narrow list shows those whole.
    enum Column
    {
        Key,
        Value,
        FirstApprover,
        Reason,
        Decision,
        Waiting,
        Namespace,
        RequestedBy,
        ColumnCount
    };
    enum Role
    {
        KeyRole = Qt::UserRole, ///< the operation key, for LedgerTableView's copy
        MineRole,               ///< true when the first approver is the person at the console
    };
    /// At most this many waiting approvals are read; more says so (hasMore()).
    static constexpr int Limit = 500;

    explicit FourEyesModel(LedgerConnection *connection, QObject *parent = nullptr);

    /// Who is at the console: their own first approvals are not theirs to second.
    void setActorName(const QString &name);
    void setIncludeMine(bool on);
    void setShowSandbox(bool on);
    /// Forgets the rows and reads again (a ledger opened).
    void reload();
    /// Reads again, keeping the rows until the answer replaces them.
    void refresh();

    const PendingApproval &pendingAt(int row) const { return m_shown.at(row); }
    /// Rows whose second approval the person at the console may give.
    int waitingForMe() const { return m_waitingForMe; }
    /// The person's own first approvals that wait for someone else.
    int mineWaiting() const { return m_mineWaiting; }
    bool hasMore() const { return m_more; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

Q_SIGNALS:
    /// An answer arrived (the rows may be the same).
    void loaded();

private:
    bool isMine(const PendingApproval &p) const;
    void apply();

    LedgerConnection *m_connection;
    std::vector<PendingApproval> m_all;
    std::vector<PendingApproval> m_shown;
    QString m_actor;
    QString m_mineShown; ///< the actor whose rows are marked as theirs in m_shown
    bool m_includeMine = false;
    bool m_showSandbox = false;
    bool m_more = false;
    int m_waitingForMe = 0;
    int m_mineWaiting = 0;
    std::uint64_t m_generation = 0;
};

} // namespace idempo
