// SPDX-License-Identifier: Apache-2.0
#include "overviewview.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

#include "displayformat.h"
#include "firststepspanel.h"
#include "ledgerconnection.h"
#include "overviewcharts.h"
#include "overviewmodel.h"
#include "runbudgetuse.h"
#include "sandboxsession.h"
#include "stattile.h"

namespace idempo {

OverviewView::OverviewView(LedgerConnection *connection, QWidget *parent)
    : LedgerView(parent), m_model(new OverviewModel(connection, this)),
      m_charts(new OverviewCharts(this)), m_tiles(new QWidget(this)),
      m_unavailable(new QLabel(this)), m_firstStepsPage(new QWidget(this)),
      m_firstSteps(new FirstStepsPanel(m_firstStepsPage)), m_connection(connection)
{
    auto *layout = new QVBoxLayout(this);
    auto *tiles = new QHBoxLayout(m_tiles);
    tiles->setContentsMargins(0, 0, 0, 0);
    const std::pair<const char *, QString> names[] = {
        {"leases", tr("In-flight leases")},
        {"confirmations", tr("Stuck confirmations")},
        {"approvals", tr("Awaiting approval")},
        {"suppressions", tr("Duplicates suppressed (1 h)")},
        {"dlq", tr("Dead letters")},
        {"halted", tr("Halted runs")},
        {"failures", tr("Failures by class")},
    };
    for (const auto &[name, caption] : names) {
        auto *tile = new StatTile(caption, m_tiles);
        m_tileByName.insert(QString::fromLatin1(name), tile);
        tiles->addWidget(tile, 1);
    }
    m_unavailable->setWordWrap(true);
    m_unavailable->setTextFormat(Qt::RichText);
    m_unavailable->setFrameShape(QFrame::StyledPanel);
    m_unavailable->setMargin(12);
    m_unavailable->hide();
    connect(m_unavailable, &QLabel::linkActivated, this, &OverviewView::linkActivated);
    layout->addWidget(m_unavailable);
    layout->addWidget(m_tiles);
    layout->addWidget(m_charts, 1);
    // The first steps replace tiles and charts on an empty ledger, centred where they were
    // (stretches, not alignment: an aligned panel would not get the height its wrapped text needs).
    auto *centre = new QVBoxLayout(m_firstStepsPage);
    auto *row = new QHBoxLayout;
    row->addStretch(1);
    row->addWidget(m_firstSteps, 4);
    row->addStretch(1);
    centre->addStretch(1);
    centre->addLayout(row);
    centre->addStretch(2);
    layout->addWidget(m_firstStepsPage, 1);
    m_firstStepsPage->hide();
    connect(m_firstSteps, &FirstStepsPanel::linkActivated, this, &OverviewView::linkActivated);
    connect(m_model, &OverviewModel::updated, this, &OverviewView::render);
}

void OverviewView::reload()
{
    m_model->reset();
    m_model->refresh();
}

void OverviewView::refresh()
{
    m_model->refresh();
}

void OverviewView::setUnavailable(const QString &why)
{
    m_unavailable->setText(why);
    m_unavailable->setVisible(!why.isEmpty());
    render();
}

QString OverviewView::unavailableText() const
{
    return m_unavailable->text();
}

void OverviewView::render()
{
    const OverviewSnapshot &s = m_model->snapshot();
    const bool empty = m_model->hasSnapshot() && s.isEmpty();
    if (empty)
        m_firstSteps->setLedger(SandboxSession::supportsLedger(m_connection->url()),
                                m_connection->description());
    m_firstStepsPage->setVisible(empty);
    m_tiles->setVisible(!empty);
    m_charts->setVisible(!empty);
    if (!m_model->hasSnapshot()) {
        for (StatTile *tile : std::as_const(m_tileByName))
            tile->setValue(
                m_unavailable->text().isEmpty() ? QStringLiteral("…") : QStringLiteral("—"),
                m_unavailable->text().isEmpty() ? tr("loading") : tr("not connected"), false);
        m_charts->clear();
        return;
    }
    const LedgerFigures &f = s.figures;
    const std::int64_t lapsed = f.metrics.leasesLapsed;
    tile(QStringLiteral("leases"))
        ->setValue(QString::number(f.metrics.leasesLive + lapsed),
                   lapsed > 0 ? tr("%1 lapsed: next claim fences them off").arg(lapsed)
                              : tr("all leases live"),
                   lapsed > 0);
    const std::int64_t confirmations = f.count(OperationState::ConfirmationRequired);
    const std::int64_t unknown = f.count(OperationState::UnknownOutcome);
    tile(QStringLiteral("confirmations"))
        ->setValue(QString::number(confirmations + unknown),
                   f.oldestConfirmationAgeMs ? tr("oldest waiting %1; %2 unknown outcome")
                                                   .arg(durationText(*f.oldestConfirmationAgeMs))
                                                   .arg(unknown)
                                             : tr("%1 unknown outcome").arg(unknown),
                   confirmations + unknown > 0);
    tile(QStringLiteral("approvals"))
        ->setValue(QString::number(f.count(OperationState::AwaitingApproval)),
                   tr("gated before dispatch"), false);
    tile(QStringLiteral("suppressions"))
        ->setValue(
            QString::number(f.metrics.suppressionsInWindow),
            tr("%1 / min over the last 5 min").arg(f.suppressionRatePerSecond * 60.0, 0, 'f', 1),
            false);
    tile(QStringLiteral("dlq"))
        ->setValue(s.hasQueues ? QString::number(s.dlqDepth) : tr("n/a"),
                   s.hasQueues ? tr("replay from Dead letters") : tr("no queues in this ledger"),
                   s.dlqDepth > 0);
    const auto halted = static_cast<qint64>(f.metrics.runsHalted);
    tile(QStringLiteral("halted"))
        ->setValue(QString::number(halted),
                   s.haltedRuns.empty()
                       ? tr("no run out of budget")
                       : tr("latest %1: %2")
                             .arg(displayText(s.haltedRuns.front().runId),
                                  s.haltedRuns.front().haltBudget
                                      ? budgetText(*s.haltedRuns.front().haltBudget)
                                      : tr("halted")),
                   halted > 0);
    QStringList failures;
    std::int64_t total = 0;
    for (const auto &[cls, count] : s.failuresByClass) {
        failures << QStringLiteral("%1 %2")
                        .arg(QString::fromLatin1(errorClassName(cls).data()))
                        .arg(count);
        total += count;
    }
    tile(QStringLiteral("failures"))
        ->setValue(QString::number(total),
                   failures.isEmpty() ? tr("none") : failures.join(QStringLiteral(" · ")), false);
    m_charts->showSnapshot(s, m_model->suppressionsPerMinute(), m_model->backlogSamples());
}

} // namespace idempo
