// SPDX-License-Identifier: Apache-2.0
#include "runsview.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

#include "actioncontroller.h"
#include "budgetbardelegate.h"
#include "displayformat.h"
#include "emptystate.h"
#include "filterbar.h"
#include "guardedactiondialog.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "listsetup.h"
#include "runbudgetpanel.h"
#include "runtablemodel.h"
#include "timelinewidget.h"

namespace idempo {

namespace {
constexpr int MaxTimelineSteps = 200;
}

RunsView::RunsView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_connection(connection), m_model(new RunTableModel(connection, this)),
      m_filters(
          new FilterBar({OperationState::Received, OperationState::AwaitingApproval,
                         OperationState::Dispatching, OperationState::Succeeded,
                         OperationState::FailedRetryable, OperationState::UnknownOutcome,
                         OperationState::ConfirmationRequired, OperationState::FailedTerminal},
                        tr("Untouched for"), this)),
      m_table(new LedgerTableView(this)), m_timeline(new TimelineWidget(this)),
      m_budget(new RunBudgetPanel(this)), m_scroll(new QScrollArea(this)),
      m_legend(new QLabel(this))
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(m_filters);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_table);
    auto *bottom = new QWidget(split);
    auto *bottomLayout = new QVBoxLayout(bottom);
    bottomLayout->setContentsMargins(0, 0, 0, 0);
    bottomLayout->addWidget(m_budget);
    auto *tools = new QHBoxLayout;
    QString legend;
    for (OperationState s : {OperationState::Received, OperationState::AwaitingApproval,
                             OperationState::Dispatching, OperationState::FailedRetryable,
                             OperationState::UnknownOutcome, OperationState::ConfirmationRequired,
                             OperationState::Succeeded, OperationState::FailedTerminal})
        legend += QStringLiteral("<span style='color:%1'>■</span> %2 &nbsp;")
                      .arg(stateColor(s).name(), stateText(s));
    legend += tr(" · <b>T</b> lease takeover · <b>R</b> reconciliation · ⚑ protected write");
    m_legend->setText(legend);
    m_legend->setWordWrap(true);
    tools->addWidget(m_legend, 1);
    const auto addTool = [&](const QString &text, const QString &tip, auto slot) {
        auto *b = new QToolButton(bottom);
        b->setText(text);
        b->setToolTip(tip);
        connect(b, &QToolButton::clicked, this, slot);
        tools->addWidget(b);
    };
    addTool(QStringLiteral("−"), tr("Zoom out (-)"), [this] { m_timeline->zoomBy(0.8); });
    addTool(QStringLiteral("+"), tr("Zoom in (+)"), [this] { m_timeline->zoomBy(1.25); });
    addTool(tr("Fit"), tr("Fit the run to the width (0)"),
            [this] { m_timeline->fitTo(m_scroll->viewport()->width()); });
    bottomLayout->addLayout(tools);
    m_scroll->setWidget(m_timeline);
    m_scroll->setWidgetResizable(false);
    m_scroll->setBackgroundRole(QPalette::Base);
    bottomLayout->addWidget(m_scroll, 1);
    split->addWidget(bottom);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    layout->addWidget(split, 1);

    m_table->setModel(m_model);
    m_table->setItemDelegateForColumn(RunTableModel::Budget,
                                      new BudgetBarDelegate(RunTableModel::BudgetRole, m_table));
    ListSetup list;
    list.settingsKey = QStringLiteral("runs");
    list.keyRole = RunTableModel::KeyRole;
    list.copyLabel = tr("Copy run id");
    list.widths = {
        {RunTableModel::RunId, 220}, {RunTableModel::State, 190}, {RunTableModel::Budget, 260}};
    m_empty = list.apply(this, m_table, m_model, m_filters);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this] {
        showBudgets();
        loadTimeline();
    });
    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex &from, const QModelIndex &to) {
                const int row = m_table->currentIndex().row();
                if (row < from.row() || row > to.row())
                    return;
                showBudgets();
                // Only the clock moved the budget bar: the steps are as they were.
                if (from.column() != RunTableModel::Budget || to.column() != RunTableModel::Budget)
                    loadTimeline();
            });
    connect(m_model, &QAbstractItemModel::modelReset, this, &RunsView::showBudgets);
    connect(m_timeline, &TimelineWidget::operationActivated, this, [this](const QString &key) {
        const QModelIndex current = m_table->currentIndex();
        if (current.isValid())
            Q_EMIT operationRequested(QString::fromStdString(m_model->runAt(current.row()).ns),
                                      key);
    });
    connect(m_budget, &RunBudgetPanel::resumeRequested, this, [this] {
        const QModelIndex current = m_table->currentIndex();
        if (m_actions && current.isValid())
            m_actions->resumeRun(m_model->runAt(current.row()));
    });
}

void RunsView::setActions(ActionController *actions)
{
    m_actions = actions;
    const auto update = [this] {
        m_budget->setRefusal(m_actions->refusal(Capability::ResumeRuns));
    };
    connect(actions, &ActionController::actorChanged, this, update);
    update();
}

void RunsView::showBudgets()
{
    const QModelIndex current = m_table->currentIndex();
    m_budget->setRun(current.isValid() ? &m_model->runAt(current.row()) : nullptr,
                     m_model->ledgerNowMs());
}

void RunsView::reload()
{
    m_empty->setMessage(m_filters->isActive()
                            ? EmptyState::filteredMessage()
                            : tr("<b>No runs recorded yet.</b><br>Each workflow execution "
                                 "appears here with its steps as a timeline."));
    m_timeline->setTimeline({});
    m_model->setQuery(m_filters->query());
}

void RunsView::refresh()
{
    m_model->refresh();
}

void RunsView::loadTimeline()
{
    const QModelIndex current = m_table->currentIndex();
    if (!current.isValid())
        return;
    const std::string runId = m_model->runAt(current.row()).runId;
    const std::string ns = m_model->runAt(current.row()).ns;
    const quint64 generation = ++m_generation;
    m_connection->query(
        this,
        [runId, ns](LedgerStore &s, MessageQueue *) {
            ListFilter f;
            f.ns = ns;
            f.runId = runId;
            f.limit = MaxTimelineSteps;
            const std::vector<Operation> ops = s.list(f);
            std::vector<std::vector<OperationEvent>> histories;
            for (const Operation &op : ops)
                histories.push_back(s.history(op.ns, op.key));
            return RunTimeline::build(runId, ops, histories, s.nowMs());
        },
        [this, generation](RunTimeline timeline) {
            if (generation != m_generation)
                return;
            const bool sameRun = timeline.runId == m_timeline->timeline().runId;
            const double zoom = m_timeline->pixelsPerSecond();
            m_timeline->setTimeline(std::move(timeline));
            if (sameRun)
                m_timeline->zoomBy(zoom / m_timeline->pixelsPerSecond());
            else
                m_timeline->fitTo(m_scroll->viewport()->width());
            Q_EMIT timelineLoaded();
        });
}

} // namespace idempo
