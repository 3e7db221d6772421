// SPDX-License-Identifier: Apache-2.0
#include "budgetbardelegate.h"

#include <algorithm>

#include <QApplication>
#include <QPainter>

namespace idempo {

BudgetBarDelegate::BudgetBarDelegate(int role, QObject *parent)
    : QStyledItemDelegate(parent), m_role(role)
{
}

void BudgetBarDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option,
                              const QModelIndex &index) const
{
    const QVariantList bars = index.data(m_role).toList();
    if (bars.isEmpty()) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    opt.text.clear();
    const QWidget *widget = option.widget;
    QStyle *style = widget ? widget->style() : QApplication::style();
    style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, widget);

    painter->save();
    painter->setRenderHint(QPainter::Antialiasing);
    const QRect area = option.rect.adjusted(3, 3, -3, -3);
    const int gap = 4;
    const int n = static_cast<int>(bars.size());
    const int width = (area.width() - gap * (n - 1)) / n;
    const QPalette &palette = option.palette;
    const bool dark = palette.color(QPalette::Base).lightness() < 128;
    for (int i = 0; i < n; ++i) {
        const QVariantMap bar = bars.at(i).toMap();
        const double fraction =
            std::clamp(bar.value(QStringLiteral("fraction")).value<double>(), 0.0, 1.0);
        const bool haltedIt = bar.value(QStringLiteral("halted_it")).toBool();
        const QRect slot(area.left() + i * (width + gap), area.top(), width, area.height());
        const QColor fill = haltedIt || fraction >= 1.0 ? QColor(QStringLiteral("#c62828"))
                            : fraction >= 0.75          ? QColor(QStringLiteral("#ef8f00"))
                                                        : QColor(QStringLiteral("#2e7d32"));
        QColor track = palette.color(QPalette::Mid);
        track.setAlpha(70);
        painter->setPen(Qt::NoPen);
        painter->setBrush(track);
        painter->drawRoundedRect(slot, 3, 3);
        QColor body = fill;
        body.setAlpha(dark ? 150 : 110);
        painter->setBrush(body);
        painter->drawRoundedRect(QRect(slot.left(), slot.top(),
                                       static_cast<int>(slot.width() * fraction), slot.height()),
                                 3, 3);
        if (haltedIt) {
            painter->setPen(QPen(fill, 1.5));
            painter->setBrush(Qt::NoBrush);
            painter->drawRoundedRect(slot, 3, 3);
        }
        painter->setPen(palette.color(opt.state & QStyle::State_Selected ? QPalette::HighlightedText
                                                                         : QPalette::Text));
        const QString text = painter->fontMetrics().elidedText(
            bar.value(QStringLiteral("brief")).toString(), Qt::ElideRight, slot.width() - 6);
        painter->drawText(slot.adjusted(3, 0, -3, 0), Qt::AlignVCenter | Qt::AlignLeft, text);
    }
    painter->restore();
}

QSize BudgetBarDelegate::sizeHint(const QStyleOptionViewItem &option,
                                  const QModelIndex &index) const
{
    QSize size = QStyledItemDelegate::sizeHint(option, index);
    const int n = std::max<int>(1, static_cast<int>(index.data(m_role).toList().size()));
    size.setWidth(std::max(size.width() / 2, 120 * n));
    return size;
}

} // namespace idempo
