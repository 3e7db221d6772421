// SPDX-License-Identifier: Apache-2.0
#include "adaptivesplitter.h"

#include <QResizeEvent>

namespace idempo {

AdaptiveSplitter::AdaptiveSplitter(int wideFrom, QWidget *parent)
    : QSplitter(Qt::Vertical, parent), m_wideFrom(wideFrom)
{
}

void AdaptiveSplitter::resizeEvent(QResizeEvent *event)
{
    // Stacked, the splitter asks only for its widest part's width: the window may be narrow.
    const Qt::Orientation fits =
        event->size().width() >= m_wideFrom ? Qt::Horizontal : Qt::Vertical;
    if (fits != orientation())
        setOrientation(fits);
    QSplitter::resizeEvent(event);
}

} // namespace idempo
