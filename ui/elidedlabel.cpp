// SPDX-License-Identifier: Apache-2.0
#include "elidedlabel.h"

#include <QPainter>

namespace idempo {

ElidedLabel::ElidedLabel(QWidget *parent) : QLabel(parent)
{
    setTextFormat(Qt::PlainText);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
}

void ElidedLabel::setStatus(const QString &text, const QColor &color)
{
    m_color = color;
    QFont f = font();
    f.setBold(color.isValid());
    setFont(f);
    setText(text);
    setToolTip(text);
    update();
}

QSize ElidedLabel::minimumSizeHint() const
{
    // Enough for a word and the ellipsis; the rest of the text gives way.
    return {fontMetrics().averageCharWidth() * 12, QLabel::minimumSizeHint().height()};
}

void ElidedLabel::paintEvent(QPaintEvent *)
{
    QPainter painter(this);
    if (m_color.isValid())
        painter.setPen(m_color);
    const QRect room = contentsRect();
    painter.drawText(room, int(alignment() | Qt::TextSingleLine),
                     fontMetrics().elidedText(text(), Qt::ElideRight, room.width()));
}

} // namespace idempo
