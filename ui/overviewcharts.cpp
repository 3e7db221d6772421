// SPDX-License-Identifier: Apache-2.0
#include "overviewcharts.h"

#include <algorithm>

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QDateTime>
#include <QDateTimeAxis>
#include <QEvent>
#include <QGridLayout>
#include <QLineSeries>
#include <QValueAxis>

namespace idempo {

OverviewCharts::OverviewCharts(QWidget *parent)
    : QWidget(parent), m_suppressions(new QLineSeries(this)), m_retries(new QLineSeries(this)),
      m_rateX(new QValueAxis(this)), m_rateY(new QValueAxis(this)),
      m_backlog(new QLineSeries(this)), m_backlogX(new QDateTimeAxis(this)),
      m_backlogY(new QValueAxis(this)), m_finals(new QBarSet(tr("operations"), this)),
      m_finalX(new QBarCategoryAxis(this)), m_finalY(new QValueAxis(this))
{
    auto *grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);

    QChart *rates = addChart(tr("Suppressions and retries per minute (last hour)"))->chart();
    m_suppressions->setName(tr("duplicates suppressed"));
    m_retries->setName(tr("failed attempts (retry or person)"));
    for (QLineSeries *s : {m_suppressions, m_retries}) {
        s->setParent(nullptr);
        rates->addSeries(s);
    }
    m_rateX->setRange(-59, 0);
    m_rateX->setLabelFormat(QStringLiteral("%d min"));
    m_rateX->setTickCount(7);
    m_rateY->setLabelFormat(QStringLiteral("%d"));
    for (QAbstractAxis *a : std::initializer_list<QAbstractAxis *>{m_rateX, m_rateY})
        a->setParent(nullptr);
    rates->addAxis(m_rateX, Qt::AlignBottom);
    rates->addAxis(m_rateY, Qt::AlignLeft);
    for (QLineSeries *s : {m_suppressions, m_retries}) {
        s->attachAxis(m_rateX);
        s->attachAxis(m_rateY);
    }

    QChart *backlog = addChart(tr("Backlog age: oldest record not yet final"))->chart();
    m_backlog->setName(tr("minutes"));
    m_backlog->setPointsVisible(true); // the first samples are single points
    m_backlog->setParent(nullptr);
    backlog->addSeries(m_backlog);
    m_backlogX->setFormat(QStringLiteral("HH:mm:ss"));
    m_backlogY->setLabelFormat(QStringLiteral("%.1f"));
    m_backlogY->setTitleText(tr("minutes"));
    m_backlogX->setParent(nullptr);
    m_backlogY->setParent(nullptr);
    backlog->addAxis(m_backlogX, Qt::AlignBottom);
    backlog->addAxis(m_backlogY, Qt::AlignLeft);
    m_backlog->attachAxis(m_backlogX);
    m_backlog->attachAxis(m_backlogY);
    backlog->legend()->hide();

    QChart *finals = addChart(tr("Time to final state (succeeded or failed, last hour)"))->chart();
    auto *bars = new QBarSeries;
    m_finals->setParent(nullptr);
    bars->append(m_finals);
    finals->addSeries(bars);
    m_finalX->append({tr("≤1 s"), tr("≤5 s"), tr("≤30 s"), tr("≤1 min"), tr("≤5 min"),
                      tr("≤30 min"), tr("≤1 h"), tr(">1 h")});
    QFont small = m_finalX->labelsFont();
    small.setPointSizeF(small.pointSizeF() * 0.85);
    m_finalX->setLabelsFont(small);
    m_finalX->setParent(nullptr);
    m_finalY->setParent(nullptr);
    m_finalY->setLabelFormat(QStringLiteral("%d"));
    finals->addAxis(m_finalX, Qt::AlignBottom);
    finals->addAxis(m_finalY, Qt::AlignLeft);
    bars->attachAxis(m_finalX);
    bars->attachAxis(m_finalY);
    finals->legend()->hide();

    grid->addWidget(m_views[0], 0, 0, 1, 2);
    grid->addWidget(m_views[1], 1, 0);
    grid->addWidget(m_views[2], 1, 1);
    applyTheme();
    clear();
}

QChartView *OverviewCharts::addChart(const QString &title)
{
    auto *chart = new QChart;
    chart->setTitle(title);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->legend()->setAlignment(Qt::AlignTop);
    auto *view = new QChartView(chart, this);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumHeight(200);
    m_views << view;
    return view;
}

void OverviewCharts::applyTheme()
{
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    for (QChartView *view : std::as_const(m_views)) {
        view->chart()->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
        view->chart()->setBackgroundBrush(palette().base());
        view->chart()->setTitleBrush(palette().text());
        view->chart()->legend()->setLabelColor(palette().color(QPalette::Text));
        for (QAbstractAxis *axis : view->chart()->axes())
            axis->setLabelsColor(palette().color(QPalette::Text));
    }
    // The theme resets series colours: keep the same meaning in both palettes.
    m_suppressions->setColor(QColor(0x3b, 0x82, 0xd6));
    m_retries->setColor(QColor(0xe0, 0x8a, 0x2e));
    m_backlog->setColor(QColor(0x9b, 0x59, 0xd0));
    m_finals->setColor(QColor(0x3f, 0xa3, 0x5b));
}

void OverviewCharts::changeEvent(QEvent *event)
{
    if (event->type() == QEvent::PaletteChange)
        applyTheme();
    QWidget::changeEvent(event);
}

void OverviewCharts::clear()
{
    m_suppressions->clear();
    m_retries->clear();
    m_backlog->clear();
    m_finals->remove(0, m_finals->count());
    m_rateY->setRange(0, 5);
    m_finalY->setRange(0, 5);
    const QDateTime now = QDateTime::currentDateTime();
    m_backlogX->setRange(now.addSecs(-60), now);
    m_backlogY->setRange(0, 1);
}

void OverviewCharts::showSnapshot(
    const OverviewSnapshot &snapshot,
    const std::array<int, OverviewSnapshot::Minutes> &suppressionsPerMinute,
    const QList<QPointF> &backlogSamples)
{
    QList<QPointF> sup;
    QList<QPointF> ret;
    int top = 5;
    for (int i = 0; i < OverviewSnapshot::Minutes; ++i) {
        const double x = i - (OverviewSnapshot::Minutes - 1);
        sup << QPointF(x, suppressionsPerMinute[static_cast<std::size_t>(i)]);
        ret << QPointF(x, snapshot.retriesPerMinute[static_cast<std::size_t>(i)]);
        top = std::max({top, suppressionsPerMinute[static_cast<std::size_t>(i)],
                        snapshot.retriesPerMinute[static_cast<std::size_t>(i)]});
    }
    m_suppressions->replace(sup);
    m_retries->replace(ret);
    m_rateY->setRange(0, top);
    m_rateY->applyNiceNumbers();

    QList<QPointF> backlog;
    double maxAge = 1.0;
    for (const QPointF &p : backlogSamples) {
        backlog << QPointF(p.x() * 1000.0, p.y());
        maxAge = std::max(maxAge, p.y());
    }
    m_backlog->replace(backlog);
    if (!backlog.isEmpty()) {
        const auto from = QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(backlog.front().x()));
        const auto to = QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(backlog.back().x()));
        m_backlogX->setRange(from.addSecs(-30), to.addSecs(5));
    }
    m_backlogY->setRange(0, maxAge * 1.15);

    m_finals->remove(0, m_finals->count());
    int topFinal = 5;
    for (int n : snapshot.figures.timeToFinalBuckets) {
        *m_finals << n;
        topFinal = std::max(topFinal, n);
    }
    m_finalY->setRange(0, topFinal);
    m_finalY->applyNiceNumbers();
}

} // namespace idempo
