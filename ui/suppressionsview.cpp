// SPDX-License-Identifier: Apache-2.0
#include "suppressionsview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "emptystate.h"
#include "filterbar.h"
#include "ledgertableview.h"
#include "listsetup.h"
#include "suppressiontablemodel.h"

namespace idempo {

SuppressionsView::SuppressionsView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_model(new SuppressionTableModel(connection, this)),
      m_filters(new FilterBar({}, tr("Within"), this)), m_kind(new QComboBox(this)),
      m_table(new LedgerTableView(this))
{
    m_filters->setReviewView(true);
    auto *layout = new QVBoxLayout(this);
    auto *top = new QHBoxLayout;
    auto *kindLabel = new QLabel(tr("K&ind"), this);
    kindLabel->setBuddy(m_kind);
    m_kind->addItem(tr("every kind"), -1);
    for (ClaimOutcome o :
         {ClaimOutcome::Replayed, ClaimOutcome::InProgress, ClaimOutcome::RetryLater,
          ClaimOutcome::ReconcileRequired, ClaimOutcome::PayloadMismatch})
        m_kind->addItem(QString::fromLatin1(claimOutcomeName(o).data()), static_cast<int>(o));
    top->addWidget(kindLabel);
    top->addWidget(m_kind);
    top->addWidget(m_filters, 1);
    layout->addLayout(top);
    layout->addWidget(m_table, 1);
    m_table->setModel(m_model);
    ListSetup list;
    list.settingsKey = QStringLiteral("suppressions");
    list.keyRole = SuppressionTableModel::KeyRole;
    list.widths = {{SuppressionTableModel::When, 160},
                   {SuppressionTableModel::Key, 300},
                   {SuppressionTableModel::Kind, 150}};
    list.clearOwnFilters = [this] { m_kind->setCurrentIndex(0); };
    m_empty = list.apply(this, m_table, m_model, m_filters);
    connect(m_kind, &QComboBox::currentIndexChanged, this, &SuppressionsView::reload);
}

void SuppressionsView::reload()
{
    m_empty->setMessage(
        m_filters->isActive() || m_kind->currentIndex() > 0
            ? EmptyState::filteredMessage()
            : tr("<b>No duplicate suppressed yet.</b><br>Every redelivery, retry or second "
                 "planner that Idempo answers without executing is listed here.") +
                  (m_filters->hidesSandbox() ? EmptyState::sandboxHiddenNote() : QString()));
    SuppressionQuery q;
    q.ns = m_filters->ns().toStdString();
    q.hideSandbox = m_filters->hidesSandbox();
    q.keyPrefix = m_filters->keyPrefix().toStdString();
    q.runId = m_filters->runId().toStdString();
    q.maxAgeMs = m_filters->ageMs();
    const int kind = m_kind->currentData().toInt();
    if (kind >= 0)
        q.outcome = static_cast<ClaimOutcome>(kind);
    m_model->setQuery(q);
}

void SuppressionsView::refresh()
{
    m_model->refresh();
}

} // namespace idempo
