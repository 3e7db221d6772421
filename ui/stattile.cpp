// SPDX-License-Identifier: Apache-2.0
#include "stattile.h"

#include <QLabel>
#include <QVBoxLayout>

namespace idempo {

StatTile::StatTile(const QString &caption, QWidget *parent)
    : QFrame(parent), m_caption(new QLabel(caption, this)),
      m_value(new QLabel(QStringLiteral("…"), this)), m_context(new QLabel(this))
{
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    setBackgroundRole(QPalette::Base);
    auto *layout = new QVBoxLayout(this);
    QFont big = m_value->font();
    big.setPointSizeF(big.pointSizeF() * 2.2);
    big.setBold(true);
    m_value->setFont(big);
    m_caption->setWordWrap(true);
    m_context->setWordWrap(true);
    m_context->setForegroundRole(QPalette::PlaceholderText);
    layout->addWidget(m_caption);
    layout->addWidget(m_value);
    layout->addWidget(m_context);
    layout->addStretch(1);
    // The Overview's seven side by side fit a window on a 1024-pixel screen; captions wrap.
    setMinimumWidth(124);
}

void StatTile::setValue(const QString &value, const QString &context, bool alert)
{
    m_value->setText(value);
    m_context->setText(context);
    setStyleSheet(alert ? QStringLiteral(
                              "idempo--StatTile { border: 2px solid #d64545; border-radius: 4px; }")
                        : QString());
    m_value->setStyleSheet(alert ? QStringLiteral("color: #d64545;") : QString());
    setAccessibleDescription(m_caption->text() + QLatin1Char(' ') + value + QLatin1Char(' ') +
                             context);
}

QString StatTile::value() const
{
    return m_value->text();
}

} // namespace idempo
