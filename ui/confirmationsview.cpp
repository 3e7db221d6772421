// SPDX-License-Identifier: Apache-2.0
#include "confirmationsview.h"

#include "filterbar.h"
#include "ledgertableview.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"

#include <QHeaderView>
#include <QSplitter>
#include <QVBoxLayout>

namespace idempo {

ConfirmationsView::ConfirmationsView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent)
    , m_model(new OperationTableModel(connection, this))
    , m_filters(new FilterBar({OperationState::ConfirmationRequired, OperationState::AwaitingApproval},
                              tr("Waiting for"), this))
    , m_table(new LedgerTableView(this))
    , m_detail(new OperationDetailPane(connection, this))
{
    auto *layout = new QVBoxLayout(this);
    auto *split = new QSplitter(Qt::Horizontal, this);
    auto *left = new QWidget(split);
    auto *leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(m_filters);
    leftLayout->addWidget(m_table, 1);
    m_table->setParent(left);
    m_filters->setParent(left);
    split->addWidget(left);
    split->addWidget(m_detail);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split);
    m_table->setModel(m_model);
    m_table->setKeyRole(OperationTableModel::KeyRole);
    for (int c : {OperationTableModel::Owner, OperationTableModel::Token, OperationTableModel::LeaseExpiry})
        m_table->setColumnHidden(c, true);
    m_table->horizontalHeader()->resizeSection(OperationTableModel::Key, 220);
    m_table->horizontalHeader()->resizeSection(OperationTableModel::Run, 90);
    m_table->horizontalHeader()->resizeSection(OperationTableModel::State, 190);
    m_table->setViewportListener([this](int first, int count) { m_model->setViewport(first, count); });
    connect(m_filters, &FilterBar::changed, this, &ConfirmationsView::reload);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &ConfirmationsView::showCurrent);
    connect(m_model, &QAbstractItemModel::dataChanged, this, [this](const QModelIndex &from, const QModelIndex &to) {
        const int row = m_table->currentIndex().row();
        if (row >= from.row() && row <= to.row())
            showCurrent();
    });
    connect(m_model, &QAbstractItemModel::modelReset, m_detail, &OperationDetailPane::clear);
}

void ConfirmationsView::reload()
{
    m_model->setQuery(m_filters->query());
}

void ConfirmationsView::refresh()
{
    m_model->refresh();
}

void ConfirmationsView::showCurrent()
{
    const QModelIndex current = m_table->currentIndex();
    if (current.isValid())
        m_detail->showOperation(m_model->operationAt(current));
    else
        m_detail->clear();
}

} // namespace idempo
