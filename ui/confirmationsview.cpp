// SPDX-License-Identifier: Apache-2.0
#include "confirmationsview.h"

#include <QTimer>
#include <QVBoxLayout>

#include "adaptivesplitter.h"
#include "bulkactionbar.h"
#include "emptystate.h"
#include "filterbar.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "listsetup.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"

namespace idempo {

ConfirmationsView::ConfirmationsView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_model(new OperationTableModel(connection, this)),
      m_filters(new FilterBar({OperationState::ConfirmationRequired,
                               OperationState::AwaitingApproval, OperationState::UnknownOutcome},
                              tr("Waiting for"), this)),
      m_table(new LedgerTableView(this)), m_detail(new OperationDetailPane(connection, this)),
      m_connection(connection)
{
    m_filters->setReviewView(true);
    m_filters->setTwoRows(true);
    auto *layout = new QVBoxLayout(this);
    // Beside the list from 1360 px on: there the list still has room for every column.
    auto *split = new AdaptiveSplitter(1360, this);
    auto *left = new QWidget(split);
    auto *leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(m_filters);
    leftLayout->addWidget(m_table, 1);
    m_table->setParent(left);
    m_filters->setParent(left);
    split->addWidget(left);
    split->addWidget(m_detail);
    // The list's columns need the width more than the pane's text, which wraps.
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 1);
    layout->addWidget(split);
    // Connected before the table's selection model is: it must know the current row is leaving
    // before the selection moves to a neighbour.
    connect(m_model, &QAbstractItemModel::rowsAboutToBeRemoved, this,
            [this](const QModelIndex &, int first, int last) {
                const int row = m_table->currentIndex().row();
                if (row >= first && row <= last)
                    m_currentLeaving = true;
            });
    connect(m_model, &QAbstractItemModel::rowsRemoved, this, [this] {
        if (m_currentLeaving)
            pinLeavingRow();
    });
    m_table->setModel(m_model);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_bulk = new BulkActionBar(
        {BulkAction::Approve, BulkAction::Reject, BulkAction::Reconcile}, m_table, m_model,
        [this] { return m_model->query(); }, left);
    leftLayout->addWidget(m_bulk);
    m_empty = ListSetup::operations(QStringLiteral("confirmations"), OperationTableModel::KeyRole)
                  .apply(this, m_table, m_model, m_filters);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &ConfirmationsView::showCurrent);
    connect(m_model, &QAbstractItemModel::dataChanged, this,
            [this](const QModelIndex &from, const QModelIndex &to) {
                const int row = m_table->currentIndex().row();
                if (row >= from.row() && row <= to.row())
                    showCurrent();
            });
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        m_pinned = false;
        m_detail->clear();
    });
}

void ConfirmationsView::reload()
{
    m_empty->setMessage(
        m_filters->isActive()
            ? EmptyState::filteredMessage()
            : tr("<b>Nothing waits for a person.</b><br>Operations whose outcome "
                 "automation could not prove, those whose answer was lost "
                 "(unknown outcome, to reconcile) and those gated for approval "
                 "appear here.") +
                  (m_filters->hidesSandbox() ? EmptyState::sandboxHiddenNote() : QString()));
    m_model->setFilters(m_filters->query());
}

void ConfirmationsView::refresh()
{
    m_model->refresh();
}

void ConfirmationsView::showCurrent()
{
    if (m_currentLeaving) {
        pinLeavingRow();
        return;
    }
    const QModelIndex current = m_table->currentIndex();
    if (!current.isValid()) {
        if (!m_pinned)
            m_detail->clear();
        return;
    }
    m_pinned = false;
    m_detail->showOperation(m_model->operationAt(current));
}

void ConfirmationsView::pinLeavingRow()
{
    // The selection moves (or not) only because the shown row left: keep the pane on it and
    // select nothing in its place, once the removal is over.
    if (m_pinned)
        return;
    m_pinned = true;
    followPinned();
    QTimer::singleShot(0, this, [this] {
        m_currentLeaving = false;
        if (m_pinned)
            m_table->selectionModel()->clear();
    });
}

void ConfirmationsView::followPinned()
{
    if (!m_detail->operation())
        return;
    const quint64 generation = ++m_pinGeneration;
    m_connection->query(
        this,
        [ns = m_detail->operation()->ns, key = m_detail->operation()->key](
            LedgerStore &s, MessageQueue *) { return s.find(ns, key); },
        [this, generation](const std::optional<Operation> &op) {
            if (generation == m_pinGeneration && m_pinned && op)
                m_detail->showOperation(*op);
        });
}

} // namespace idempo
