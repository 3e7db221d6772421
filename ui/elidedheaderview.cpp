// SPDX-License-Identifier: Apache-2.0
#include "elidedheaderview.h"

#include <algorithm>

#include <QHelpEvent>
#include <QStyle>
#include <QStyleOptionHeader>
#include <QToolTip>

namespace idempo {

ElidedHeaderView::ElidedHeaderView(QWidget *parent) : QHeaderView(Qt::Horizontal, parent)
{
    // As QTableView's own header: a click orders by the column.
    setSectionsClickable(true);
}

int ElidedHeaderView::titleRoom(int logicalIndex) const
{
    const int margin = style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, this);
    const int arrow = isSortIndicatorShown() && sortIndicatorSection() == logicalIndex
                          ? style()->pixelMetric(QStyle::PM_HeaderMarkSize, nullptr, this) + margin
                          : 0;
    return sectionSize(logicalIndex) - 2 * margin - arrow;
}

bool ElidedHeaderView::isTitleElided(int logicalIndex) const
{
    if (!model())
        return false;
    const QString title = model()->headerData(logicalIndex, orientation()).toString();
    return fontMetrics().horizontalAdvance(title) > titleRoom(logicalIndex);
}

void ElidedHeaderView::initStyleOptionForIndex(QStyleOptionHeader *option, int logicalIndex) const
{
    QHeaderView::initStyleOptionForIndex(option, logicalIndex);
    if (isTitleElided(logicalIndex))
        option->text = fontMetrics().elidedText(option->text, Qt::ElideRight,
                                                std::max(0, titleRoom(logicalIndex)));
}

bool ElidedHeaderView::viewportEvent(QEvent *event)
{
    if (event->type() == QEvent::ToolTip && model()) {
        const auto *help = static_cast<QHelpEvent *>(event);
        const int section = logicalIndexAt(help->pos());
        if (section >= 0 && isTitleElided(section)) {
            const QString title = model()->headerData(section, orientation()).toString();
            const QString tip =
                model()->headerData(section, orientation(), Qt::ToolTipRole).toString();
            QToolTip::showText(help->globalPos(),
                               tip.isEmpty() ? title : title + QStringLiteral(": ") + tip,
                               viewport());
            return true;
        }
    }
    return QHeaderView::viewportEvent(event);
}

} // namespace idempo
