// SPDX-License-Identifier: Apache-2.0
#include "operationsview.h"

#include <QVBoxLayout>

#include "adaptivesplitter.h"
#include "emptystate.h"
#include "filterbar.h"
#include "ledgertableview.h"
#include "listsetup.h"
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
    m_empty = ListSetup::operations(QStringLiteral("find"), OperationTableModel::KeyRole)
                  .apply(this, m_table, m_model, m_filters);
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
