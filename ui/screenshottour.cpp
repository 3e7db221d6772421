// SPDX-License-Identifier: Apache-2.0
#include "screenshottour.h"

#include "ledgertableview.h"
#include "ledgerview.h"
#include "mainwindow.h"

#include <QDir>
#include <QPixmap>
#include <QTabWidget>
#include <QTimer>

namespace idempo {

namespace {
constexpr int PerTabMs = 900;
}

ScreenshotTour::ScreenshotTour(MainWindow *window, const QString &directory, QObject *parent)
    : QObject(parent)
    , m_window(window)
    , m_directory(directory)
{
}

void ScreenshotTour::start(int settleMs)
{
    QDir().mkpath(m_directory);
    QTimer::singleShot(settleMs, this, [this] { visit(0); });
}

void ScreenshotTour::visit(int tab)
{
    QTabWidget *tabs = m_window->tabs();
    if (tab >= tabs->count()) {
        Q_EMIT finished(m_ok);
        return;
    }
    tabs->setCurrentIndex(tab);
    auto *view = qobject_cast<LedgerView *>(tabs->widget(tab));
    if (view && view->table() && view->table()->model() && view->table()->model()->rowCount() > 0 &&
        !view->table()->currentIndex().isValid()) {
        // Prefer a row a person must look at (its state column says so), else the first.
        const QAbstractItemModel *model = view->table()->model();
        int pick = 0;
        for (int r = model->rowCount() - 1; r >= 0; --r)
            for (int c = 0; c < model->columnCount(); ++c)
                if (model->index(r, c).data().toString() == QLatin1String("confirmation_required"))
                    pick = r;
        view->table()->setCurrentIndex(model->index(pick, 0));
    }
    QTimer::singleShot(PerTabMs, this, [this, tab, tabs] {
        QString name = tabs->tabText(tab).remove(QLatin1Char('&')).section(QLatin1Char(' '), 0, 0).toLower();
        if (name == QLatin1String("dead"))
            name = QStringLiteral("dlq");
        const QString path = QDir(m_directory).filePath(QStringLiteral("%1-%2.png").arg(tab + 1, 2, 10, QLatin1Char('0')).arg(name));
        m_ok = m_window->grab().save(path) && m_ok;
        visit(tab + 1);
    });
}

} // namespace idempo
