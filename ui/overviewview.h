// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

#include <QHash>

namespace idempo {

class LedgerConnection;
class OverviewCharts;
class OverviewModel;
class StatTile;

/// The ledger at a glance: tiles for what needs a person, charts for how it is moving.
class OverviewView final : public LedgerView
{
    Q_OBJECT
public:
    explicit OverviewView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    OverviewModel *model() const { return m_model; }
    /// The tile captioned `name` ("leases", "confirmations", "suppressions", "dlq", "failures").
    StatTile *tile(const QString &name) const { return m_tiles.value(name); }

private:
    void render();

    OverviewModel *m_model;
    OverviewCharts *m_charts;
    QHash<QString, StatTile *> m_tiles;
};

} // namespace idempo
