// SPDX-License-Identifier: Apache-2.0
#include "emptystate.h"

#include <QAbstractItemView>
#include <QEvent>

namespace idempo {

EmptyState::EmptyState(QAbstractItemView *view) : QLabel(view->viewport()), m_view(view)
{
    setAlignment(Qt::AlignCenter);
    setWordWrap(true);
    setTextFormat(Qt::RichText);
    setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::LinksAccessibleByKeyboard);
    setContentsMargins(24, 24, 24, 24);
    QPalette p = palette();
    p.setColor(QPalette::WindowText, p.color(QPalette::PlaceholderText));
    setPalette(p);
    hide();
    view->viewport()->installEventFilter(this);
    QAbstractItemModel *model = view->model();
    connect(model, &QAbstractItemModel::modelReset, this, [this] {
        m_answered = false;
        hide();
    });
    connect(model, &QAbstractItemModel::rowsInserted, this, &EmptyState::updateVisibility);
    connect(model, &QAbstractItemModel::rowsRemoved, this, &EmptyState::updateVisibility);
}

QString EmptyState::filteredMessage()
{
    return tr("<b>Nothing matches these filters.</b><br><a href='%1'>Clear the filters</a> to see "
              "every row.")
        .arg(QLatin1String(ClearFiltersLink));
}

QString EmptyState::sandboxHiddenNote()
{
    return tr("<br><small>Sandbox namespaces are hidden here: untick “Hide sandbox” to see "
              "them.</small>");
}

void EmptyState::setMessage(const QString &message)
{
    m_message = message;
    updateText();
}

void EmptyState::setGuidance(const QString &guidance)
{
    m_guidance = guidance;
    updateText();
}

void EmptyState::setUnavailable(const QString &why)
{
    m_unavailable = why;
    updateText();
    updateVisibility();
}

void EmptyState::modelAnswered()
{
    m_answered = true;
    updateVisibility();
}

bool EmptyState::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_view->viewport() && event->type() == QEvent::Resize)
        setGeometry(m_view->viewport()->rect());
    return QLabel::eventFilter(watched, event);
}

void EmptyState::updateVisibility()
{
    const bool empty = !m_unavailable.isEmpty() || (m_answered && m_view->model()->rowCount() == 0);
    if (empty) {
        setGeometry(m_view->viewport()->rect());
        raise();
    }
    setVisible(empty);
}

void EmptyState::updateText()
{
    if (!m_unavailable.isEmpty()) {
        setText(m_unavailable);
        return;
    }
    setText(m_guidance.isEmpty()
                ? m_message
                : m_message + QStringLiteral("<p>") + m_guidance + QStringLiteral("</p>"));
}

} // namespace idempo
