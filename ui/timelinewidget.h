// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QWidget>

#include "runtimeline.h"

namespace idempo {

/// A Gantt chart of one run: a lane per step, a bar per stretch in one state (coloured by
/// state), the write boundary as a red line, lease takeovers (T) and reconciliations (R)
/// marked. Ctrl+wheel or +/- zooms, 0 fits; hovering a bar tells its state, attempt, token,
/// actor and detail; double-clicking a bar opens its operation (operationActivated()).
class TimelineWidget final : public QWidget
{
    Q_OBJECT
public:
    explicit TimelineWidget(QWidget *parent = nullptr);

    void setTimeline(RunTimeline timeline);
    const RunTimeline &timeline() const { return m_timeline; }
    /// Pixels per second of run time; fitting makes the whole run as wide as `width`.
    void zoomBy(double factor);
    void fitTo(int width);
    double pixelsPerSecond() const { return m_pixelsPerSecond; }
    /// The tooltip text for a point, empty where no bar is (also used by tests).
    QString describeAt(const QPoint &pos) const;
    /// The operation key of the bar at `pos`, empty where no bar is.
    QString keyAt(const QPoint &pos) const;
    /// Where the first bar of lane `lane` is painted (tests click there).
    QPoint barCentre(int lane) const;

    QSize sizeHint() const override;

Q_SIGNALS:
    /// A bar was double-clicked: the operation of its lane.
    void operationActivated(const QString &key);

protected:
    void paintEvent(QPaintEvent *event) override;
    bool event(QEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    void mouseDoubleClickEvent(QMouseEvent *event) override;
    void keyPressEvent(QKeyEvent *event) override;

private:
    double xOf(std::int64_t ms) const;
    QRectF spanRect(int lane, const RunTimeline::Span &span) const;
    /// The lane whose bar (or marker) is at `pos`, -1 for none.
    int laneAt(const QPoint &pos) const;

    RunTimeline m_timeline;
    double m_pixelsPerSecond = 20.0;
    int m_fitWidth = 800;
};

} // namespace idempo
