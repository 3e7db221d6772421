// SPDX-License-Identifier: Apache-2.0
#include "adaptivesplitter.h"

#include <algorithm>

#include <QResizeEvent>

namespace idempo {

namespace {
/// Side by side, the pane starts with this share of the width (percent), or its minimum if more.
constexpr int PaneShare = 30;
} // namespace

AdaptiveSplitter::AdaptiveSplitter(int wideFrom, QWidget *parent)
    : QSplitter(Qt::Vertical, parent), m_wideFrom(wideFrom)
{
}

void AdaptiveSplitter::resizeEvent(QResizeEvent *event)
{
    // Stacked, the splitter asks only for its widest part's width: the window may be narrow.
    const Qt::Orientation fits =
        event->size().width() >= m_wideFrom ? Qt::Horizontal : Qt::Vertical;
    const bool turned = fits != orientation();
    if (turned)
        setOrientation(fits);
    QSplitter::resizeEvent(event);
    // Turned side by side, the list starts with the larger part: its columns (the operation key
    // first) are what the tab is for, and the pane's text wraps. Later resizes share by stretch.
    if (turned && fits == Qt::Horizontal && count() == 2) {
        const int total = event->size().width() - handleWidth();
        const int pane = std::min(
            total, std::max(widget(1)->minimumSizeHint().width(), total * PaneShare / 100));
        setSizes({total - pane, pane});
    }
}

} // namespace idempo
