// SPDX-License-Identifier: Apache-2.0
#include <QCheckBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "actioncontroller.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "foureyesmodel.h"
#include "foureyesview.h"
#include "guardedactiondialog.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"

using namespace idempo;

/// The four-eyes worklist, offscreen, on the prepared ledger with a first approval by carol of
/// the 1,250.00 EUR refund above a 1,000 threshold: who is at the console is always in sight,
/// the list holds what waits for them (not their own), and the second approval is given there.
class TestFourEyes final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void listsWhoApprovedFirstForTheSecondApprover();
    void ownFirstApprovalIsNotTheirsToSecond();
    void secondApprovalEmptiesTheWorklist();

private:
    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
    FourEyesView *m_view = nullptr;
};

void TestFourEyes::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    QCOMPARE(m_fixture->approveRefundOnce(), std::string("pending"));
    m_window = test::openConsole(m_fixture->url());
    QVERIFY(m_window);
    m_view = qobject_cast<FourEyesView *>(m_window->views().last());
    QVERIFY(m_view);
    QTRY_VERIFY(m_window->actions()->actor().has_value());
    m_window->actions()->setActor({"alice", "approver"});
    m_window->tabs()->setCurrentWidget(m_view);
}

void TestFourEyes::cleanup()
{
    m_window.reset();
    m_fixture.reset();
}

void TestFourEyes::listsWhoApprovedFirstForTheSecondApprover()
{
    FourEyesModel *model = m_view->model();
    QTRY_COMPARE(model->rowCount(), 1);
    QCOMPARE(model->index(0, FourEyesModel::Key).data().toString(),
             QStringLiteral("run-7002:refund"));
    QCOMPARE(model->index(0, FourEyesModel::FirstApprover).data().toString(),
             QStringLiteral("carol (approver)"));
    QCOMPARE(model->index(0, FourEyesModel::Reason).data().toString(),
             QStringLiteral("customer called, refund agreed"));
    QVERIFY(model->index(0, FourEyesModel::Value)
                .data()
                .toString()
                .startsWith(QLatin1String("1,250.00")));
    QVERIFY(!model->index(0, FourEyesModel::RequestedBy).data().toString().isEmpty());
    QTRY_COMPARE(m_window->tabs()->tabText(m_window->tabs()->indexOf(m_view)),
                 QStringLiteral("Four &eyes (1)"));
    QStringList texts;
    for (const QLabel *label : m_view->findChildren<QLabel *>())
        texts << label->text();
    QVERIFY2(texts.join(QLatin1Char('\n'))
                 .contains(QLatin1String("1 first approval waits for your second approval.")),
             qPrintable(texts.join(QLatin1Char('\n'))));
    QVERIFY2(m_window->statusText().contains(QLatin1String("alice (approver)")),
             qPrintable(m_window->statusText()));
    QVERIFY2(m_window->windowTitle().contains(QLatin1String("alice (approver)")),
             qPrintable(m_window->windowTitle()));
}

void TestFourEyes::ownFirstApprovalIsNotTheirsToSecond()
{
    QTRY_COMPARE(m_view->model()->rowCount(), 1);
    m_window->actions()->setActor({"carol", "approver"});
    QCOMPARE(m_view->model()->rowCount(), 0);
    QCOMPARE(m_view->model()->waitingForMe(), 0);
    QCOMPARE(m_view->model()->mineWaiting(), 1);
    QTRY_COMPARE(m_window->tabs()->tabText(m_window->tabs()->indexOf(m_view)),
                 QStringLiteral("Four &eyes"));
    m_view->includeMine()->setChecked(true);
    QCOMPARE(m_view->model()->rowCount(), 1);
    QVERIFY(m_view->model()->index(0, 0).data(FourEyesModel::MineRole).toBool());
    QVERIFY(m_view->model()
                ->index(0, FourEyesModel::FirstApprover)
                .data()
                .toString()
                .endsWith(QLatin1String("you")));
}

void TestFourEyes::secondApprovalEmptiesTheWorklist()
{
    QTRY_COMPARE(m_view->model()->rowCount(), 1);
    QSignalSpy history(m_view->detail(), &OperationDetailPane::historyLoaded);
    m_view->table()->setCurrentIndex(m_view->model()->index(0, 0));
    QVERIFY(history.wait());
    OperationDetailPane *pane = m_view->detail();
    QVERIFY2(pane->approvalsText().contains(QLatin1String("carol")),
             qPrintable(pane->approvalsText()));
    QPushButton *button = pane->actionButton(OperationAction::Redispatch);
    QTRY_VERIFY2(button->isEnabled(), qPrintable(button->toolTip()));
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    button->click();
    QVERIFY(opened.wait());
    GuardedActionDialog *dialog = m_window->actions()->dialog();
    QVERIFY(dialog);
    dialog->reasonEdit()->setPlainText(QStringLiteral("checked the order, agree"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    dialog->okButton()->click();
    QVERIFY(executed.wait());
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    QCOMPARE(m_fixture->store().find("default", "run-7002:refund")->state,
             OperationState::Received);
    QTRY_COMPARE(m_view->model()->rowCount(), 0);
    QVERIFY(m_fixture->store().pendingApprovals(10).empty());
}

QTEST_MAIN(TestFourEyes)
#include "tst_foureyes.moc"
