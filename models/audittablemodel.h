// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include <QAbstractTableModel>
#include <QString>

#include "actionrecords.h"

namespace idempo {

/// Audit records (LedgerStore::auditLog()) as a table, newest first, with filters applied
/// locally: action (exact), actor (substring) and target prefix. Exports what the filters let
/// through as CSV or JSON.
class AuditTableModel final : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        Seq,
        When,
        Who,
        Role,
        Action,
        Target,
        Reason,
        Change,
        ApprovalId,
        ColumnCount
    };

    using QAbstractTableModel::QAbstractTableModel;

    /// Replaces every record (as read, oldest first).
    void setRecords(std::vector<AuditRecord> records);
    /// Empty strings match everything.
    void setFilter(const QString &action, const QString &actor, const QString &targetPrefix);
    const AuditRecord &recordAt(int row) const
    {
        return *m_shown.at(static_cast<std::size_t>(row));
    }
    /// The distinct actions of all records, sorted (for the action filter).
    QStringList actions() const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    /// The shown records as CSV (RFC 4180, a header line, times in UTC ISO 8601).
    QString csv() const;
    /// The shown records as a JSON array of objects ({"seq", "at_ms", "who", "role", "action",
    /// "target", "reason", "before", "after", "approval_id", "detail", "hash", "prev_hash"}).
    QString json() const;

private:
    void apply();

    std::vector<AuditRecord> m_records;
    std::vector<const AuditRecord *> m_shown;
    QString m_action;
    QString m_actor;
    QString m_target;
};

} // namespace idempo
