// SPDX-License-Identifier: Apache-2.0
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "actioncontroller.h"
#include "approvecommand.h"
#include "confirmationsview.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "guardedactiondialog.h"
#include "guardsettingcommand.h"
#include "leasesview.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"

using namespace idempo;

/// Review work on the prepared ledger, offscreen: an unknown outcome and a lapsed protected lease
/// are listed and can be reconciled; after a decision the pane stays on the decided operation;
/// a first four-eyes approval is visible to the second approver.
class TestReviewFlow final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void unknownOutcomeIsListedAndReconciled();
    void lapsedProtectedLeaseIsReconcilableFromLeases();
    void selectionStaysOnTheDecidedOperation();
    void firstApprovalIsVisibleToTheSecond();

private:
    OperationDetailPane *select(const QString &key);
    GuardedActionDialog *openAction(QPushButton *button);

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
    ConfirmationsView *m_view = nullptr;
};

void TestReviewFlow::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    m_window = test::openConsole(m_fixture->url());
    QVERIFY(m_window);
    m_view = qobject_cast<ConfirmationsView *>(m_window->views().at(2));
    QVERIFY(m_view);
    m_window->tabs()->setCurrentWidget(m_view);
    // The two that wait for a person and the unknown outcome.
    QTRY_COMPARE(m_view->model()->rowCount(), test::ConsoleFixture::NeedsPerson + 1);
    QTRY_VERIFY(m_window->actions()->actor().has_value());
}

void TestReviewFlow::cleanup()
{
    m_window.reset();
    m_fixture.reset();
}

OperationDetailPane *TestReviewFlow::select(const QString &key)
{
    OperationTableModel *model = m_view->model();
    for (int r = 0; r < model->rowCount(); ++r)
        if (model->index(r, OperationTableModel::Key).data().toString() == key) {
            QSignalSpy history(m_view->detail(), &OperationDetailPane::historyLoaded);
            m_view->table()->setCurrentIndex(model->index(r, 0));
            return history.wait() ? m_view->detail() : nullptr;
        }
    return nullptr;
}

GuardedActionDialog *TestReviewFlow::openAction(QPushButton *button)
{
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    button->click();
    return opened.wait() ? m_window->actions()->dialog() : nullptr;
}

void TestReviewFlow::unknownOutcomeIsListedAndReconciled()
{
    OperationDetailPane *pane = select(QStringLiteral("run-7003:book_flight"));
    QVERIFY(pane);
    QCOMPARE(pane->operation()->state, OperationState::UnknownOutcome);
    QPushButton *reconcile = pane->actionButton(OperationAction::Reconcile);
    QTRY_VERIFY2(reconcile->isEnabled(), qPrintable(reconcile->toolTip()));
    QVERIFY(!pane->actionButton(OperationAction::Redispatch)->isEnabled());
    GuardedActionDialog *dialog = openAction(reconcile);
    QVERIFY(dialog);
    QVERIFY2(dialog->subjectText().contains(QLatin1String("run-7003:book_flight")),
             qPrintable(dialog->subjectText()));
    dialog->reasonEdit()->setPlainText(QStringLiteral("asked the airline"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    dialog->okButton()->click();
    QVERIFY(executed.wait());
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    // No provider lookup covers it: a person decides from here.
    QCOMPARE(m_fixture->store().find("default", "run-7003:book_flight")->state,
             OperationState::ConfirmationRequired);
    QCOMPARE(m_fixture->store().auditLog(0, 10).size(), std::size_t{1});
}

void TestReviewFlow::lapsedProtectedLeaseIsReconcilableFromLeases()
{
    auto *leases = qobject_cast<LeasesView *>(m_window->views().at(1));
    QVERIFY(leases);
    m_window->tabs()->setCurrentWidget(leases);
    QTRY_COMPARE(leases->model()->rowCount(), test::ConsoleFixture::Dispatching);
    const auto rowOf = [leases](const QString &key) {
        for (int r = 0; r < leases->model()->rowCount(); ++r)
            if (leases->model()->index(r, OperationTableModel::Key).data().toString() == key)
                return r;
        return -1;
    };
    QPushButton *button = leases->reconcileButton();
    QVERIFY(!button->isEnabled());
    leases->table()->setCurrentIndex(
        leases->model()->index(rowOf(QStringLiteral("run-7006:capture_payment")), 0));
    QVERIFY(!button->isEnabled());
    QVERIFY2(button->toolTip().contains(QLatin1String("live lease")),
             qPrintable(button->toolTip()));
    leases->table()->setCurrentIndex(
        leases->model()->index(rowOf(QStringLiteral("run-7007:charge_card")), 0));
    QVERIFY2(button->isEnabled(), qPrintable(button->toolTip()));
    GuardedActionDialog *dialog = openAction(button);
    QVERIFY(dialog);
    QVERIFY(dialog->subjectText().contains(QLatin1String("run-7007:charge_card")));
    QVERIFY(dialog->okButton()->text().startsWith(QLatin1String("Reconcile")));
}

void TestReviewFlow::selectionStaysOnTheDecidedOperation()
{
    OperationDetailPane *pane = select(QStringLiteral("run-7002:refund"));
    QVERIFY(pane);
    GuardedActionDialog *dialog = openAction(pane->actionButton(OperationAction::Redispatch));
    QVERIFY(dialog);
    QVERIFY(dialog->subjectText().contains(QLatin1String("run-7002:refund")));
    QVERIFY(dialog->subjectText().contains(QLatin1String("namespace default")));
    dialog->reasonEdit()->setPlainText(QStringLiteral("refund agreed"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    dialog->okButton()->click();
    QVERIFY(executed.wait());
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    // The refund leaves the list; the pane stays on it, in its new state, and no other row is
    // selected in its place.
    QTRY_COMPARE(m_view->model()->rowCount(), test::ConsoleFixture::NeedsPerson);
    QTRY_COMPARE(pane->operation()->state, OperationState::Received);
    QCOMPARE(pane->operation()->key, std::string("run-7002:refund"));
    QTRY_VERIFY(!m_view->table()->currentIndex().isValid());
    QVERIFY(m_view->table()->selectionModel()->selectedRows().isEmpty());
}

void TestReviewFlow::firstApprovalIsVisibleToTheSecond()
{
    GuardSettingCommand setting(m_fixture->store(), {"olga", "owner"}, FourEyesSetting, "1000",
                                "four-eyes above 1,000");
    setting.execute();
    m_window->actions()->setActor({"alice", "owner"});
    OperationDetailPane *pane = select(QStringLiteral("run-7002:refund"));
    QVERIFY(pane);
    QVERIFY(pane->approvalsText().isEmpty());
    GuardedActionDialog *dialog = openAction(pane->actionButton(OperationAction::Redispatch));
    QVERIFY(dialog);
    dialog->reasonEdit()->setPlainText(QStringLiteral("first look"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    dialog->okButton()->click();
    QVERIFY(executed.wait());
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    QCOMPARE(m_fixture->store().find("default", "run-7002:refund")->state,
             OperationState::AwaitingApproval);
    dialog->close();
    // The second approver opens it and sees who approved first, and that it waits for them.
    m_window->actions()->setActor({"bob", "owner"});
    QTRY_VERIFY(!pane->approvalsText().isEmpty());
    QCOMPARE(pane->operation()->key, std::string("run-7002:refund"));
    QVERIFY2(pane->approvalsText().contains(QLatin1String("alice")),
             qPrintable(pane->approvalsText()));
    QVERIFY(pane->approvalsText().contains(QLatin1String("second approver")));
    QVERIFY(pane->approvalsText().contains(QLatin1String("first look")));
}

QTEST_MAIN(TestReviewFlow)
#include "tst_reviewflow.moc"
