// SPDX-License-Identifier: Apache-2.0
#include "sandboxpanel.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace idempo {

SandboxPanel::SandboxPanel(QWidget *parent)
    : LedgerView(parent)
{
    auto *layout = new QVBoxLayout(this);
    auto *banner = new QLabel(tr("<b>Sandbox runs are not available in this build.</b> The scenario runner "
                                 "(services/sandbox) is still being built; until it lands, fill the ledger with "
                                 "<code>.ci/demo</code> or the <code>idempo</code> CLI."),
                              this);
    banner->setWordWrap(true);
    banner->setFrameShape(QFrame::StyledPanel);
    banner->setMargin(8);
    layout->addWidget(banner);
    auto *box = new QGroupBox(tr("Scenario"), this);
    auto *form = new QFormLayout(box);
    auto *scenario = new QComboBox(box);
    scenario->addItems({tr("KYC onboarding"), tr("Payment refund"), tr("Travel booking"), tr("Invoice email")});
    auto *runs = new QSpinBox(box);
    runs->setRange(1, 10'000);
    runs->setValue(20);
    auto *seed = new QSpinBox(box);
    seed->setRange(0, 1'000'000);
    seed->setValue(42);
    auto *faults = new QListWidget(box);
    for (const QString &f : {tr("crash before dispatch"), tr("crash during the call"),
                             tr("crash after remote success"), tr("duplicate delivery"), tr("429 / 5xx / timeouts"),
                             tr("paused worker loses its lease"), tr("clock skew")}) {
        auto *item = new QListWidgetItem(f, faults);
        item->setCheckState(Qt::Unchecked);
    }
    faults->setMaximumHeight(150);
    form->addRow(tr("Scenario"), scenario);
    form->addRow(tr("Runs"), runs);
    form->addRow(tr("Faults"), faults);
    form->addRow(tr("Seed"), seed);
    layout->addWidget(box);
    auto *controls = new QHBoxLayout;
    auto *run = new QPushButton(tr("Run against the open ledger"), this);
    auto *cancel = new QPushButton(tr("Cancel"), this);
    auto *progress = new QProgressBar(this);
    controls->addWidget(run);
    controls->addWidget(cancel);
    controls->addWidget(progress, 1);
    layout->addLayout(controls);
    auto *report = new QLabel(tr("The invariant report appears here after a run."), this);
    layout->addWidget(report);
    layout->addStretch(1);
    for (QWidget *w : std::initializer_list<QWidget *>{box, run, cancel, progress, report}) {
        w->setEnabled(false);
        w->setToolTip(tr("needs the sandbox scenario runner, not in this build"));
    }
}

} // namespace idempo
