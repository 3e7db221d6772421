// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QHash>

#include "ledgerview.h"

class QLabel;

namespace idempo {

class FirstStepsPanel;
class LedgerConnection;
class OverviewCharts;
class OverviewModel;
class StatTile;

/// The ledger at a glance: tiles for what needs a person, charts for how it is moving; on a
/// ledger without operations, the first steps instead.
class OverviewView final : public LedgerView
{
    Q_OBJECT
public:
    explicit OverviewView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    void setUnavailable(const QString &why) override;
    /// What the Overview says in place of figures when no ledger is open (tests read it).
    QString unavailableText() const;
    OverviewModel *model() const { return m_model; }
    /// The tile captioned `name` ("leases", "confirmations", "suppressions", "dlq", "failures").
    StatTile *tile(const QString &name) const { return m_tileByName.value(name); }
    /// Shown instead of tiles and charts while the ledger holds nothing.
    FirstStepsPanel *firstSteps() const { return m_firstSteps; }

Q_SIGNALS:
    /// A first step was chosen (FirstStepsPanel::SandboxLink or ConnectLink).
    void linkActivated(const QString &link);

private:
    void render();

    OverviewModel *m_model;
    OverviewCharts *m_charts;
    QWidget *m_tiles;
    QLabel *m_unavailable;
    QWidget *m_firstStepsPage;
    FirstStepsPanel *m_firstSteps;
    LedgerConnection *m_connection;
    QHash<QString, StatTile *> m_tileByName;
};

} // namespace idempo
