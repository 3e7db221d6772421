// SPDX-License-Identifier: Apache-2.0
#include <QApplication>
#include <QClipboard>
#include <QLineEdit>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "confirmationsview.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "deadlettertablemodel.h"
#include "dlqview.h"
#include "eventtablemodel.h"
#include "filterbar.h"
#include "leasesview.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"
#include "overviewmodel.h"
#include "overviewview.h"
#include "runsview.h"
#include "runtablemodel.h"
#include "stattile.h"
#include "suppressionsview.h"
#include "suppressiontablemodel.h"
#include "timelinewidget.h"

using namespace idempo;

/// Every view over a prepared ledger, offscreen: opens, shows rows, filters, follows a change.
class TestViews final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void windowShowsLedgerAndLiveState();
    void windowNamesAFailedLedgerWithoutItsPassword();
    void overview();
    void leases();
    void confirmations();
    void suppressions();
    void runsAndTimeline();
    void deadLetters();

private:
    template <typename View> View *show();
    void typeFilter(FilterBar *bar, const QString &prefix);

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
};

void TestViews::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    m_window = test::openConsole(m_fixture->url());
    QVERIFY(m_window);
}

void TestViews::cleanup()
{
    m_window.reset();
    m_fixture.reset();
}

template <typename View> View *TestViews::show()
{
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<View *>(v)) {
            m_window->tabs()->setCurrentWidget(view);
            return view;
        }
    return nullptr;
}

void TestViews::typeFilter(FilterBar *bar, const QString &prefix)
{
    auto *edit = bar->findChildren<QLineEdit *>().at(1);
    edit->setFocus();
    edit->clear();
    QTest::keyClicks(edit, prefix);
}

void TestViews::windowShowsLedgerAndLiveState()
{
    QVERIFY(m_window->windowTitle().contains(m_fixture->path()));
    QTRY_VERIFY(m_window->statusText().contains(QLatin1String("live updates")));
    QVERIFY(m_window->windowTitle().contains(QLatin1String("[live]")));
    // Two wait for a person, one unknown outcome waits for reconciliation.
    QTRY_VERIFY(m_window->tabs()->tabText(2).contains(QLatin1String("(3)")));
}

void TestViews::windowNamesAFailedLedgerWithoutItsPassword()
{
    QSignalSpy failed(m_window.get(), &MainWindow::ledgerFailed);
    m_window->openLedger(
        QStringLiteral("POSTGRESQL://app:s3cret@127.0.0.1:1/db?connect_timeout=2"));
    QVERIFY(failed.wait(10'000));
    const QString shown = QStringLiteral("postgresql://app@127.0.0.1:1/db?connect_timeout=2");
    QVERIFY2(!failed.first().first().toString().contains(QLatin1String("s3cret")),
             qPrintable(failed.first().first().toString()));
    QVERIFY2(m_window->windowTitle().contains(shown), qPrintable(m_window->windowTitle()));
    QVERIFY(!m_window->windowTitle().contains(QLatin1String("s3cret")));
    QVERIFY(!m_window->statusText().contains(QLatin1String("s3cret")));
}

void TestViews::overview()
{
    auto *view = show<OverviewView>();
    QTRY_COMPARE(view->tile(QStringLiteral("leases"))->value(), QStringLiteral("3"));
    QCOMPARE(view->tile(QStringLiteral("confirmations"))->value(), QStringLiteral("2"));
    QCOMPARE(view->tile(QStringLiteral("dlq"))->value(), QStringLiteral("1"));
    QCOMPARE(view->tile(QStringLiteral("suppressions"))->value(), QStringLiteral("6"));
    QTRY_VERIFY(m_window->connection()->isLive());
    m_fixture->claimNew("run-7500:pay", "run-7500");
    QTRY_COMPARE(view->tile(QStringLiteral("leases"))->value(), QStringLiteral("4"));
}

void TestViews::leases()
{
    auto *view = show<LeasesView>();
    QTRY_COMPARE(view->model()->rowCount(), 3);
    view->table()->setFocus();
    QTest::keyClick(view->table(), Qt::Key_Down);
    QVERIFY(view->table()->currentIndex().isValid());
    QTest::keySequence(view->table(), QKeySequence::Copy);
    QCOMPARE(QApplication::clipboard()->text(),
             view->table()->currentIndex().siblingAtColumn(0).data().toString());
    // The export holds the columns shown: Leases hides Run by default (the header menu shows it).
    QVERIFY2(view->table()->csv().startsWith(QLatin1String("Operation key,Namespace,Step,State")),
             qPrintable(view->table()->csv().left(80)));
    typeFilter(view->filters(), QStringLiteral("run-7007"));
    QTRY_COMPARE(view->model()->rowCount(), 1);
    QVERIFY(view->model()->index(0, 0).data(OperationTableModel::LapsedRole).toBool());
    typeFilter(view->filters(), QString());
    QTRY_COMPARE(view->model()->rowCount(), 3);
    QTRY_VERIFY(m_window->connection()->isLive());
    m_fixture->claimNew("run-7501:pay", "run-7501");
    QTRY_COMPARE(view->model()->rowCount(), 4);
}

void TestViews::confirmations()
{
    auto *view = show<ConfirmationsView>();
    // The two that wait for a person and the unknown outcome (run-7003), in id order.
    QTRY_COMPARE(view->model()->rowCount(), 3);
    QSignalSpy history(view->detail(), &OperationDetailPane::historyLoaded);
    view->table()->setCurrentIndex(view->model()->index(2, 0));
    QVERIFY(history.wait());
    QVERIFY(view->detail()->history()->rowCount() >= 6); // three dispatches, three failures
    typeFilter(view->filters(), QStringLiteral("run-7002"));
    QTRY_COMPARE(view->model()->rowCount(), 1);
    typeFilter(view->filters(), QString());
    QTRY_COMPARE(view->model()->rowCount(), 3);
    QTRY_VERIFY(m_window->connection()->isLive());
    // A new operation fails three times: it joins the list as a confirmation.
    const std::string key = "run-7601:wire_transfer";
    for (int attempt = 0; attempt < 3; ++attempt) {
        const ClaimResult c = m_fixture->claimNew(key, "run-7601");
        QCOMPARE(c.outcome, ClaimOutcome::Claimed);
        m_fixture->engine().fail("default", key, c.operation.fencingToken, ErrorClass::Transient,
                                 "bank API 503");
        m_fixture->clock().advanceMs(60'000);
    }
    QTRY_COMPARE(view->model()->rowCount(), 3);
}

void TestViews::suppressions()
{
    auto *view = show<SuppressionsView>();
    QTRY_COMPARE(view->model()->rowCount(), 6);
    typeFilter(view->filters(), QStringLiteral("run-7003"));
    QTRY_COMPARE(view->model()->rowCount(), 1);
    typeFilter(view->filters(), QString());
    QTRY_COMPARE(view->model()->rowCount(), 6);
    QTRY_VERIFY(m_window->connection()->isLive());
    m_fixture->claimNew("run-7006:capture_payment", "run-7006");
    QTRY_COMPARE(view->model()->rowCount(), 7);
}

void TestViews::runsAndTimeline()
{
    auto *view = show<RunsView>();
    QTRY_COMPARE(view->model()->rowCount(), 21);
    typeFilter(view->filters(), QStringLiteral("run-7001"));
    QTRY_COMPARE(view->model()->rowCount(), 1);
    QSignalSpy loaded(view, &RunsView::timelineLoaded);
    view->table()->setCurrentIndex(view->model()->index(0, 0));
    QVERIFY(loaded.wait());
    TimelineWidget *t = view->timeline();
    QCOMPARE(t->timeline().lanes.size(), std::size_t{3});
    QVERIFY(t->timeline().writeBoundaryMs.has_value());
    const double before = t->pixelsPerSecond();
    t->setFocus();
    QTest::keyClick(t, Qt::Key_Plus);
    QVERIFY(t->pixelsPerSecond() > before);
    QVERIFY(t->describeAt(QPoint(t->width() / 2, 28 + 15)).contains(QLatin1String("run-7001")) ||
            !t->describeAt(QPoint(300, 28 + 15)).isEmpty());
    QTRY_VERIFY(m_window->connection()->isLive());
    m_fixture->claimNew("run-7001:notify_customer", "run-7001");
    QTRY_COMPARE(view->model()->index(0, RunTableModel::Steps).data().toInt(), 4);
    QTRY_COMPARE(t->timeline().lanes.size(), std::size_t{4});
}

void TestViews::deadLetters()
{
    auto *view = show<DlqView>();
    QTRY_COMPARE(view->model()->rowCount(), 1);
    QCOMPARE(view->model()->index(0, DeadLetterTableModel::Key).data().toString(),
             QStringLiteral("run-7009:capture"));
    QTRY_VERIFY(m_window->connection()->isLive());
    m_fixture->queues().send("payments", R"({"idempotency_key":"run-7600:x"})", "", 0);
    m_fixture->queues().read("payments", 0, 1);
    m_fixture->queues().read("payments", 0, 1);
    QTRY_COMPARE(view->model()->rowCount(), 2);
}

QTEST_MAIN(TestViews)
#include "tst_views.moc"
