// SPDX-License-Identifier: Apache-2.0
#include "bulkactionbar.h"

#include <algorithm>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>

#include "actioncontroller.h"
#include "bulkactioncontroller.h"
#include "guardedactiondialog.h"
#include "ledgertableview.h"
#include "operationtablemodel.h"

namespace idempo {
namespace {

QString labelOf(BulkAction action)
{
    switch (action) {
    case BulkAction::Approve:
        return QObject::tr("Bulk &approve…");
    case BulkAction::Reject:
        return QObject::tr("Bulk re&ject…");
    case BulkAction::Reconcile:
        return QObject::tr("Bulk reco&ncile…");
    }
    return {};
}

} // namespace

BulkActionBar::BulkActionBar(std::vector<BulkAction> actions, LedgerTableView *table,
                             OperationTableModel *model, std::function<OperationQuery()> query,
                             QWidget *parent)
    : QWidget(parent), m_table(table), m_model(model), m_query(std::move(query)),
      m_all(new QCheckBox(tr("All matching the filter"), this)), m_count(new QLabel(this))
{
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_count);
    layout->addWidget(m_all);
    layout->addStretch(1);
    for (const BulkAction action : actions) {
        auto *button = new QPushButton(labelOf(action), this);
        layout->addWidget(button);
        m_buttons.emplace_back(action, button);
        connect(button, &QPushButton::clicked, this, [this, action] { trigger(action); });
    }
    m_all->setToolTip(tr("Act on every operation the filter matches, read to the end before "
                         "anything is done; rows that arrive later are not in the set"));
    connect(m_all, &QCheckBox::toggled, this, &BulkActionBar::updateButtons);
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &BulkActionBar::updateButtons);
    connect(m_model, &QAbstractItemModel::modelReset, this, &BulkActionBar::updateButtons);
    connect(m_model, &QAbstractItemModel::rowsRemoved, this, &BulkActionBar::updateButtons);
    updateButtons();
}

void BulkActionBar::setControllers(BulkActionController *bulk, ActionController *actions)
{
    m_bulk = bulk;
    m_actions = actions;
    connect(actions, &ActionController::actorChanged, this, &BulkActionBar::updateButtons);
    updateButtons();
}

QPushButton *BulkActionBar::button(BulkAction action) const
{
    for (const auto &[a, b] : m_buttons)
        if (a == action)
            return b;
    return nullptr;
}

std::vector<BulkTarget> BulkActionBar::selectedTargets() const
{
    QModelIndexList rows = m_table->selectionModel()->selectedRows();
    std::sort(rows.begin(), rows.end(),
              [](const QModelIndex &a, const QModelIndex &b) { return a.row() < b.row(); });
    std::vector<BulkTarget> targets;
    for (const QModelIndex &index : rows) {
        const Operation &op = m_model->operationAt(index);
        targets.push_back({op.ns, op.key, op.version});
    }
    return targets;
}

void BulkActionBar::updateButtons()
{
    const qsizetype selected = m_table->selectionModel()->selectedRows().size();
    m_count->setText(m_all->isChecked() ? tr("Whole filter")
                                        : tr("%n selected", nullptr, int(selected)));
    for (const auto &[action, button] : m_buttons) {
        QString why = m_bulk ? m_bulk->refusal(action) : tr("No ledger is open yet.");
        if (why.isEmpty() && !m_all->isChecked() && selected == 0)
            why = tr("Select operations (Shift+click, Ctrl+click) or tick All matching the "
                     "filter.");
        button->setEnabled(why.isEmpty());
        button->setToolTip(why.isEmpty() ? tr("Freeze the set, then confirm its count with a "
                                              "reason")
                                         : why);
    }
}

void BulkActionBar::trigger(BulkAction action)
{
    if (!m_bulk)
        return;
    if (m_all->isChecked())
        m_bulk->startFiltered(action, m_query());
    else
        m_bulk->start(action, selectedTargets());
}

} // namespace idempo
