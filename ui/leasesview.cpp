// SPDX-License-Identifier: Apache-2.0
#include "leasesview.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

#include "actioncontroller.h"
#include "bulkactionbar.h"
#include "emptystate.h"
#include "filterbar.h"
#include "guardedactiondialog.h"
#include "ledgertableview.h"
#include "listsetup.h"
#include "operationtablemodel.h"

namespace idempo {

LeasesView::LeasesView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_model(new OperationTableModel(connection, this)),
      m_filters(new FilterBar({OperationState::Dispatching}, tr("Untouched for"), this)),
      m_table(new LedgerTableView(this)), m_summary(new QLabel(this)),
      m_reconcile(new QPushButton(tr("Reconc&ile…"), this))
{
    auto *layout = new QVBoxLayout(this);
    m_filters->setReviewView(true);
    auto *top = new QHBoxLayout;
    top->addWidget(m_summary, 1);
    top->addWidget(m_reconcile);
    layout->addLayout(top);
    layout->addWidget(m_filters);
    layout->addWidget(m_table, 1);
    m_table->setModel(m_model);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_bulk = new BulkActionBar(
        {BulkAction::Reconcile}, m_table, m_model, [this] { return m_model->query(); }, this);
    layout->addWidget(m_bulk);
    ListSetup list;
    list.settingsKey = QStringLiteral("leases");
    list.keyRole = OperationTableModel::KeyRole;
    list.hidden = {OperationTableModel::Run, OperationTableModel::Created,
                   OperationTableModel::Error};
    list.samples = {{OperationTableModel::Key, QStringLiteral("run-7001:provision_account")},
                    {OperationTableModel::Namespace, QStringLiteral("default")},
                    {OperationTableModel::Step, QStringLiteral("provision_account")},
                    {OperationTableModel::State, QStringLiteral("dispatching"), true},
                    {OperationTableModel::Value, QStringLiteral("125,000.00 EUR")},
                    {OperationTableModel::Attempt, QStringLiteral("3 / 3")},
                    {OperationTableModel::Owner, QStringLiteral("worker-12")},
                    {OperationTableModel::Token, QStringLiteral("100000")},
                    {OperationTableModel::LeaseExpiry, QStringLiteral("LAPSED 59 min 59 s ago")},
                    {OperationTableModel::Updated, QStringLiteral("59 min ago")}};
    list.storeSortedBy = OperationTableModel::Created;
    m_empty = list.apply(this, m_table, m_model, m_filters);
    connect(m_model, &OperationTableModel::pageLoaded, this, &LeasesView::updateSummary);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &LeasesView::updateReconcile);
    connect(m_model, &QAbstractItemModel::modelReset, this, &LeasesView::updateReconcile);
    connect(m_reconcile, &QPushButton::clicked, this, [this] {
        const QModelIndex current = m_table->currentIndex();
        if (m_actions && m_reconcile->isEnabled() && current.isValid())
            m_actions->start(OperationAction::Reconcile, m_model->operationAt(current));
    });
    updateReconcile();
    auto *tick = new QTimer(this);
    tick->setInterval(1000);
    connect(tick, &QTimer::timeout, this, [this] {
        m_model->tick();
        updateSummary();
        updateReconcile();
    });
    tick->start();
}

void LeasesView::reload()
{
    m_empty->setMessage(
        m_filters->isActive()
            ? EmptyState::filteredMessage()
            : tr("<b>No leases in flight.</b><br>A row appears here while a "
                 "worker holds an operation it is executing.") +
                  (m_filters->hidesSandbox() ? EmptyState::sandboxHiddenNote() : QString()));
    m_model->setFilters(m_filters->query());
}

void LeasesView::setActions(ActionController *actions)
{
    m_actions = actions;
    connect(actions, &ActionController::actorChanged, this, &LeasesView::updateReconcile);
    updateReconcile();
}

void LeasesView::updateReconcile()
{
    const QModelIndex current = m_table->currentIndex();
    // Whether anyone may act on this ledger comes first: no ledger open says so, not "select".
    QString why = m_actions ? m_actions->refusal(Capability::Reconcile)
                            : tr("Your role on this ledger is not known yet.");
    if (why.isEmpty() && !current.isValid())
        why = tr("Select a lease that lapsed on a protected write: its outcome is unknown.");
    if (why.isEmpty())
        why = OperationDetailPane::stateRefusal(
            OperationAction::Reconcile, m_model->operationAt(current), m_model->storeNowMs());
    m_reconcile->setEnabled(why.isEmpty());
    m_reconcile->setToolTip(why.isEmpty() ? tr("Ask the provider by key whether the effect "
                                               "happened, and move the operation by its answer.")
                                          : why);
}

void LeasesView::refresh()
{
    m_model->refresh();
}

void LeasesView::updateSummary()
{
    int lapsed = 0;
    for (int r = 0; r < m_model->rowCount(); ++r)
        lapsed += m_model->index(r, 0).data(OperationTableModel::LapsedRole).toBool() ? 1 : 0;
    const int n = m_model->rowCount();
    const QString text = (n == 1 ? tr("1 lease in flight") : tr("%1 leases in flight").arg(n)) +
                         (m_model->canFetchMore({}) ? tr(" (more below)") : QString());
    m_summary->setText(
        lapsed > 0 ? tr("%1 — <b style='color:#d64545'>%2 lapsed: the next claim fences these "
                        "workers off</b>")
                         .arg(text)
                         .arg(lapsed)
                   : text);
}

} // namespace idempo
