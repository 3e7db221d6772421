// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QList>
#include <QPointF>
#include <QWidget>

#include "overviewsnapshot.h"

class QBarSet;
class QChart;
class QChartView;
class QLineSeries;
class QValueAxis;
class QDateTimeAxis;
class QBarCategoryAxis;

namespace idempo {

/// The Overview's charts: suppressions and retries per minute over the last hour, backlog age
/// over time, and how long operations took to reach their final confirmation. Follows the
/// system palette (a dark theme on a dark palette).
class OverviewCharts final : public QWidget
{
    Q_OBJECT
public:
    explicit OverviewCharts(QWidget *parent = nullptr);

    void showSnapshot(const OverviewSnapshot &snapshot,
                      const std::array<int, OverviewSnapshot::Minutes> &suppressionsPerMinute,
                      const QList<QPointF> &backlogSamples);
    void clear();

protected:
    void changeEvent(QEvent *event) override;

private:
    QChartView *addChart(const QString &title);
    void applyTheme();

    QList<QChartView *> m_views;
    QLineSeries *m_suppressions;
    QLineSeries *m_retries;
    QValueAxis *m_rateX;
    QValueAxis *m_rateY;
    QLineSeries *m_backlog;
    QDateTimeAxis *m_backlogX;
    QValueAxis *m_backlogY;
    QBarSet *m_finals;
    QBarCategoryAxis *m_finalX;
    QValueAxis *m_finalY;
};

} // namespace idempo
