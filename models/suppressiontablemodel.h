// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>

#include "pagedtablemodel.h"

namespace idempo {

/// What the suppression list shows. The store pages suppressions by id only, so these filters
/// run on the worker while it pages, never on the GUI thread.
struct SuppressionQuery
{
    std::string ns;           ///< one namespace (in the store's call); empty = every namespace
    bool hideSandbox = false; ///< with no namespace: leave out isSandboxNamespace() ones
    std::string keyPrefix;
    std::optional<ClaimOutcome> outcome;
    std::string runId;                    ///< keys of this run (`run:` prefix)
    std::optional<std::int64_t> maxAgeMs; ///< only suppressions younger than this
};

/// Every duplicate the ledger answered without executing: when, key, kind, source; oldest first.
class SuppressionTableModel final : public PagedTableModel<Suppression>
{
    Q_OBJECT
public:
    enum Column
    {
        When,
        Key,
        Namespace,
        Kind,
        StateAtTime,
        Source,
        ColumnCount
    };
    enum Role
    {
        RawRole = Qt::UserRole,
        KeyRole
    };

    explicit SuppressionTableModel(LedgerConnection *connection, QObject *parent = nullptr);

    void setQuery(const SuppressionQuery &query);
    const Suppression &suppressionAt(const QModelIndex &index) const { return rowAt(index.row()); }

    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation,
                        int role = Qt::DisplayRole) const override;

Q_SIGNALS:
    void pageLoaded();

protected:
    Loader loader() const override;
    std::int64_t rowId(const Suppression &row) const override { return row.id; }
    bool sameRow(const Suppression &, const Suppression &) const override { return true; }
    void pageApplied() override { Q_EMIT pageLoaded(); }

private:
    SuppressionQuery m_query;
};

} // namespace idempo
