// SPDX-License-Identifier: Apache-2.0
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "actioncontroller.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "guardedactiondialog.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "notifier.h"
#include "overviewmodel.h"
#include "overviewview.h"
#include "runbudgetpanel.h"
#include "runsview.h"
#include "runtablemodel.h"

using namespace idempo;

/// A halted run in the console: the Runs tab names it, its budget panel shows why in red, and
/// Resume goes through the guarded-action dialog into the ledger; a new halt is announced.
class TestRunResume final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void haltedRunShowsWhyAndResumes();
    void viewerMayNotResume();
    void aNewHaltIsAnnouncedOnce();

private:
    /// Selects the first run (the halted one) and waits for its timeline.
    void selectFirst();

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
    RunsView *m_view = nullptr;
};

void TestRunResume::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    m_window = test::openConsole(m_fixture->url());
    QVERIFY(m_window);
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<RunsView *>(v))
            m_view = view;
    QVERIFY(m_view);
    m_window->tabs()->setCurrentWidget(m_view);
    QTRY_VERIFY(m_view->model()->rowCount() > 0);
}

void TestRunResume::cleanup()
{
    m_window.reset();
    m_fixture.reset();
    m_view = nullptr;
}

void TestRunResume::selectFirst()
{
    QSignalSpy loaded(m_view, &RunsView::timelineLoaded);
    m_view->table()->setCurrentIndex(m_view->model()->index(0, 0));
    QVERIFY(loaded.wait());
}

void TestRunResume::haltedRunShowsWhyAndResumes()
{
    QTRY_COMPARE(m_window->tabs()->tabText(4), QStringLiteral("&Runs (1 halted)"));
    selectFirst();
    RunBudgetPanel *panel = m_view->budgetPanel();
    QVERIFY2(panel->stateLabel()->text().contains(QLatin1String("Halted: 3 failed dispatches")),
             qPrintable(panel->stateLabel()->text()));
    QVERIFY(panel->barTexts().contains(QStringLiteral("3 of 3 failed dispatches")));
    QTRY_VERIFY(panel->resumeButton()->isEnabled());

    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    panel->resumeButton()->click();
    QVERIFY(opened.wait());
    GuardedActionDialog *dialog = m_window->actions()->dialog();
    QVERIFY(dialog);
    QVERIFY(dialog->subjectText().contains(QLatin1String("run-7004")));
    auto *addFailed = dialog->findChild<QSpinBox *>(QStringLiteral("addFailedDispatches"));
    QVERIFY(addFailed);
    QCOMPARE(addFailed->value(), 3);           // a fresh allowance, prefilled
    QVERIFY(!dialog->okButton()->isEnabled()); // no reason yet

    // Nothing added: the command refuses, names why, and the dialog stays for a correction.
    addFailed->setValue(0);
    dialog->reasonEdit()->setPlainText(QStringLiteral("SMTP provider back (INC-311)"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    QTest::mouseClick(dialog->okButton(), Qt::LeftButton);
    QVERIFY(executed.wait());
    QVERIFY(!executed.at(0).at(0).toBool());
    QVERIFY2(executed.at(0).at(1).toString().contains(QLatin1String("failed")),
             qPrintable(executed.at(0).at(1).toString()));
    QCOMPARE(m_fixture->store().findRun("default", "run-7004")->state, RunState::Halted);

    addFailed->setValue(3);
    QTest::mouseClick(dialog->okButton(), Qt::LeftButton);
    QVERIFY(executed.wait());
    QVERIFY2(executed.at(1).at(0).toBool(), qPrintable(executed.at(1).at(1).toString()));
    const RunRecord run = *m_fixture->store().findRun("default", "run-7004");
    QCOMPARE(run.state, RunState::Active);
    QCOMPARE(run.budgets.failedDispatches, std::optional<std::int64_t>(6));
    const std::vector<RunActionRecord> requests =
        m_fixture->store().runRequests("default", "run-7004");
    QCOMPARE(requests.size(), std::size_t(1));
    QCOMPARE(requests[0].reason, std::string("SMTP provider back (INC-311)"));

    QTRY_VERIFY(!panel->stateLabel()->text().contains(QLatin1String("Halted")));
    QVERIFY(!panel->resumeButton()->isEnabled());
    QTRY_COMPARE(m_window->tabs()->tabText(4), QStringLiteral("&Runs"));
}

void TestRunResume::viewerMayNotResume()
{
    selectFirst();
    m_window->actions()->setActor({"vic", "viewer"});
    QPushButton *resume = m_view->budgetPanel()->resumeButton();
    QVERIFY(!resume->isEnabled());
    QVERIFY2(resume->toolTip().contains(QLatin1String("role 'viewer' may not")),
             qPrintable(resume->toolTip()));
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    QTest::mouseClick(resume, Qt::LeftButton);
    QVERIFY(!opened.wait(300));
}

void TestRunResume::aNewHaltIsAnnouncedOnce()
{
    auto *notifier = m_window->findChild<Notifier *>();
    QVERIFY(notifier);
    notifier->setEnabled(Notifier::Kind::HaltedRun, true);
    QSignalSpy told(notifier, &Notifier::notified);
    OverviewModel *overview = nullptr;
    for (LedgerView *v : m_window->views())
        if (auto *o = qobject_cast<OverviewView *>(v))
            overview = o->model();
    QVERIFY(overview);
    QTRY_VERIFY(overview->hasSnapshot());
    QCOMPARE(told.count(), 0); // run-7004 was halted before the ledger opened

    // Three failed dispatches halt a new run.
    for (int i = 0; i < 3; ++i) {
        ClaimInput in;
        in.key = "run-7020:step-" + std::to_string(i);
        in.runId = "run-7020";
        in.stepId = "step-" + std::to_string(i);
        in.payloadJson = "{}";
        in.owner = "worker-a";
        const ClaimResult c = m_fixture->engine().claim(in);
        QCOMPARE(c.outcome, ClaimOutcome::Claimed);
        m_fixture->engine().fail("default", c.operation.key, c.operation.fencingToken,
                                 ErrorClass::Transient, "503");
    }
    QCOMPARE(m_fixture->store().findRun("default", "run-7020")->state, RunState::Halted);
    m_window->connection()->pollNow();
    QTRY_VERIFY(std::any_of(told.begin(), told.end(), [](const QList<QVariant> &args) {
        return args.at(0).value<Notifier::Kind>() == Notifier::Kind::HaltedRun &&
               args.at(2).toString().contains(QLatin1String("run-7020"));
    }));
    const auto halts = [&told] {
        return std::count_if(told.begin(), told.end(), [](const QList<QVariant> &args) {
            return args.at(0).value<Notifier::Kind>() == Notifier::Kind::HaltedRun;
        });
    };
    QCOMPARE(halts(), 1);
    // The next snapshot still holds the halt: it is not told again.
    QSignalSpy updated(overview, &OverviewModel::updated);
    overview->refresh();
    QVERIFY(updated.wait());
    QCOMPARE(overview->snapshot().haltedRuns.size(), std::size_t(2));
    QCOMPARE(halts(), 1);
}

QTEST_MAIN(TestRunResume)
#include "tst_runresume.moc"
