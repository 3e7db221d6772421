// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerview.h"

class QLabel;
class QScrollArea;

namespace idempo {

class ActionController;
class LedgerConnection;
class RunBudgetPanel;
class RunTableModel;
class TimelineWidget;

/// Runs with their most urgent state and budget use, halted runs first; selecting one shows its
/// budgets (with Resume for a halted run) and loads its steps and their histories on the worker,
/// painted as a timeline, whose bars open their operation.
class RunsView final : public LedgerView
{
    Q_OBJECT
public:
    explicit RunsView(LedgerConnection *connection, QWidget *parent = nullptr);

    void reload() override;
    void refresh() override;
    LedgerTableView *table() const override { return m_table; }
    EmptyState *emptyState() const override { return m_empty; }
    FilterBar *filters() const override { return m_filters; }
    RunTableModel *model() const { return m_model; }
    TimelineWidget *timeline() const { return m_timeline; }
    RunBudgetPanel *budgetPanel() const { return m_budget; }
    /// Resume goes through `actions` (its dialog, the identity's role).
    void setActions(ActionController *actions);

Q_SIGNALS:
    void timelineLoaded();
    /// A timeline bar was double-clicked: its operation.
    void operationRequested(const QString &ns, const QString &key);

private:
    void loadTimeline();
    void showBudgets();

    LedgerConnection *m_connection;
    RunTableModel *m_model;
    FilterBar *m_filters;
    LedgerTableView *m_table;
    EmptyState *m_empty;
    TimelineWidget *m_timeline;
    RunBudgetPanel *m_budget;
    ActionController *m_actions = nullptr;
    QScrollArea *m_scroll;
    QLabel *m_legend;
    quint64 m_generation = 0;
};

} // namespace idempo
