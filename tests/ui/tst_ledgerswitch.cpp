// SPDX-License-Identifier: Apache-2.0
#include <QAbstractItemModel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "actioncontroller.h"
#include "confirmationsview.h"
#include "consolefixture.h"
#include "dlqview.h"
#include "emptystate.h"
#include "guardedactiondialog.h"
#include "leasesview.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"
#include "overviewview.h"
#include "sandboxpanel.h"
#include "sandboxsession.h"
#include "stattile.h"

using namespace idempo;

/// A switch to a ledger that will not open never leaves the previous ledger's rows, report or
/// enabled actions under the new ledger's title: every view drops them and says why.
class TestLedgerSwitch final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void failedSwitchShowsNothingOfThePreviousLedger();
};

namespace {

template <typename View> View *find(const MainWindow &w)
{
    for (LedgerView *v : w.views())
        if (auto *found = qobject_cast<View *>(v))
            return found;
    return nullptr;
}

} // namespace

void TestLedgerSwitch::failedSwitchShowsNothingOfThePreviousLedger()
{
    test::ConsoleFixture fixture;
    fixture.populate();
    MainWindow window;
    window.setInteractive(false);
    QSignalSpy opened(&window, &MainWindow::ledgerOpened);
    window.show();
    window.openLedger(fixture.url());
    QVERIFY(opened.wait());

    // A report in the Sandbox tab and a selected operation with its actions enabled.
    auto *panel = find<SandboxPanel>(window);
    panel->setInteractive(false);
    panel->setRequest(QStringLiteral("invoice-email"), 2, {}, 7, QStringLiteral("sandbox-sw"));
    QSignalSpy finished(panel->session(), &SandboxSession::finished);
    panel->startRun();
    QVERIFY(finished.wait(60'000));
    QCOMPARE(panel->reportState(), QStringLiteral("ok"));
    auto *confirmations = find<ConfirmationsView>(window);
    window.tabs()->setCurrentWidget(confirmations);
    QTRY_VERIFY(confirmations->model()->rowCount() > 0);
    QTRY_VERIFY(window.actions()->actor().has_value());
    QSignalSpy history(confirmations->detail(), &OperationDetailPane::historyLoaded);
    confirmations->table()->setCurrentIndex(confirmations->model()->index(0, 0));
    QVERIFY(history.wait());
    QPushButton *reject = confirmations->detail()->actionButton(OperationAction::Reject);
    QVERIFY(reject->isEnabled());

    const QString bad = QStringLiteral("sqlite:/nonexistent-dir/other/ledger.db");
    QSignalSpy failed(&window, &MainWindow::ledgerFailed);
    window.openLedger(bad);
    QVERIFY(failed.wait());

    QVERIFY2(window.windowTitle().contains(QLatin1String("/nonexistent-dir/other/ledger.db")),
             qPrintable(window.windowTitle()));
    QVERIFY(window.statusText().contains(QLatin1String("NOT CONNECTED")));
    QVERIFY(!window.statusText().contains(QLatin1String("live updates")));
    for (LedgerView *v : window.views()) {
        if (LedgerTableView *t = v->table())
            QCOMPARE(t->model()->rowCount(), 0);
        if (EmptyState *e = v->emptyState())
            QVERIFY2(e->unavailable().contains(QLatin1String("Not connected")),
                     qPrintable(e->unavailable()));
    }
    auto *overview = find<OverviewView>(window);
    QVERIFY(overview->unavailableText().contains(QLatin1String("could not be opened")));
    QCOMPARE(overview->tile(QStringLiteral("leases"))->value(), QStringLiteral("—"));
    QVERIFY(!reject->isEnabled());
    QVERIFY2(reject->toolTip().contains(QLatin1String("No ledger is open")),
             qPrintable(reject->toolTip()));
    auto *dlq = find<DlqView>(window);
    QVERIFY(!dlq->replayButton()->isEnabled());
    QVERIFY(dlq->replayButton()->toolTip().contains(QLatin1String("No ledger is open")));
    auto *leases = find<LeasesView>(window);
    QVERIFY(!leases->reconcileButton()->isEnabled());
    QVERIFY(leases->reconcileButton()->toolTip().contains(QLatin1String("No ledger is open")));
    QCOMPARE(panel->reportState(), QString());
    QVERIFY(!panel->runButton()->isEnabled());
    QVERIFY2(panel->runButton()->toolTip().contains(QLatin1String("No ledger is open")),
             qPrintable(panel->runButton()->toolTip()));
    QCOMPARE(panel->progressBar()->text(), QStringLiteral("no run yet"));

    // Back on the first ledger: its rows return and nothing says "not connected".
    window.openLedger(fixture.url());
    QVERIFY(opened.wait());
    QTRY_VERIFY(confirmations->model()->rowCount() > 0);
    QVERIFY(confirmations->emptyState()->unavailable().isEmpty());
    QVERIFY(overview->unavailableText().isEmpty());
}

QTEST_MAIN(TestLedgerSwitch)
#include "tst_ledgerswitch.moc"
