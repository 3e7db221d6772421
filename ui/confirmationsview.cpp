// SPDX-License-Identifier: Apache-2.0
#include "confirmationsview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include "bulkactionbar.h"
#include "emptystate.h"
#include "filterbar.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"

namespace idempo {

ConfirmationsView::ConfirmationsView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_model(new OperationTableModel(connection, this)),
      m_filters(new FilterBar({OperationState::ConfirmationRequired,
                               OperationState::AwaitingApproval, OperationState::UnknownOutcome},
                              tr("Waiting for"), this)),
      m_order(new QComboBox(this)), m_table(new LedgerTableView(this)),
      m_detail(new OperationDetailPane(connection, this)), m_connection(connection)
{
    m_filters->setReviewView(true);
    auto *layout = new QVBoxLayout(this);
    auto *split = new QSplitter(Qt::Horizontal, this);
    auto *left = new QWidget(split);
    auto *leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);
    leftLayout->addWidget(m_filters);
    auto *orderRow = new QHBoxLayout;
    auto *orderLabel = new QLabel(tr("&Order"), left);
    orderLabel->setBuddy(m_order);
    m_order->addItem(tr("Oldest first"));
    m_order->addItem(tr("Highest value first"));
    m_order->setToolTip(tr("Values in different currencies are compared in minor units: the ledger "
                           "holds no exchange rates"));
    m_order->setParent(left);
    orderRow->addWidget(orderLabel);
    orderRow->addWidget(m_order);
    orderRow->addStretch(1);
    leftLayout->addLayout(orderRow);
    leftLayout->addWidget(m_table, 1);
    m_table->setParent(left);
    m_filters->setParent(left);
    split->addWidget(left);
    split->addWidget(m_detail);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
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
    m_table->setKeyRole(OperationTableModel::KeyRole);
    for (int c :
         {OperationTableModel::Owner, OperationTableModel::Token, OperationTableModel::LeaseExpiry})
        m_table->setColumnHidden(c, true);
    m_table->horizontalHeader()->resizeSection(OperationTableModel::Key, 220);
    m_table->horizontalHeader()->resizeSection(OperationTableModel::Run, 90);
    m_table->horizontalHeader()->resizeSection(OperationTableModel::State, 190);
    m_table->horizontalHeader()->resizeSection(OperationTableModel::Value, 130);
    m_table->setSettingsKey(QStringLiteral("confirmations"));
    m_table->setViewportListener(
        [this](int first, int count) { m_model->setViewport(first, count); });
    m_empty = new EmptyState(m_table);
    connect(m_empty, &EmptyState::linkActivated, m_filters, [this](const QString &link) {
        if (link == QLatin1String(EmptyState::ClearFiltersLink))
            m_filters->clear();
    });
    connect(m_model, &OperationTableModel::pageLoaded, m_empty, &EmptyState::modelAnswered);
    connect(m_filters, &FilterBar::changed, this, &ConfirmationsView::reload);
    connect(m_order, &QComboBox::currentIndexChanged, this, &ConfirmationsView::reload);
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
    OperationQuery query = m_filters->query();
    query.highestValueFirst = m_order->currentIndex() == 1;
    m_model->setQuery(query);
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
