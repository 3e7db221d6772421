// SPDX-License-Identifier: Apache-2.0
#include "runbudgetpanel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>

#include "runbudgetuse.h"
#include "runsummary.h"

namespace idempo {

RunBudgetPanel::RunBudgetPanel(QWidget *parent)
    : QWidget(parent), m_state(new QLabel(this)), m_bars(new QHBoxLayout),
      m_resume(new QPushButton(tr("Resume run…"), this))
{
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_state->setTextFormat(Qt::RichText);
    m_state->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_state);
    layout->addLayout(m_bars, 1);
    layout->addWidget(m_resume);
    connect(m_resume, &QPushButton::clicked, this, &RunBudgetPanel::resumeRequested);
    setRun(nullptr, 0);
}

void RunBudgetPanel::setRun(const RunSummary *run, std::int64_t nowMs)
{
    while (QLayoutItem *item = m_bars->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    m_halted = run && run->halted();
    if (!run) {
        m_state->setText(tr("Select a run to see its budgets."));
    } else if (!run->record) {
        m_state->setText(tr("No run record: no claim of this run reached the ledger's budgets."));
    } else {
        const QString state = runStateText(*run->record).toHtmlEscaped();
        // The red of the bars, lighter on a dark palette so the words stay readable.
        const bool dark = palette().color(QPalette::Window).lightness() < 128;
        m_state->setText(
            m_halted ? QStringLiteral("<b style='color:%1'>%2</b>")
                           .arg(dark ? QStringLiteral("#ef5350") : QStringLiteral("#c62828"), state)
                     : QStringLiteral("<b>%1</b>").arg(state));
        const std::vector<BudgetUse> uses = budgetUses(*run->record, run->open(), nowMs);
        if (uses.empty())
            m_bars->addWidget(new QLabel(tr("no limits"), this));
        for (const BudgetUse &use : uses) {
            auto *bar = new QProgressBar(this);
            bar->setRange(0, 1000);
            bar->setValue(static_cast<int>(use.fraction * 1000));
            bar->setFormat(use.label);
            bar->setTextVisible(true);
            bar->setToolTip(budgetText(use.kind));
            bar->setMinimumWidth(bar->fontMetrics().horizontalAdvance(use.label) + 24);
            bar->setAlignment(Qt::AlignCenter);
            if (use.haltedIt || use.fraction >= 1.0)
                bar->setStyleSheet(QStringLiteral("QProgressBar::chunk { background: #c62828; }"));
            else if (use.fraction >= 0.75)
                bar->setStyleSheet(QStringLiteral("QProgressBar::chunk { background: #ef8f00; }"));
            m_bars->addWidget(bar);
        }
    }
    m_bars->addStretch(1);
    updateResume();
}

void RunBudgetPanel::setRefusal(const QString &why)
{
    m_refusal = why;
    updateResume();
}

void RunBudgetPanel::updateResume()
{
    m_resume->setEnabled(m_halted && m_refusal.isEmpty());
    m_resume->setToolTip(!m_halted              ? tr("Only a halted run can be resumed.")
                         : !m_refusal.isEmpty() ? m_refusal
                                                : tr("Resume the run, adding to the budget "
                                                     "that halted it (reason required)."));
}

QStringList RunBudgetPanel::barTexts() const
{
    QStringList texts;
    for (int i = 0; i < m_bars->count(); ++i)
        if (auto *bar = qobject_cast<QProgressBar *>(m_bars->itemAt(i)->widget()))
            texts << bar->format();
    return texts;
}

} // namespace idempo
