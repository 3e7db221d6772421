// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include <QString>

#include "actionrecords.h"
#include "pagedtablemodel.h"

namespace idempo {

/// Audit records newest first, a keyset page at a time (LedgerStore::auditRecords()): the
/// filter runs in the ledger, so the view never holds more of the log than it has scrolled to.
/// Formats records as CSV or JSON for the exports.
class AuditTableModel final : public PagedTableModel<AuditRecord>
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
    enum Role
    {
        /// The record's target ("ns/key", "queue:NAME", …) unescaped, for click-through.
        TargetRole = Qt::UserRole
    };

    explicit AuditTableModel(LedgerConnection *connection, QObject *parent = nullptr);

    /// Loads the first page of what `filter` lets through (its cursor, order and limit are the
    /// model's own).
    void setFilter(const AuditFilter &filter);
    const AuditFilter &filter() const { return m_filter; }
    const AuditRecord &recordAt(int row) const { return rowAt(row); }

    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    /// What data() shows of `record` in `column` for `role`.
    static QVariant cell(const AuditRecord &record, int column, int role);
    /// `records` as CSV (RFC 4180, a header line, times in UTC ISO 8601).
    static QString csv(const std::vector<AuditRecord> &records);
    /// `records` as a JSON array of objects ({"seq", "at_ms", "who", "role", "action",
    /// "target", "reason", "before", "after", "approval_id", "detail", "hash", "prev_hash"}).
    static QString json(const std::vector<AuditRecord> &records);

Q_SIGNALS:
    void pageLoaded();

protected:
    Loader loader() const override;
    std::int64_t rowId(const AuditRecord &row) const override { return row.seq; }
    /// Newest first: the negated seq ranks.
    std::int64_t rowRank(const AuditRecord &row) const override { return -row.seq; }
    bool sameRow(const AuditRecord &a, const AuditRecord &b) const override
    {
        return a.hash == b.hash;
    }
    void pageApplied() override { Q_EMIT pageLoaded(); }

private:
    AuditFilter m_filter;
};

} // namespace idempo
