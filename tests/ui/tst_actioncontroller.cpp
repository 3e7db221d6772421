// SPDX-License-Identifier: Apache-2.0
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "actioncontroller.h"
#include "approvecommand.h"
#include "audittablemodel.h"
#include "auditview.h"
#include "bulkactioncontroller.h"
#include "confirmationsview.h"
#include "consoleactions.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "deadlettertablemodel.h"
#include "dlqview.h"
#include "guardedactiondialog.h"
#include "ledgerconnection.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationtablemodel.h"

using namespace idempo;

/// Guarded actions from the console over a prepared ledger, offscreen: which actions each
/// state and role allows and why the others are disabled; an approval and a DLQ replay through
/// the dialogs, checked in the ledger.
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
    void approveFromThePane();
    void blankReasonNeverExecutes();
    void replayDeadLetters();
    void approvalIsBuiltAsTheCliBuildsIt();
    void actionsApplyTheEngineSettings();
    void nothingToDescribeIsRefused();

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
    m_window = test::openConsole(m_fixture->url());
    QVERIFY(m_window);
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<ConfirmationsView *>(v))
            m_view = view;
    QVERIFY(m_view);
    m_window->tabs()->setCurrentWidget(m_view);
    // The two that wait for a person and the unknown outcome to reconcile.
    QTRY_COMPARE(m_view->model()->rowCount(), test::ConsoleFixture::NeedsPerson + 1);
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
    QTest::newRow("awaiting_approval")
        << int(OperationState::AwaitingApproval) << false << QStringLiteral("RJ");
    QTest::newRow("confirmation_required")
        << int(OperationState::ConfirmationRequired) << false << QStringLiteral("RCJN");
    QTest::newRow("unknown_outcome")
        << int(OperationState::UnknownOutcome) << false << QStringLiteral("N");
    QTest::newRow("dispatching, live lease")
        << int(OperationState::Dispatching) << false << QString();
    QTest::newRow("dispatching, lapsed lease")
        << int(OperationState::Dispatching) << true << QStringLiteral("N");
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
    const std::pair<OperationAction, QChar> actions[] = {
        {OperationAction::Redispatch, QLatin1Char('R')},
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
    for (OperationAction a : {OperationAction::Redispatch, OperationAction::Confirm,
                              OperationAction::Reject, OperationAction::Reconcile}) {
        QVERIFY(!pane->actionButton(a)->isEnabled());
        QVERIFY(pane->actionButton(a)->toolTip().contains(QLatin1String("not known")));
    }
}

void TestActionController::viewerRoleExplainsWhy()
{
    OperationDetailPane *pane = select(QStringLiteral("run-7004:send_invoice"));
    QVERIFY(pane);
    m_window->actions()->setActor({"vic", "viewer"});
    QSignalSpy requested(pane, &OperationDetailPane::actionRequested);
    for (OperationAction a : {OperationAction::Redispatch, OperationAction::Confirm,
                              OperationAction::Reject, OperationAction::Reconcile}) {
        QPushButton *b = pane->actionButton(a);
        QVERIFY(!b->isEnabled());
        QVERIFY2(b->toolTip().contains(QLatin1String("role 'viewer' may not")),
                 qPrintable(b->toolTip()));
        QVERIFY(b->toolTip().contains(QLatin1String("idempo_")));
        QTest::mouseClick(b, Qt::LeftButton);
    }
    QCOMPARE(requested.count(), 0);
    auto *dlq = qobject_cast<DlqView *>(m_window->views().at(5));
    QVERIFY(dlq);
    QVERIFY(!dlq->replayButton()->isEnabled());
    QVERIFY(dlq->replayButton()->toolTip().contains(QLatin1String("may not replay")));
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
    QVERIFY(pane->actionButton(OperationAction::Confirm)
                ->toolTip()
                .contains(QLatin1String("never dispatched")));
    QVERIFY(!pane->actionButton(OperationAction::Reconcile)->isEnabled());
    QSignalSpy requested(pane, &OperationDetailPane::actionRequested);
    pane->actionButton(OperationAction::Reject)->click();
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.at(0).at(0).value<OperationAction>(), OperationAction::Reject);
    QCOMPARE(requested.at(0).at(1).value<Operation>().key, std::string("run-7002:refund"));

    pane = select(QStringLiteral("run-7004:send_invoice"));
    QVERIFY(pane);
    for (OperationAction a : {OperationAction::Redispatch, OperationAction::Confirm,
                              OperationAction::Reject, OperationAction::Reconcile})
        QVERIFY(pane->actionButton(a)->isEnabled());
}

void TestActionController::approveFromThePane()
{
    OperationDetailPane *pane = select(QStringLiteral("run-7002:refund"));
    QVERIFY(pane);
    QTRY_VERIFY(m_window->actions()->actor().has_value());
    QCOMPARE(m_window->actions()->actor()->role, std::string("owner"));
    QPushButton *approve = pane->actionButton(OperationAction::Redispatch);
    QTRY_VERIFY(approve->isEnabled());
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    approve->click();
    QVERIFY(opened.wait());
    GuardedActionDialog *dialog = m_window->actions()->dialog();
    QVERIFY(dialog);
    QVERIFY(dialog->cancelButton()->isDefault());
    QVERIFY(!dialog->okButton()->isEnabled());
    QVERIFY2(dialog->okButton()->text().startsWith(QLatin1String("Approve refund of ")),
             qPrintable(dialog->okButton()->text()));
    QVERIFY(dialog->okButton()->text().contains(QLatin1String("EUR")));
    dialog->reasonEdit()->setPlainText(QStringLiteral("refund agreed with the customer"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    QTest::mouseClick(dialog->okButton(), Qt::LeftButton);
    QTest::mouseDClick(dialog->okButton(), Qt::LeftButton);
    QVERIFY(executed.wait());
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    QVERIFY(executed.at(0).at(1).toString().startsWith(QLatin1String("Applied")));
    QCOMPARE(executed.count(), 1);

    LedgerStore &store = m_fixture->store();
    QCOMPARE(store.find("default", "run-7002:refund")->state, OperationState::Received);
    const auto approvals = store.approvals("default", "run-7002:refund");
    QCOMPARE(approvals.size(), std::size_t{1});
    QCOMPARE(QString::fromStdString(approvals.front().approvalId), dialog->submissionId());
    QCOMPARE(approvals.front().reason, std::string("refund agreed with the customer"));
    const auto audit = store.auditLog(0, 100);
    QCOMPARE(audit.size(), std::size_t{1});
    QCOMPARE(audit.front().entry.approvalId, approvals.front().approvalId);
    QCOMPARE(audit.front().entry.target, std::string("default/run-7002:refund"));

    // The same submission again (a second console, a retry) answers the first decision.
    ApproveCommand::Request again{"default",
                                  "run-7002:refund",
                                  ApprovalDecision::Redispatch,
                                  "refund agreed with the customer",
                                  "",
                                  dialog->submissionId().toStdString()};
    const nlohmann::json replayed =
        ApproveCommand(store, *m_window->actions()->actor(), again).execute().toJson();
    QCOMPARE(replayed.value("status", ""), std::string("replayed"));
    QCOMPARE(store.approvals("default", "run-7002:refund").size(), std::size_t{1});
    QCOMPARE(store.auditLog(0, 100).size(), std::size_t{1});

    // The Audit view lists it, filters it, exports it and verifies the chain.
    auto *auditView = qobject_cast<AuditView *>(m_window->views().at(7));
    QVERIFY(auditView);
    QSignalSpy loaded(auditView, &AuditView::loaded);
    m_window->tabs()->setCurrentWidget(auditView);
    QVERIFY(loaded.wait());
    QCOMPARE(auditView->model()->rowCount(), 1);
    QCOMPARE(auditView->model()->index(0, AuditTableModel::ApprovalId).data().toString(),
             dialog->submissionId());
    QCOMPARE(auditView->model()->index(0, AuditTableModel::Change).data().toString(),
             QStringLiteral("awaiting_approval → received"));
    QCOMPARE(auditView->actionFilter()->findText(QStringLiteral("approve")), 1);
    // Each filter is the ledger's to answer: the rows follow once its page is in.
    auditView->actorFilter()->setText(QStringLiteral("nobody"));
    QTRY_COMPARE(auditView->model()->filter().who, std::string("nobody"));
    QTRY_COMPARE(auditView->model()->rowCount(), 0);
    auditView->actorFilter()->clear();
    auditView->targetFilter()->setText(QStringLiteral("default/run-7002"));
    QTRY_COMPARE(auditView->model()->filter().targetPrefix, std::string("default/run-7002"));
    QTRY_COMPARE(auditView->model()->rowCount(), 1);
    auditView->targetFilter()->setText(QStringLiteral("default/run-7004"));
    QTRY_COMPARE(auditView->model()->filter().targetPrefix, std::string("default/run-7004"));
    QTRY_COMPARE(auditView->model()->rowCount(), 0);
    auditView->targetFilter()->clear();
    QTemporaryDir dir;
    QSignalSpy exportedSpy(auditView, &AuditView::exported);
    auditView->exportTo(dir.filePath(QStringLiteral("audit.json")));
    QVERIFY(exportedSpy.wait());
    QVERIFY(exportedSpy.at(0).at(0).toBool());
    QFile json(dir.filePath(QStringLiteral("audit.json")));
    QVERIFY(json.open(QIODevice::ReadOnly));
    const auto exported = nlohmann::json::parse(json.readAll().toStdString());
    QCOMPARE(exported.size(), std::size_t{1});
    QCOMPARE(exported[0].value("approval_id", ""), approvals.front().approvalId);
    QVERIFY(
        AuditTableModel::csv({}).startsWith(QLatin1String("seq,at,who,role,action,target,reason")));
    QSignalSpy verified(auditView, &AuditView::verified);
    auditView->verifyButton()->click();
    QVERIFY(verified.wait());
    QVERIFY(verified.at(0).at(0).toBool());
    QVERIFY(auditView->verdict().contains(QLatin1String("Chain intact: 1 records")));
}

void TestActionController::blankReasonNeverExecutes()
{
    OperationDetailPane *pane = select(QStringLiteral("run-7004:send_invoice"));
    QVERIFY(pane);
    QPushButton *reject = pane->actionButton(OperationAction::Reject);
    QTRY_VERIFY(reject->isEnabled());
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    reject->click();
    QVERIFY(opened.wait());
    GuardedActionDialog *dialog = m_window->actions()->dialog();
    QSignalSpy submitted(dialog, &GuardedActionDialog::submitted);
    dialog->reasonEdit()->setPlainText(QStringLiteral("  \n "));
    QTest::mouseClick(dialog->okButton(), Qt::LeftButton);
    QCOMPARE(submitted.count(), 0);
    QTest::keyClick(dialog, Qt::Key_Escape);
    QCOMPARE(dialog->result(), int(QDialog::Rejected));
    QCOMPARE(m_fixture->store().find("default", "run-7004:send_invoice")->state,
             OperationState::ConfirmationRequired);
    QVERIFY(m_fixture->store().approvals("default", "run-7004:send_invoice").empty());
    QVERIFY(m_fixture->store().auditLog(0, 100).empty());
}

void TestActionController::replayDeadLetters()
{
    auto *dlq = qobject_cast<DlqView *>(m_window->views().at(5));
    QVERIFY(dlq);
    m_window->tabs()->setCurrentWidget(dlq);
    QTRY_COMPARE(dlq->model()->rowCount(), 1);
    QTRY_VERIFY(dlq->replayButton()->isEnabled());
    m_window->actions()->setReplayRate(1000);
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    dlq->replayButton()->click();
    QVERIFY(opened.wait());
    GuardedActionDialog *dialog = m_window->actions()->dialog();
    QVERIFY(dialog->cancelButton()->isDefault());
    QVERIFY(dialog->countEdit()->isVisibleTo(dialog));
    dialog->reasonEdit()->setPlainText(QStringLiteral("payments API back up"));
    dialog->countEdit()->setText(QStringLiteral("2"));
    QVERIFY(!dialog->okButton()->isEnabled());
    dialog->countEdit()->setText(QStringLiteral("1"));
    QVERIFY(dialog->okButton()->isEnabled());
    QCOMPARE(dialog->okButton()->text(), QStringLiteral("Replay 1 message(s)"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    dialog->okButton()->click();
    QVERIFY(executed.wait(10'000));
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    QVERIFY(executed.at(0).at(1).toString().contains(QLatin1String("1 requeued")));
    QVERIFY(m_fixture->queues().deadLetters("payments", 0, 10).empty());
    const auto audit = m_fixture->store().auditLog(0, 100);
    QCOMPARE(audit.size(), std::size_t{2});
    QCOMPARE(audit.front().entry.action, std::string("dlq_replay"));
}

void TestActionController::approvalIsBuiltAsTheCliBuildsIt()
{
    const Operation op = *m_fixture->store().find("default", "run-7004:send_invoice");
    const GuardedActionBuilder &builder = m_window->actions()->builder();
    // The CLI without --retention: the engine's default settings.
    const GuardedActionBuilder cli{Engine::Settings{}};
    QCOMPARE(builder.approveOptions().extraAttempts, cli.approveOptions().extraAttempts);
    QCOMPARE(builder.approveOptions().retentionMs, cli.approveOptions().retentionMs);
    const ApprovalAction confirm({"olga", "owner"}, builder, OperationAction::Confirm, op);
    QCOMPARE(confirm.request().ns, std::string("default"));
    QCOMPARE(confirm.request().key, std::string("run-7004:send_invoice"));
    QCOMPARE(confirm.request().decision, ApprovalDecision::Confirm);
    QVERIFY(confirm.request().approvalId.starts_with("ap-"));
    QVERIFY(confirm.request().reason.empty());
    const ApprovalAction reject({"olga", "owner"}, builder, OperationAction::Reject, op);
    QCOMPARE(reject.request().decision, ApprovalDecision::Reject);
    QVERIFY(reject.request().approvalId != confirm.request().approvalId);
}

void TestActionController::actionsApplyTheEngineSettings()
{
    Engine::Settings settings;
    settings.maxAttempts = 5;
    settings.retentionMs = 2 * 3600'000;
    m_window->actions()->setEngineSettings(settings);
    QCOMPARE(m_window->actions()->builder().approveOptions().extraAttempts, 5);

    // A re-dispatch from confirmation_required gets the settings' attempts.
    OperationDetailPane *pane = select(QStringLiteral("run-7004:send_invoice"));
    QVERIFY(pane);
    QPushButton *approve = pane->actionButton(OperationAction::Redispatch);
    QTRY_VERIFY(approve->isEnabled());
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    approve->click();
    QVERIFY(opened.wait());
    GuardedActionDialog *dialog = m_window->actions()->dialog();
    dialog->reasonEdit()->setPlainText(QStringLiteral("SMTP provider back"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    dialog->okButton()->click();
    QVERIFY(executed.wait());
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    const Operation again = *m_fixture->store().find("default", "run-7004:send_invoice");
    QCOMPARE(again.state, OperationState::Received);
    QCOMPARE(again.maxAttempts, again.attempt + 5);

    // A bulk reject keeps what it rejected for the settings' retention.
    auto *bulk = m_window->findChild<BulkActionController *>();
    QVERIFY(bulk);
    const Operation refund = *m_fixture->store().find("default", "run-7002:refund");
    QSignalSpy bulkOpened(bulk, &BulkActionController::dialogOpened);
    bulk->start(BulkAction::Reject, {{refund.ns, refund.key, refund.version}});
    QVERIFY(bulkOpened.wait());
    bulk->dialog()->reasonEdit()->setPlainText(QStringLiteral("duplicate refund"));
    bulk->dialog()->countEdit()->setText(QStringLiteral("1"));
    QSignalSpy bulkExecuted(bulk, &BulkActionController::executed);
    bulk->dialog()->okButton()->click();
    QVERIFY(bulkExecuted.wait(10'000));
    QVERIFY2(bulkExecuted.at(0).at(0).toBool(), qPrintable(bulkExecuted.at(0).at(1).toString()));
    const Operation rejected = *m_fixture->store().find("default", "run-7002:refund");
    QCOMPARE(rejected.state, OperationState::FailedTerminal);
    QVERIFY(rejected.retentionExpiresAtMs);
    QCOMPARE(*rejected.retentionExpiresAtMs - rejected.updatedAtMs, settings.retentionMs);
}

void TestActionController::nothingToDescribeIsRefused()
{
    QTRY_VERIFY(m_window->actions()->actor().has_value());
    Operation gone;
    gone.ns = "default";
    gone.key = "run-9999:nothing";
    QSignalSpy refused(m_window->actions(), &ActionController::refused);
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    m_window->actions()->start(OperationAction::Reject, gone);
    QVERIFY(refused.wait());
    QVERIFY2(refused.at(0).at(0).toString().contains(QLatin1String("run-9999:nothing")),
             qPrintable(refused.at(0).at(0).toString()));
    QCOMPARE(opened.count(), 0);
    QVERIFY(!m_window->actions()->dialog());
}

QTEST_MAIN(TestActionController)
#include "tst_actioncontroller.moc"
