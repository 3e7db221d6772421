// SPDX-License-Identifier: Apache-2.0
#include "timelinewidget.h"

#include <algorithm>
#include <cmath>

#include <QHelpEvent>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>

#include "displayformat.h"

namespace idempo {

namespace {
constexpr int LabelWidth = 220;
constexpr int AxisHeight = 28;
constexpr int LaneHeight = 30;
constexpr int Margin = 16;
} // namespace

TimelineWidget::TimelineWidget(QWidget *parent) : QWidget(parent)
{
    setFocusPolicy(Qt::StrongFocus);
    setMouseTracking(true);
    setAccessibleName(tr("Run timeline"));
}

void TimelineWidget::setTimeline(RunTimeline timeline)
{
    m_timeline = std::move(timeline);
    fitTo(m_fitWidth);
}

void TimelineWidget::fitTo(int width)
{
    m_fitWidth = std::max(200, width);
    const double seconds =
        std::max(1.0, static_cast<double>(m_timeline.endMs - m_timeline.startMs) / 1000.0);
    m_pixelsPerSecond = std::max(0.0001, (m_fitWidth - LabelWidth - 2 * Margin) / seconds);
    updateGeometry();
    resize(sizeHint());
    update();
}

void TimelineWidget::zoomBy(double factor)
{
    m_pixelsPerSecond = std::clamp(m_pixelsPerSecond * factor, 0.0001, 2000.0);
    updateGeometry();
    resize(sizeHint());
    update();
}

QSize TimelineWidget::sizeHint() const
{
    const double seconds = static_cast<double>(m_timeline.endMs - m_timeline.startMs) / 1000.0;
    const int width =
        LabelWidth + 2 * Margin + static_cast<int>(std::ceil(seconds * m_pixelsPerSecond));
    const int height =
        AxisHeight + Margin + static_cast<int>(m_timeline.lanes.size()) * LaneHeight + Margin;
    return {std::min(width, 1'000'000), std::max(height, 120)};
}

double TimelineWidget::xOf(std::int64_t ms) const
{
    return LabelWidth + Margin +
           static_cast<double>(ms - m_timeline.startMs) / 1000.0 * m_pixelsPerSecond;
}

QRectF TimelineWidget::spanRect(int lane, const RunTimeline::Span &span) const
{
    const double x0 = xOf(span.startMs);
    const double x1 = std::max(x0 + 3.0, xOf(span.endMs));
    return {x0, static_cast<double>(AxisHeight + lane * LaneHeight + 5), x1 - x0,
            static_cast<double>(LaneHeight - 10)};
}

void TimelineWidget::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    const QPalette &pal = palette();
    p.fillRect(rect(), pal.base());
    if (m_timeline.lanes.empty()) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, tr("Select a run to see its steps over time"));
        return;
    }
    // Time axis: a tick roughly every 100 px, at a round number of seconds.
    const double seconds = static_cast<double>(m_timeline.endMs - m_timeline.startMs) / 1000.0;
    double step = 1.0;
    for (double candidate :
         {0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0, 21600.0, 86400.0}) {
        step = candidate;
        if (candidate * m_pixelsPerSecond >= 90)
            break;
    }
    p.setPen(pal.color(QPalette::Mid));
    const int bottom = AxisHeight + static_cast<int>(m_timeline.lanes.size()) * LaneHeight;
    for (double t = 0; t <= seconds + step; t += step) {
        const double x = xOf(m_timeline.startMs + static_cast<std::int64_t>(t * 1000));
        p.setPen(pal.color(QPalette::Midlight));
        p.drawLine(QPointF(x, AxisHeight - 4), QPointF(x, bottom));
        p.setPen(pal.color(QPalette::Text));
        const QString label =
            step < 1.0
                ? QStringLiteral("+%1 s").arg(t, 0, 'f', 1)
                : QStringLiteral("+%1").arg(durationText(static_cast<std::int64_t>(t * 1000)));
        p.drawText(QPointF(x + 3, AxisHeight - 10), label);
    }
    for (std::size_t i = 0; i < m_timeline.lanes.size(); ++i) {
        const RunTimeline::Lane &lane = m_timeline.lanes[i];
        const int y = AxisHeight + static_cast<int>(i) * LaneHeight;
        if (i % 2 == 1)
            p.fillRect(QRect(0, y, width(), LaneHeight), pal.alternateBase());
        p.setPen(pal.color(QPalette::Text));
        const QString label =
            displayText(lane.stepId) +
            (lane.kind == ToolKind::ProtectedWrite ? QStringLiteral("  ⚑") : QString());
        p.drawText(QRect(Margin, y, LabelWidth - Margin, LaneHeight),
                   Qt::AlignVCenter | Qt::AlignLeft,
                   p.fontMetrics().elidedText(label, Qt::ElideMiddle, LabelWidth - Margin - 4));
        for (const RunTimeline::Span &span : lane.spans) {
            const QRectF r = spanRect(static_cast<int>(i), span);
            QColor c = stateColor(span.state);
            p.setPen(Qt::NoPen);
            p.setBrush(c);
            p.drawRoundedRect(r, 3, 3);
            if (span.state == OperationState::Dispatching && r.width() > 24) {
                p.setPen(Qt::white);
                p.drawText(r, Qt::AlignCenter, QStringLiteral("#%1").arg(span.attempt));
            }
        }
        for (const RunTimeline::Marker &m : lane.markers) {
            if (m.kind == RunTimeline::Marker::Kind::Final)
                continue;
            const double x = xOf(m.atMs);
            const QRectF badge(x - 8, y + 2, 16, 16);
            const bool takeover = m.kind == RunTimeline::Marker::Kind::Takeover;
            p.setPen(QPen(pal.color(QPalette::Base), 1.5));
            p.setBrush(takeover ? QColor(0xe0, 0x8a, 0x2e) : QColor(0x9b, 0x59, 0xd0));
            p.drawEllipse(badge);
            p.setPen(Qt::white);
            p.drawText(badge, Qt::AlignCenter,
                       takeover ? QStringLiteral("T") : QStringLiteral("R"));
        }
    }
    if (m_timeline.writeBoundaryMs) {
        const double x = xOf(*m_timeline.writeBoundaryMs);
        p.setPen(QPen(QColor(0xd6, 0x45, 0x45), 2, Qt::DashLine));
        p.drawLine(QPointF(x, AxisHeight - 6), QPointF(x, bottom + 4));
        p.setPen(QColor(0xd6, 0x45, 0x45));
        const QString note = tr("write boundary: effects from here on happen at most once");
        const int noteWidth = p.fontMetrics().horizontalAdvance(note);
        // Keep the note on screen: to the left of the line when the line is near the right edge.
        const double noteX = x + 4 + noteWidth > width() ? x - 4 - noteWidth : x + 4;
        p.drawText(QPointF(noteX, bottom + 16), note);
    }
}

QString TimelineWidget::describeAt(const QPoint &pos) const
{
    const int lane = (pos.y() - AxisHeight) / LaneHeight;
    if (pos.y() < AxisHeight || lane < 0 || lane >= static_cast<int>(m_timeline.lanes.size()))
        return QString();
    const RunTimeline::Lane &l = m_timeline.lanes[static_cast<std::size_t>(lane)];
    for (const RunTimeline::Marker &m : l.markers)
        if (m.kind != RunTimeline::Marker::Kind::Final && std::abs(xOf(m.atMs) - pos.x()) <= 8)
            return displayText(m.detail);
    for (const RunTimeline::Span &span : l.spans) {
        if (!spanRect(lane, span).adjusted(-2, -4, 2, 4).contains(pos))
            continue;
        QString text =
            tr("<b>%1</b><br>%2<br>%3 for %4<br>attempt %5 · token %6")
                .arg(displayText(l.key).toHtmlEscaped(), stateText(span.state),
                     timestampText(span.startMs), durationText(span.endMs - span.startMs))
                .arg(span.attempt)
                .arg(span.fencingToken);
        if (!span.actor.empty())
            text += tr("<br>by %1").arg(displayText(span.actor).toHtmlEscaped());
        if (span.errorClass)
            text += tr("<br>error: %1")
                        .arg(QString::fromLatin1(errorClassName(*span.errorClass).data()));
        if (!span.detail.empty())
            text += QStringLiteral("<br>") + displayText(span.detail).toHtmlEscaped();
        return text;
    }
    return QString();
}

int TimelineWidget::laneAt(const QPoint &pos) const
{
    const int lane = (pos.y() - AxisHeight) / LaneHeight;
    if (pos.y() < AxisHeight || lane < 0 || lane >= static_cast<int>(m_timeline.lanes.size()))
        return -1;
    for (const RunTimeline::Span &span : m_timeline.lanes[static_cast<std::size_t>(lane)].spans)
        if (spanRect(lane, span).adjusted(-2, -4, 2, 4).contains(pos))
            return lane;
    return -1;
}

QString TimelineWidget::keyAt(const QPoint &pos) const
{
    const int lane = laneAt(pos);
    return lane < 0 ? QString()
                    : QString::fromStdString(m_timeline.lanes[static_cast<std::size_t>(lane)].key);
}

QPoint TimelineWidget::barCentre(int lane) const
{
    const auto &spans = m_timeline.lanes.at(static_cast<std::size_t>(lane)).spans;
    return spans.empty() ? QPoint() : spanRect(lane, spans.front()).center().toPoint();
}

void TimelineWidget::mouseDoubleClickEvent(QMouseEvent *event)
{
    const QString key = keyAt(event->position().toPoint());
    if (key.isEmpty()) {
        QWidget::mouseDoubleClickEvent(event);
        return;
    }
    event->accept();
    Q_EMIT operationActivated(key);
}

bool TimelineWidget::event(QEvent *event)
{
    if (event->type() == QEvent::ToolTip) {
        auto *help = static_cast<QHelpEvent *>(event);
        const QString text = describeAt(help->pos());
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, this);
        return true;
    }
    return QWidget::event(event);
}

void TimelineWidget::wheelEvent(QWheelEvent *event)
{
    if (!(event->modifiers() & Qt::ControlModifier)) {
        QWidget::wheelEvent(event);
        return;
    }
    zoomBy(event->angleDelta().y() > 0 ? 1.25 : 0.8);
    event->accept();
}

void TimelineWidget::keyPressEvent(QKeyEvent *event)
{
    if (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal)
        zoomBy(1.25);
    else if (event->key() == Qt::Key_Minus)
        zoomBy(0.8);
    else if (event->key() == Qt::Key_0)
        fitTo(m_fitWidth);
    else
        QWidget::keyPressEvent(event);
}

} // namespace idempo
