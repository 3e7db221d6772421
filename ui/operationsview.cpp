// SPDX-License-Identifier: Apache-2.0
#include "operationsview.h"

#include <QVBoxLayout>

#include "adaptivesplitter.h"
#include "emptystate.h"
#include "filterbar.h"
#include "ledgertableview.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"

namespace idempo {

OperationsView::OperationsView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_model(new OperationTableModel(connection, this)),
      m_filters(
          new FilterBar({OperationState::Received, OperationState::AwaitingApproval,
                         OperationState::Dispatching, OperationState::Succeeded,
                         OperationState::FailedRetryable, OperationState::UnknownOutcome,
                         OperationState::ConfirmationRequired, OperationState::FailedTerminal},
                        tr("Untouched for"), this)),
      m_table(new LedgerTableView(this)), m_detail(new OperationDetailPane(connection, this))
{
    m_filters->enablePayloadSearch();
    auto *layout = new QVBoxLayout(this);
    m_filters->setTwoRows(true);
    layout->addWidget(m_filters);
    // Beside the list from 1360 px on, below it when narrower: the list keeps its columns.
    auto *split = new AdaptiveSplitter(1360, this);
    split->addWidget(m_table);
    split->addWidget(m_detail);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);
    m_table->setModel(m_model);
    m_table->setKeyRole(OperationTableModel::KeyRole);
    for (int c : {OperationTableModel::Run, OperationTableModel::Owner, OperationTableModel::Token,
                  OperationTableModel::LeaseExpiry})
        m_table->setColumnHidden(c, true);
    m_table->setColumnSamples(
        {{OperationTableModel::Key, QStringLiteral("run-7004:send_invoice")},
         {OperationTableModel::Namespace, QStringLiteral("default")},
         {OperationTableModel::Step, QStringLiteral("provision_account")},
         {OperationTableModel::State, QStringLiteral("confirmation_required"), true},
         {OperationTableModel::Value, QStringLiteral("125,000.00 EUR")},
         {OperationTableModel::Attempt, QStringLiteral("3 / 3")},
         {OperationTableModel::Created, QStringLiteral("59 min ago")},
         {OperationTableModel::Updated, QStringLiteral("59 min ago")}});
    m_table->setSettingsKey(QStringLiteral("find"));
    m_table->setStoreSorting(OperationTableModel::Created, Qt::AscendingOrder);
    m_table->setViewportListener(
        [this](int first, int count) { m_model->setViewport(first, count); });
    m_empty = new EmptyState(m_table);
    connect(m_empty, &EmptyState::linkActivated, m_filters, [this](const QString &link) {
        if (link == QLatin1String(EmptyState::ClearFiltersLink))
            m_filters->clear();
    });
    connect(m_model, &OperationTableModel::pageLoaded, m_empty, &EmptyState::modelAnswered);
    connect(m_filters, &FilterBar::changed, this, &OperationsView::reload);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &OperationsView::showCurrent);
    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex &from, const QModelIndex &to) {
                const int row = m_table->currentIndex().row();
                if (row >= from.row() && row <= to.row())
                    showCurrent();
            });
    connect(m_model, &QAbstractItemModel::modelReset, m_detail, &OperationDetailPane::clear);
}

void OperationsView::reload()
{
    m_empty->setMessage(m_filters->isActive()
                            ? EmptyState::filteredMessage()
                            : tr("<b>No operations recorded yet.</b><br>Every operation of the "
                                 "ledger is found here, in every state and namespace."));
    m_model->setFilters(m_filters->query());
}

void OperationsView::refresh()
{
    m_model->refresh();
}

void OperationsView::showCurrent()
{
    const QModelIndex current = m_table->currentIndex();
    if (current.isValid())
        m_detail->showOperation(m_model->operationAt(current));
    else
        m_detail->clear();
}

} // namespace idempo
