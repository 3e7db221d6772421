// SPDX-License-Identifier: Apache-2.0
#include "mainwindow.h"

#include <QAbstractItemView>
#include <QApplication>
#include <QInputDialog>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>

#include "actioncontroller.h"
#include "auditview.h"
#include "bulkactionbar.h"
#include "bulkactioncontroller.h"
#include "confirmationsview.h"
#include "connectiondialog.h"
#include "connectionprofiles.h"
#include "displayformat.h"
#include "dlqview.h"
#include "elidedlabel.h"
#include "emptystate.h"
#include "filterbar.h"
#include "firststepspanel.h"
#include "foureyesmodel.h"
#include "foureyesview.h"
#include "guardedactiondialog.h"
#include "leasesview.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "money.h"
#include "notifier.h"
#include "operationdetailpane.h"
#include "operationsview.h"
#include "operationtablemodel.h"
#include "overviewmodel.h"
#include "overviewview.h"
#include "runsview.h"
#include "sandboxpanel.h"
#include "sandboxsession.h"
#include "suppressionsview.h"

namespace idempo {

MainWindow::MainWindow(QWidget *parent)
    : QMainWindow(parent), m_connection(new LedgerConnection(this)),
      m_actions(new ActionController(m_connection, this)), m_tabs(new QTabWidget(this)),
      m_ledgerLabel(new ElidedLabel(this)), m_whoLabel(new ElidedLabel(this)),
      m_liveLabel(new ElidedLabel(this))
{
    const Views views = createViews();
    setCentralWidget(m_tabs);
    statusBar()->addWidget(m_ledgerLabel, 1);
    statusBar()->addPermanentWidget(m_whoLabel);
    statusBar()->addPermanentWidget(m_liveLabel);
    buildMenus();
    connectLedger();
    connectViews(views);
    connectActions(views);
    updateTitle();
    resize(1400, 900);
}

MainWindow::Views MainWindow::createViews()
{
    Views v;
    m_overview = new OverviewView(m_connection, m_tabs);
    m_notifier = new Notifier(m_overview->model(), this);
    v.confirmations = new ConfirmationsView(m_connection, m_tabs);
    v.dlq = new DlqView(m_connection, m_tabs);
    v.leases = new LeasesView(m_connection, m_tabs);
    v.operations = new OperationsView(m_connection, m_tabs);
    v.runs = new RunsView(m_connection, m_tabs);
    m_sandbox = new SandboxPanel(m_connection, m_tabs);
    m_fourEyes = new FourEyesView(m_connection, m_tabs);
    m_find = v.operations;
    m_audit = new AuditView(m_connection, m_tabs);
    m_views = {m_overview,   v.leases,  v.confirmations, new SuppressionsView(m_connection, m_tabs),
               v.runs,       v.dlq,     m_sandbox,       m_audit,
               v.operations, m_fourEyes};
    const QStringList names{tr("&Overview"),     tr("&Leases"), tr("&Confirmations"),
                            tr("&Suppressions"), tr("&Runs"),   tr("&Dead letters"),
                            tr("Sand&box"),      tr("A&udit"),  tr("&Find"),
                            tr("Four &eyes")};
    for (int i = 0; i < m_views.size(); ++i)
        m_tabs->addTab(m_views[i], names[i]);
    return v;
}

void MainWindow::connectLedger()
{
    // A view never shows rows of a ledger other than the one the title names: the previous
    // ledger's rows go the moment a switch starts, and a failed open says why in every view.
    connect(m_connection, &LedgerConnection::closed, this, [this] {
        showUnavailable(tr("<b>Opening %1…</b>")
                            .arg(ConnectionProfiles::shown(m_connection->url()).toHtmlEscaped()));
    });
    connect(m_connection, &LedgerConnection::opened, this, [this] {
        ConnectionProfiles::setLastUrl(m_connection->url());
        statusBar()->clearMessage();
        for (LedgerView *v : std::as_const(m_views)) {
            v->setUnavailable({});
            v->reload();
        }
        updateTitle();
        Q_EMIT ledgerOpened();
    });
    connect(m_connection, &LedgerConnection::openFailed, this,
            [this](const QString &message, const QString &hint) {
                showUnavailable(
                    tr("<b>Not connected.</b><br>%1 could not be opened: %2<br>%3<br>"
                       "<a href='%4'>Open another ledger…</a>")
                        .arg(ConnectionProfiles::shown(m_connection->url()).toHtmlEscaped(),
                             message.toHtmlEscaped(), hint.toHtmlEscaped(),
                             QLatin1String(FirstStepsPanel::ConnectLink)));
                updateTitle();
                Q_EMIT ledgerFailed(message);
                if (m_interactive)
                    chooseLedger(message, hint);
            });
    connect(m_connection, &LedgerConnection::liveChanged, this, [this](bool live) {
        // An error from before the updates flowed again is not left beside a green status.
        if (live)
            statusBar()->clearMessage();
        updateTitle();
    });
    connect(m_connection, &LedgerConnection::queryFailed, this, [this](const QString &message) {
        statusBar()->showMessage(tr("Query failed: %1").arg(message), 10'000);
    });
    connect(m_connection, &LedgerConnection::changed, this, &MainWindow::refreshCurrent);
    connect(m_tabs, &QTabWidget::currentChanged, this, &MainWindow::refreshCurrent);
    connect(m_overview->model(), &OverviewModel::updated, this, &MainWindow::updateTabCounts);
    connect(m_overview->model(), &OverviewModel::updated, this, &MainWindow::updateGuidance);
    connect(m_connection, &LedgerConnection::opened, m_notifier, &Notifier::resetBaseline);
    connect(m_notifier, &Notifier::notified, this,
            [this](Notifier::Kind, const QString &title, const QString &text) {
                statusBar()->showMessage(QStringLiteral("%1: %2").arg(title, text), 30'000);
            });
}

void MainWindow::connectViews(const Views &v)
{
    connect(m_overview, &OverviewView::linkActivated, this, &MainWindow::followLink);
    for (LedgerView *view : std::as_const(m_views))
        if (EmptyState *empty = view->emptyState())
            connect(empty, &EmptyState::linkActivated, this, &MainWindow::followLink);
    connect(m_actions, &ActionController::actorChanged, this, [this] {
        const auto &actor = m_actions->actor();
        m_fourEyes->setActor(actor ? QString::fromStdString(actor->name) : QString(),
                             actor ? QString::fromStdString(actor->role) : QString());
        updateTitle();
    });
    connect(m_fourEyes, &FourEyesView::waitingChanged, this, &MainWindow::updateTabCounts);
    m_panes = {v.confirmations->detail(), v.operations->detail(), m_fourEyes->detail()};
    connect(m_audit, &AuditView::operationRequested, this, &MainWindow::showOperation);
    connect(v.runs, &RunsView::operationRequested, this, &MainWindow::showOperation);
    connect(m_find->model(), &OperationTableModel::pageLoaded, this,
            &MainWindow::selectPendingOperation);
}

void MainWindow::connectActions(const Views &v)
{
    for (OperationDetailPane *pane : std::as_const(m_panes)) {
        connect(pane, &OperationDetailPane::actionRequested, m_actions, &ActionController::start);
        const auto check = [this, pane] { pane->setRoleCheck(m_actions->roleCheck(pane)); };
        connect(m_actions, &ActionController::actorChanged, pane, check);
        connect(m_actions, &ActionController::enablementChanged, pane, check);
        connect(m_actions, &ActionController::executed, pane, &OperationDetailPane::reload);
    }
    v.dlq->setActions(m_actions);
    v.leases->setActions(m_actions);
    auto *bulk = new BulkActionController(m_connection, m_actions, this);
    for (BulkActionBar *bar : {v.confirmations->bulkBar(), v.leases->bulkBar()})
        bar->setControllers(bulk, m_actions);
    connect(bulk, &BulkActionController::refused, this, [this](const QString &message) {
        statusBar()->showMessage(tr("Bulk action not possible: %1").arg(message), 10'000);
    });
    connect(bulk, &BulkActionController::executed, this, [this](bool, const QString &outcome) {
        statusBar()->showMessage(outcome, 15'000);
        m_connection->pollNow();
        refreshCurrent();
    });
    v.runs->setActions(m_actions);
    connect(m_actions, &ActionController::refused, this, [this](const QString &message) {
        statusBar()->showMessage(tr("Action not possible: %1").arg(message), 10'000);
    });
    connect(m_actions, &ActionController::executed, this, [this](bool, const QString &outcome) {
        statusBar()->showMessage(outcome, 15'000);
        m_connection->pollNow();
        refreshCurrent();
    });
}

void MainWindow::buildMenus()
{
    QMenu *ledger = menuBar()->addMenu(tr("&Ledger"));
    ledger->addAction(tr("&Open…"), QKeySequence::Open, this, [this] { chooseLedger(); });
    ledger->addAction(tr("&Refresh now"), QKeySequence::Refresh, this, [this] {
        m_connection->pollNow();
        refreshCurrent();
    });
    ledger->addSeparator();
    ledger->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::quit);

    const auto currentTable = [this]() -> LedgerTableView * {
        auto *view = qobject_cast<LedgerView *>(m_tabs->currentWidget());
        return view ? view->table() : nullptr;
    };
    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    QAction *copy =
        edit->addAction(tr("&Copy operation key"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C),
                        this, [currentTable] {
                            if (LedgerTableView *t = currentTable())
                                t->copyKey();
                        });
    // The action says what the current list copies (a run id in Runs).
    connect(m_tabs, &QTabWidget::currentChanged, copy, [copy, currentTable] {
        LedgerTableView *t = currentTable();
        copy->setText(t ? t->keyLabel() : tr("&Copy operation key"));
        copy->setEnabled(t != nullptr);
    });
    edit->addAction(tr("&Export visible rows as CSV…"), QKeySequence(Qt::CTRL | Qt::Key_E), this,
                    [currentTable] {
                        if (LedgerTableView *t = currentTable())
                            t->exportCsv();
                    });
    edit->addAction(tr("&Find by key prefix"), QKeySequence::Find, this, [this] {
        auto *view = qobject_cast<LedgerView *>(m_tabs->currentWidget());
        if (view && view->filters())
            view->filters()->focusSearch();
    });

    buildOperationMenu();

    QMenu *viewMenu = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_tabs->count(); ++i) {
        QString name = m_tabs->tabText(i);
        name.remove(QLatin1Char('&'));
        viewMenu->addAction(name, QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)),
                            this, [this, i] { m_tabs->setCurrentIndex(i); });
    }
    viewMenu->addSeparator();
    QMenu *notify = viewMenu->addMenu(tr("&Notify me of"));
    for (Notifier::Kind kind :
         {Notifier::Kind::HaltedRun, Notifier::Kind::Confirmation, Notifier::Kind::DeadLetter}) {
        QAction *a = notify->addAction(Notifier::kindText(kind));
        a->setCheckable(true);
        a->setChecked(m_notifier->isEnabled(kind));
        connect(a, &QAction::toggled, m_notifier,
                [this, kind](bool on) { m_notifier->setEnabled(kind, on); });
    }
    QAction *floor = notify->addAction(QString());
    const auto floorText = [this] {
        const QString amount = m_notifier->confirmationFloor();
        return amount.isEmpty() ? tr("Confirmations of any &value…")
                                : tr("Confirmations only &above %1…").arg(amount);
    };
    floor->setText(floorText());
    connect(floor, &QAction::triggered, this, [this, floor, floorText] {
        bool ok = false;
        const QString amount =
            QInputDialog::getText(this, tr("Notify me of confirmations above"),
                                  tr("Tell me of new confirmations above this value (major "
                                     "units; in the reference currency when the ledger has "
                                     "reference rates).\nEmpty: every new confirmation."),
                                  QLineEdit::Normal, m_notifier->confirmationFloor(), &ok)
                .trimmed();
        if (!ok)
            return;
        if (!amount.isEmpty() && !parseMajorAmount(amount.toStdString(), {})) {
            QMessageBox::warning(this, tr("Not an amount"),
                                 tr("“%1” is not an amount such as 5000 or 5,000.00; the "
                                    "setting is unchanged.")
                                     .arg(amount));
            return;
        }
        m_notifier->setConfirmationFloor(amount);
        floor->setText(floorText());
    });
    // One choice of zone for every list, dialog and tooltip, remembered; exports stay UTC (ISO).
    setTimesInUtc(QSettings().value(QStringLiteral("display/timesInUtc"), true).toBool());
    QAction *utc = viewMenu->addAction(tr("Times in &UTC"));
    utc->setCheckable(true);
    utc->setChecked(timesInUtc());
    utc->setToolTip(tr("Unticked: local time, with its zone"));
    connect(utc, &QAction::toggled, this, [this](bool on) {
        setTimesInUtc(on);
        QSettings().setValue(QStringLiteral("display/timesInUtc"), on);
        updateTitle();
        refreshAll();
    });
}

void MainWindow::openLedger(const QString &url)
{
    m_connection->open(url);
    updateTitle();
}

void MainWindow::chooseLedger(const QString &error, const QString &hint)
{
    ConnectionDialog dialog(ConnectionProfiles::shown(m_connection->url()), this);
    if (!error.isEmpty())
        dialog.setError(error, hint);
    if (dialog.exec() == QDialog::Accepted)
        openLedger(dialog.url());
}

QString MainWindow::statusText() const
{
    return m_ledgerLabel->text() + QStringLiteral(" | ") + m_whoLabel->text() +
           QStringLiteral(" | ") + m_liveLabel->text();
}

void MainWindow::updateTitle()
{
    const QString ledger = m_connection->isOpen() ? m_connection->description()
                                                  : ConnectionProfiles::shown(m_connection->url());
    QString live;
    const QColor red(0xd6, 0x45, 0x45);
    if (!m_connection->isOpen()) {
        live = m_connection->lastError().isEmpty() ? tr("connecting…") : tr("NOT CONNECTED");
        m_liveLabel->setStatus(QStringLiteral("● %1").arg(live), red);
    } else if (m_connection->isLive()) {
        live = tr("live");
        m_liveLabel->setStatus(QStringLiteral("● %1").arg(tr("live updates")),
                               QColor(0x3f, 0xa3, 0x5b));
    } else {
        live = tr("STALE DATA");
        m_liveLabel->setStatus(
            QStringLiteral("⚠ %1 — %2")
                .arg(tr("STALE: live updates stopped"), m_connection->lastError()),
            red);
    }
    m_ledgerLabel->setStatus(
        tr("Ledger: %1 · times in %2").arg(ledger, timesInUtc() ? tr("UTC") : tr("local time")));
    // Who acts is always in sight: every guarded action is recorded under this identity.
    const auto &actor = m_actions->actor();
    const QString who = actor ? tr("%1 (%2)").arg(QString::fromStdString(actor->name),
                                                  QString::fromStdString(actor->role))
                              : QString();
    m_whoLabel->setStatus(actor ? tr("You: %1").arg(who) : QString());
    setWindowTitle(actor ? tr("%1 [%2] — %3 — Idempo Console").arg(ledger, live, who)
                         : tr("%1 [%2] — Idempo Console").arg(ledger, live));
}

void MainWindow::showUnavailable(const QString &why)
{
    for (LedgerView *v : std::as_const(m_views)) {
        v->reload();
        v->setUnavailable(why);
    }
    updateTabCounts();
}

void MainWindow::followLink(const QString &link)
{
    if (link == QLatin1String(FirstStepsPanel::SandboxLink))
        m_tabs->setCurrentWidget(m_sandbox);
    else if (link == QLatin1String(FirstStepsPanel::ConnectLink))
        chooseLedger();
}

void MainWindow::updateGuidance()
{
    const OverviewModel *model = m_overview->model();
    const bool empty = model->hasSnapshot() && model->snapshot().isEmpty();
    const QString guidance =
        empty ? FirstStepsPanel::guidance(SandboxSession::supportsLedger(m_connection->url()))
              : QString();
    for (LedgerView *v : std::as_const(m_views))
        if (EmptyState *state = v->emptyState())
            state->setGuidance(guidance);
}

void MainWindow::refreshAll()
{
    // Times are rendered on demand: a repaint of every view shows them in the new zone.
    for (LedgerView *v : std::as_const(m_views))
        v->update();
    for (QAbstractItemView *view : findChildren<QAbstractItemView *>())
        view->viewport()->update();
    refreshCurrent();
}

void MainWindow::refreshCurrent()
{
    if (!m_connection->isOpen())
        return;
    if (auto *view = qobject_cast<LedgerView *>(m_tabs->currentWidget()))
        view->refresh();
    if (m_tabs->currentWidget() != m_overview)
        m_overview->refresh();
}

void MainWindow::updateTabCounts()
{
    const int secondApprovals = m_fourEyes->model()->waitingForMe();
    m_tabs->setTabText(m_tabs->indexOf(m_fourEyes), secondApprovals > 0
                                                        ? tr("Four &eyes (%1)").arg(secondApprovals)
                                                        : tr("Four &eyes"));
    if (!m_overview->model()->hasSnapshot()) {
        for (const auto &[tab, name] :
             {std::pair{1, tr("&Leases")}, std::pair{2, tr("&Confirmations")},
              std::pair{4, tr("&Runs")}, std::pair{5, tr("&Dead letters")}})
            m_tabs->setTabText(tab, name);
        return;
    }
    const OverviewSnapshot &s = m_overview->model()->snapshot();
    const auto label = [](const QString &name, std::int64_t n) {
        return n > 0 ? QStringLiteral("%1 (%2)").arg(name).arg(n) : name;
    };
    const LedgerFigures &f = s.figures;
    m_tabs->setTabText(1, label(tr("&Leases"), f.metrics.leasesLive + f.metrics.leasesLapsed));
    m_tabs->setTabText(2,
                       label(tr("&Confirmations"), f.count(OperationState::ConfirmationRequired) +
                                                       f.count(OperationState::AwaitingApproval) +
                                                       f.count(OperationState::UnknownOutcome)));
    m_tabs->setTabText(4, f.metrics.runsHalted == 0
                              ? tr("&Runs")
                              : tr("&Runs (%1 halted)").arg(f.metrics.runsHalted));
    m_tabs->setTabText(5, label(tr("&Dead letters"), s.dlqDepth));
}

} // namespace idempo
