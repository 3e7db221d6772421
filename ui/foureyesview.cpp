// SPDX-License-Identifier: Apache-2.0
#include "foureyesview.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "adaptivesplitter.h"
#include "emptystate.h"
#include "foureyesmodel.h"
#include "ledgertableview.h"
#include "operationdetailpane.h"

namespace idempo {

FourEyesView::FourEyesView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_model(new FourEyesModel(connection, this)), m_summary(new QLabel(this)),
      m_includeMine(new QCheckBox(tr("Also show those &I approved first"), this)),
      m_showSandbox(new QCheckBox(tr("Show &sandbox namespaces"), this)),
      m_table(new LedgerTableView(this)), m_detail(new OperationDetailPane(connection, this))
{
    auto *layout = new QVBoxLayout(this);
    auto *top = new QHBoxLayout;
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    top->addWidget(m_summary, 1);
    top->addWidget(m_includeMine);
    top->addWidget(m_showSandbox);
    layout->addLayout(top);
    auto *split = new AdaptiveSplitter(1360, this);
    split->addWidget(m_table);
    split->addWidget(m_detail);
    // The list's columns are what the tab is for; the pane's text wraps.
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 1);
    layout->addWidget(split, 1);
    m_table->setModel(m_model);
    m_table->setKeyRole(FourEyesModel::KeyRole);
    m_table->setSettingsKey(QStringLiteral("foureyes"));
    m_empty = new EmptyState(m_table);
    connect(m_model, &FourEyesModel::loaded, m_empty, &EmptyState::modelAnswered);
    connect(m_model, &FourEyesModel::loaded, this, &FourEyesView::updateSummary);
    // Rows change only when the worklist does; the selection follows its approval.
    connect(m_model, &QAbstractItemModel::modelAboutToBeReset, this, [this] {
        const QModelIndex current = m_table->currentIndex();
        m_selected = current.isValid() ? m_model->pendingAt(current.row()).approval.approvalId
                                       : std::string();
    });
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        for (int row = 0; row < m_model->rowCount(); ++row)
            if (!m_selected.empty() && m_model->pendingAt(row).approval.approvalId == m_selected) {
                m_table->setCurrentIndex(m_model->index(row, 0));
                return updateSummary();
            }
        m_detail->clear();
        updateSummary();
    });
    connect(m_includeMine, &QCheckBox::toggled, m_model, &FourEyesModel::setIncludeMine);
    connect(m_showSandbox, &QCheckBox::toggled, m_model, &FourEyesModel::setShowSandbox);
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &FourEyesView::showCurrent);
    m_empty->setMessage(tr("<b>No first approval waits for a second approver.</b><br>An "
                           "approval above the four-eyes threshold waits here, with who "
                           "approved first and why, until a different approver seconds it."));
}

void FourEyesView::reload()
{
    m_model->reload();
}

void FourEyesView::refresh()
{
    m_model->refresh();
}

void FourEyesView::setActor(const QString &name, const QString &role)
{
    m_actor = name;
    m_role = role;
    m_model->setActorName(name);
    updateSummary();
}

void FourEyesView::showCurrent()
{
    const QModelIndex current = m_table->currentIndex();
    if (!current.isValid()) {
        m_detail->clear();
        return;
    }
    m_detail->showOperation(m_model->pendingAt(current.row()).operation);
}

void FourEyesView::updateSummary()
{
    const int mine = m_model->waitingForMe();
    // Singular and plural spelt out: no translation is loaded to resolve "(s)".
    QString text = mine == 0 ? tr("Nothing waits for your second approval.")
                   : mine == 1
                       ? tr("<b>1 first approval waits for your second approval.</b>")
                       : tr("<b>%1 first approvals wait for your second approval.</b>").arg(mine);
    if (!m_actor.isEmpty())
        text += QLatin1Char(' ') + tr("You are %1 (%2); your own first approvals need another "
                                      "approver.")
                                       .arg(m_actor.toHtmlEscaped(), m_role.toHtmlEscaped());
    if (const int own = m_model->mineWaiting(); own > 0)
        text += QLatin1Char(' ') +
                (own == 1 ? tr("1 of yours waits for someone else (Also show those I approved "
                               "first).")
                          : tr("%1 of yours wait for someone else (Also show those I approved "
                               "first).")
                                .arg(own));
    if (m_model->hasMore())
        text += QLatin1Char(' ') + tr("Only the oldest %1 are listed.").arg(FourEyesModel::Limit);
    m_summary->setText(text);
    Q_EMIT waitingChanged(mine);
}

} // namespace idempo
