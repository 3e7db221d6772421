// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "pagedtablemodel.h"

namespace idempo {

/// The dead letters of one queue, read-only: browsing never counts as a read.
class DeadLetterTableModel final : public PagedTableModel<DeadLetter>
{
    Q_OBJECT
public:
    enum Column
    {
        MsgId,
        DeadLetteredAt,
        ReadCount,
        LastError,
        Key,
        Payload,
        ColumnCount
    };
    enum Role
    {
        RawRole = Qt::UserRole,
        KeyRole
    };

    explicit DeadLetterTableModel(LedgerConnection *connection, QObject *parent = nullptr);

    /// Shows the dead letters of `queue` (a source queue, not its `_dlq`), whose operation key
    /// starts with `keyPrefix`.
    void setQueue(const std::string &queue, const std::string &keyPrefix = {});
    const std::string &queue() const { return m_queue; }
    const DeadLetter &deadLetterAt(const QModelIndex &index) const { return rowAt(index.row()); }

    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

    /// The envelope's idempotency_key, or empty when the message has none.
    static std::string keyOf(const DeadLetter &letter);

Q_SIGNALS:
    void pageLoaded();

protected:
    Loader loader() const override;
    std::int64_t rowId(const DeadLetter &row) const override { return row.message.msgId; }
    bool sameRow(const DeadLetter &a, const DeadLetter &b) const override
    {
        return a.message.readCount == b.message.readCount;
    }
    void pageApplied() override { Q_EMIT pageLoaded(); }

private:
    std::string m_queue;
    std::string m_keyPrefix;
};

} // namespace idempo
