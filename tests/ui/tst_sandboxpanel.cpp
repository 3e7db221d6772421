// SPDX-License-Identifier: Apache-2.0
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>
#include <QTreeWidget>

#include "consolefixture.h"
#include "consolewindow.h"
#include "ledgerconnection.h"
#include "mainwindow.h"
#include "runsview.h"
#include "runtablemodel.h"
#include "sandboxpanel.h"
#include "sandboxsession.h"

using namespace idempo;

/// The sandbox panel over the prepared embedded ledger, offscreen: a small run ends green with
/// its rows in the other views; a large run stops when cancelled.
class TestSandboxPanel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void smallRunEndsGreenAndFillsTheViews();
    void largeRunStopsWhenCancelled();
    void runsAreTakenAsTypedAndNoProgressBeforeARun();

private:
    template <typename View> View *view() const;

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
};

void TestSandboxPanel::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    m_window = test::openConsole(m_fixture->url());
    QVERIFY(m_window);
    view<SandboxPanel>()->setInteractive(false);
}

void TestSandboxPanel::cleanup()
{
    m_window.reset();
    m_fixture.reset();
}

template <typename View> View *TestSandboxPanel::view() const
{
    for (LedgerView *v : m_window->views())
        if (auto *found = qobject_cast<View *>(v))
            return found;
    return nullptr;
}

void TestSandboxPanel::smallRunEndsGreenAndFillsTheViews()
{
    SandboxPanel *panel = view<SandboxPanel>();
    m_window->tabs()->setCurrentWidget(panel);
    QVERIFY(panel->runButton()->isEnabled());
    QVERIFY(!panel->cancelButton()->isEnabled());
    panel->setRequest(QStringLiteral("all"), 4,
                      {QStringLiteral("duplicate-delivery"), QStringLiteral("crash-after-effect")},
                      42, QStringLiteral("sandbox-test"));
    QSignalSpy progressed(panel->session(), &SandboxSession::progressed);
    QSignalSpy finished(panel->session(), &SandboxSession::finished);
    QTest::mouseClick(panel->runButton(), Qt::LeftButton);
    QCOMPARE(panel->reportState(), QStringLiteral("running"));
    QVERIFY(!panel->runButton()->isEnabled());
    QVERIFY(finished.wait(60'000));
    QVERIFY(!progressed.isEmpty());
    QCOMPARE(panel->progressBar()->maximum(), 4);
    QCOMPARE(panel->progressBar()->value(), 4);
    QCOMPARE(panel->reportState(), QStringLiteral("ok"));
    QVERIFY2(panel->headline().contains(QLatin1String("invariants hold")),
             qPrintable(panel->headline()));
    QCOMPARE(panel->session()->report().at("duplicate_effects").get<int>(), 0);
    QVERIFY(panel->session()->report().at("deliveries").get<int>() > 4);
    QVERIFY(panel->runButton()->isEnabled());
    QVERIFY(!panel->cancelButton()->isEnabled());

    ListFilter inSandbox;
    inSandbox.ns = "sandbox-test";
    QVERIFY(!m_fixture->store().list(inSandbox).empty());
    // The Runs view picks the four runs up through its live updates: 21 prepared runs + 4.
    auto *runs = view<RunsView>();
    m_window->tabs()->setCurrentWidget(runs);
    QTRY_COMPARE_WITH_TIMEOUT(runs->model()->rowCount(), 21 + 4, 10'000);
}

void TestSandboxPanel::largeRunStopsWhenCancelled()
{
    SandboxPanel *panel = view<SandboxPanel>();
    m_window->tabs()->setCurrentWidget(panel);
    panel->setRequest(QStringLiteral("kyc-onboarding"), 10'000, {}, 7,
                      QStringLiteral("sandbox-large"));
    QSignalSpy progressed(panel->session(), &SandboxSession::progressed);
    QSignalSpy finished(panel->session(), &SandboxSession::finished);
    panel->startRun();
    QVERIFY(panel->session()->isRunning());
    QVERIFY(progressed.wait(60'000));
    QVERIFY(panel->cancelButton()->isEnabled());
    QTest::mouseClick(panel->cancelButton(), Qt::LeftButton);
    QVERIFY(finished.wait(60'000));
    QVERIFY(!panel->session()->isRunning());
    QCOMPARE(panel->reportState(), QStringLiteral("cancelled"));
    QVERIFY2(panel->headline().contains(QLatin1String("CANCELLED")), qPrintable(panel->headline()));
    const nlohmann::json &report = panel->session()->report();
    QCOMPARE(report.at("cancelled").get<bool>(), true);
    QVERIFY(report.at("invariants").contains("invariants"));
    QVERIFY(panel->progressBar()->value() < 10'000);
    // An invariant checked on nothing is not a green "holds (0 checked)".
    for (const nlohmann::json &i : report.at("invariants").at("invariants")) {
        if (i.value("checked", 0) != 0)
            continue;
        const QString name = QString::fromStdString(i.at("name").get<std::string>());
        const auto items = panel->reportTree()->findItems(name, Qt::MatchEndsWith);
        QCOMPARE(items.size(), 1);
        QVERIFY2(items.front()->text(1).startsWith(QLatin1String("not checked")),
                 qPrintable(items.front()->text(1)));
    }

    // The cancelled run left nothing queued: the next run starts and ends green.
    panel->setRequest(QStringLiteral("invoice-email"), 2, {}, 7, QStringLiteral("sandbox-after"));
    panel->startRun();
    QVERIFY(finished.wait(60'000));
    QCOMPARE(panel->reportState(), QStringLiteral("ok"));
}

void TestSandboxPanel::runsAreTakenAsTypedAndNoProgressBeforeARun()
{
    SandboxPanel *panel = view<SandboxPanel>();
    m_window->tabs()->setCurrentWidget(panel);
    QCOMPARE(panel->progressBar()->text(), QStringLiteral("no run yet"));
    QLineEdit *edit = panel->runsBox()->findChild<QLineEdit *>();
    QVERIFY(edit);
    edit->selectAll();
    QTest::keyClicks(edit, QStringLiteral("20000"));
    QCOMPARE(panel->runsBox()->value(), 20'000);
    QVERIFY2(panel->runButton()->text().contains(QLatin1String("20000 runs")),
             qPrintable(panel->runButton()->text()));
    QCOMPARE(panel->progressBar()->text(), QStringLiteral("no run yet"));
    // A namespace the review views would not recognise as the sandbox's is refused, with why.
    panel->setRequest(QStringLiteral("all"), 2, {}, 1, QStringLiteral("prod-copy"));
    QVERIFY(!panel->runButton()->isEnabled());
    QVERIFY(panel->runButton()->toolTip().contains(QLatin1String("must start with")));
}

QTEST_MAIN(TestSandboxPanel)
#include "tst_sandboxpanel.moc"
