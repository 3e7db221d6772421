// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QColor>
#include <QLabel>

namespace idempo {

/// A one-line status text that may be longer than the room it gets (a ledger path, a connection
/// error): drawn cut short with an ellipsis when it must be, the whole of it in the tooltip, so
/// that it never makes the window wider. text() is the whole text.
class ElidedLabel final : public QLabel
{
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget *parent = nullptr);

    /// Shows `text` (plain), in `color` and bold when `color` is valid.
    void setStatus(const QString &text, const QColor &color = {});
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent *event) override;

private:
    QColor m_color;
};

} // namespace idempo
