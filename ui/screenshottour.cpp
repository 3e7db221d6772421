// SPDX-License-Identifier: Apache-2.0
#include "screenshottour.h"

#include <QDir>
#include <QPixmap>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTimer>

#include "actioncontroller.h"
#include "confirmationsview.h"
#include "dlqview.h"
#include "filterbar.h"
#include "guardedactiondialog.h"
#include "ledgertableview.h"
#include "ledgerview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationsview.h"
#include "operationtablemodel.h"

namespace idempo {

namespace {
constexpr int PerTabMs = 900;
}

ScreenshotTour::ScreenshotTour(MainWindow *window, const QString &directory, QObject *parent)
    : QObject(parent), m_window(window), m_directory(directory)
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
        drawer(0);
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
        QString name =
            tabs->tabText(tab).remove(QLatin1Char('&')).section(QLatin1Char(' '), 0, 0).toLower();
        if (name == QLatin1String("dead"))
            name = QStringLiteral("dlq");
        const QString path =
            QDir(m_directory)
                .filePath(
                    QStringLiteral("%1-%2.png").arg(tab + 1, 2, 10, QLatin1Char('0')).arg(name));
        m_ok = m_window->grab().save(path) && m_ok;
        visit(tab + 1);
    });
}

void ScreenshotTour::drawer(int step)
{
    OperationsView *find = nullptr;
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<OperationsView *>(v))
            find = view;
    auto *sections = find ? find->detail()->findChild<QTabWidget *>() : nullptr;
    if (!sections) {
        dialogs(0);
        return;
    }
    const auto save = [this](const QString &name) {
        m_ok = m_window->grab().save(QDir(m_directory).filePath(name)) && m_ok;
    };
    switch (step) {
    case 0:
        // The invoice the prepared ledger's run-7004 sends, found by a payload field.
        m_window->tabs()->setCurrentWidget(find);
        find->filters()->setPayloadField(QStringLiteral("/invoice = INV-2291"));
        break;
    case 1:
        if (find->model()->rowCount() > 0)
            find->table()->setCurrentIndex(find->model()->index(0, 0));
        break;
    case 2:
        sections->setCurrentIndex(1); // History
        break;
    case 3:
        save(QStringLiteral("09-find-drawer.png"));
        sections->setCurrentIndex(sections->count() - 1); // Audit
        break;
    case 4:
        save(QStringLiteral("09-find-drawer-audit.png"));
        sections->setCurrentIndex(0);
        // A term that is not a JSON Pointer: named beside the field, the list as it was.
        find->filters()->setPayloadField(QStringLiteral("invoice = INV-2291"));
        break;
    default:
        save(QStringLiteral("09-find-bad-pointer.png"));
        find->filters()->setPayloadField({});
        dialogs(0);
        return;
    }
    QTimer::singleShot(PerTabMs, this, [this, step] { drawer(step + 1); });
}

void ScreenshotTour::dialogs(int step)
{
    ActionController *actions = m_window->actions();
    const auto grabWhenOpen = [this, actions, step](const QString &name, const QString &reason) {
        auto conn = std::make_shared<QMetaObject::Connection>();
        auto failed = std::make_shared<QMetaObject::Connection>();
        *failed = connect(actions, &ActionController::refused, this, [this, conn, failed, step] {
            disconnect(*conn);
            disconnect(*failed);
            m_ok = false;
            dialogs(step + 1);
        });
        *conn = connect(actions, &ActionController::dialogOpened, this,
                        [this, conn, failed, name, reason, step](GuardedActionDialog *d) {
                            disconnect(*conn);
                            disconnect(*failed);
                            d->reasonEdit()->setPlainText(reason);
                            QTimer::singleShot(PerTabMs, this, [this, d, name, step] {
                                m_ok = d->grab().save(QDir(m_directory).filePath(name)) && m_ok;
                                d->reject();
                                dialogs(step + 1);
                            });
                        });
    };
    if (step == 0) {
        for (LedgerView *v : m_window->views())
            if (auto *view = qobject_cast<ConfirmationsView *>(v)) {
                m_window->tabs()->setCurrentWidget(view);
                OperationTableModel *model = view->model();
                for (int r = 0; r < model->rowCount(); ++r)
                    if (model->operationAt(model->index(r, 0)).state ==
                        OperationState::AwaitingApproval) {
                        grabWhenOpen(QStringLiteral("dialog-approve.png"),
                                     tr("Refund agreed with the customer"));
                        actions->start(OperationAction::Redispatch,
                                       model->operationAt(model->index(r, 0)));
                        return;
                    }
            }
        dialogs(1);
        return;
    }
    if (step == 1) {
        for (LedgerView *v : m_window->views())
            if (auto *view = qobject_cast<DlqView *>(v);
                view && view->replayButton()->isEnabled()) {
                m_window->tabs()->setCurrentWidget(view);
                grabWhenOpen(QStringLiteral("dialog-dlq-replay.png"),
                             tr("Payments API is back after the outage"));
                view->replaySelectionOrFilter();
                return;
            }
    }
    Q_EMIT finished(m_ok);
}

} // namespace idempo
