// SPDX-License-Identifier: Apache-2.0
#include "confirmationsview.h"
#include "consolefixture.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"

#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

using namespace idempo;

/// Guarded actions from the console over a prepared ledger, offscreen: which actions each
/// state and role allows, and why the others are disabled.
class TestActionController final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void stateRules_data();
    void stateRules();
    void unknownRoleDisablesEverything();
    void viewerRoleExplainsWhy();
    void buttonsFollowTheState();

private:
    /// Selects the operation `key` in the Confirmations view and waits for its history.
    OperationDetailPane *select(const QString &key);

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
    ConfirmationsView *m_view = nullptr;
};

void TestActionController::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    m_window = std::make_unique<MainWindow>();
    m_window->setInteractive(false);
    QSignalSpy opened(m_window.get(), &MainWindow::ledgerOpened);
    m_window->show();
    m_window->openLedger(m_fixture->url());
    QVERIFY(opened.wait());
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<ConfirmationsView *>(v))
            m_view = view;
    QVERIFY(m_view);
    m_window->tabs()->setCurrentWidget(m_view);
    QTRY_COMPARE(m_view->model()->rowCount(), test::ConsoleFixture::NeedsPerson);
}

void TestActionController::cleanup()
{
    m_window.reset();
    m_fixture.reset();
    m_view = nullptr;
}

OperationDetailPane *TestActionController::select(const QString &key)
{
    OperationTableModel *model = m_view->model();
    for (int r = 0; r < model->rowCount(); ++r)
        if (model->index(r, OperationTableModel::Key).data().toString() == key) {
            QSignalSpy history(m_view->detail(), &OperationDetailPane::historyLoaded);
            m_view->table()->setCurrentIndex(model->index(r, 0));
            if (!history.wait())
                return nullptr;
            return m_view->detail();
        }
    return nullptr;
}

void TestActionController::stateRules_data()
{
    QTest::addColumn<int>("state");
    QTest::addColumn<bool>("lapsed");
    QTest::addColumn<QString>("allowed"); // R = redispatch, C = confirm, J = reject, N = reconcile
    QTest::newRow("awaiting_approval") << int(OperationState::AwaitingApproval) << false << QStringLiteral("RJ");
    QTest::newRow("confirmation_required") << int(OperationState::ConfirmationRequired) << false << QStringLiteral("RCJN");
    QTest::newRow("unknown_outcome") << int(OperationState::UnknownOutcome) << false << QStringLiteral("N");
    QTest::newRow("dispatching, live lease") << int(OperationState::Dispatching) << false << QString();
    QTest::newRow("dispatching, lapsed lease") << int(OperationState::Dispatching) << true << QStringLiteral("N");
    QTest::newRow("succeeded") << int(OperationState::Succeeded) << false << QString();
    QTest::newRow("failed_terminal") << int(OperationState::FailedTerminal) << false << QString();
    QTest::newRow("received") << int(OperationState::Received) << false << QString();
}

void TestActionController::stateRules()
{
    QFETCH(int, state);
    QFETCH(bool, lapsed);
    QFETCH(QString, allowed);
    Operation op;
    op.state = static_cast<OperationState>(state);
    const std::int64_t now = 1'000'000;
    if (op.state == OperationState::Dispatching)
        op.leaseExpiresAtMs = lapsed ? now - 1 : now + 60'000;
    const std::pair<OperationAction, QChar> actions[] = {{OperationAction::Redispatch, QLatin1Char('R')},
                                                         {OperationAction::Confirm, QLatin1Char('C')},
                                                         {OperationAction::Reject, QLatin1Char('J')},
                                                         {OperationAction::Reconcile, QLatin1Char('N')}};
    for (const auto &[action, letter] : actions) {
        const QString why = OperationDetailPane::stateRefusal(action, op, now);
        QCOMPARE(why.isEmpty(), allowed.contains(letter));
    }
}

void TestActionController::unknownRoleDisablesEverything()
{
    OperationDetailPane *pane = select(QStringLiteral("run-7004:send_invoice"));
    QVERIFY(pane);
    pane->setRoleCheck({});
    for (OperationAction a : {OperationAction::Redispatch, OperationAction::Confirm, OperationAction::Reject,
                              OperationAction::Reconcile}) {
        QVERIFY(!pane->actionButton(a)->isEnabled());
        QVERIFY(pane->actionButton(a)->toolTip().contains(QLatin1String("not known")));
    }
}

void TestActionController::viewerRoleExplainsWhy()
{
    OperationDetailPane *pane = select(QStringLiteral("run-7004:send_invoice"));
    QVERIFY(pane);
    pane->setRoleCheck([](OperationAction a) {
        return a == OperationAction::Reconcile ? QStringLiteral("role 'viewer' may not reconcile operations")
                                               : QStringLiteral("role 'viewer' may not approve or reject operations");
    });
    QSignalSpy requested(pane, &OperationDetailPane::actionRequested);
    for (OperationAction a : {OperationAction::Redispatch, OperationAction::Confirm, OperationAction::Reject,
                              OperationAction::Reconcile}) {
        QPushButton *b = pane->actionButton(a);
        QVERIFY(!b->isEnabled());
        QVERIFY(b->toolTip().startsWith(QLatin1String("role 'viewer' may not")));
        QTest::mouseClick(b, Qt::LeftButton);
    }
    QCOMPARE(requested.count(), 0);
}

void TestActionController::buttonsFollowTheState()
{
    OperationDetailPane *pane = select(QStringLiteral("run-7002:refund"));
    QVERIFY(pane);
    pane->setRoleCheck([](OperationAction) { return QString(); });
    QCOMPARE(pane->operation()->state, OperationState::AwaitingApproval);
    QVERIFY(pane->actionButton(OperationAction::Redispatch)->isEnabled());
    QVERIFY(pane->actionButton(OperationAction::Reject)->isEnabled());
    QVERIFY(!pane->actionButton(OperationAction::Confirm)->isEnabled());
    QVERIFY(pane->actionButton(OperationAction::Confirm)->toolTip().contains(QLatin1String("never dispatched")));
    QVERIFY(!pane->actionButton(OperationAction::Reconcile)->isEnabled());
    QSignalSpy requested(pane, &OperationDetailPane::actionRequested);
    pane->actionButton(OperationAction::Reject)->click();
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.at(0).at(0).value<OperationAction>(), OperationAction::Reject);
    QCOMPARE(requested.at(0).at(1).value<Operation>().key, std::string("run-7002:refund"));

    pane = select(QStringLiteral("run-7004:send_invoice"));
    QVERIFY(pane);
    for (OperationAction a : {OperationAction::Redispatch, OperationAction::Confirm, OperationAction::Reject,
                              OperationAction::Reconcile})
        QVERIFY(pane->actionButton(a)->isEnabled());
}

QTEST_MAIN(TestActionController)
#include "tst_actioncontroller.moc"
