// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QFrame>

class QLabel;

namespace idempo {

/// One Overview figure: a caption, a big value and a line of context. `alert` frames it in
/// red, so a tile that needs a person stands out from across the room.
class StatTile final : public QFrame
{
    Q_OBJECT
public:
    explicit StatTile(const QString &caption, QWidget *parent = nullptr);

    void setValue(const QString &value, const QString &context, bool alert);
    QString value() const;

private:
    QLabel *m_caption;
    QLabel *m_value;
    QLabel *m_context;
};

} // namespace idempo
