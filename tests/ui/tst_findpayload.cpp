// SPDX-License-Identifier: Apache-2.0
// The Find tab's customer and payload-field search, offscreen, on the prepared ledger: operations
// without a run id found by a payload field and by customer, a bad pointer named beside the field
// with no query run, and the details drawer of the selected operation: its payload, history,
// approvals and the audit records whose target it is, its actions through the one
// ActionController, and nothing of it left after a ledger switch.
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>
#include <QTimer>

#include "actioncontroller.h"
#include "approvecommand.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "eventtablemodel.h"
#include "filterbar.h"
#include "guardedactiondialog.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationsview.h"
#include "operationtablemodel.h"

using namespace idempo;

namespace {

/// The visible labels of `w` holding `text`.
int shownLabels(const QWidget *w, const QString &text)
{
    int n = 0;
    for (const QLabel *label : w->findChildren<QLabel *>())
        n += label->isVisible() && label->text().contains(text) ? 1 : 0;
    return n;
}

/// The keys listed by `model`, in its order.
QStringList keys(const OperationTableModel *model)
{
    QStringList out;
    for (int r = 0; r < model->rowCount(); ++r)
        out << QString::fromStdString(model->operationAt(model->index(r, 0)).key);
    return out;
}

} // namespace

class TestFindPayload final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();

    void findsAnOperationWithoutRunByPayloadField();
    void findsByCustomer();
    void badPointerIsNamedAndRunsNoQuery();
    void drawerShowsPayloadHistoryApprovalsAndAudit();
    void drawerActsThroughTheActionController();
    void ledgerSwitchEmptiesTheDrawer();

private:
    /// Selects row `row` of the Find list and waits for the drawer's worker read.
    OperationDetailPane *select(int row);

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
    OperationsView *m_view = nullptr;
};

void TestFindPayload::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    // Two refunds without a run id, awaiting approval, for one customer; the second is rejected
    // (one approval, one audit record) before the console opens.
    for (const auto &[key, order] :
         {std::pair{"loose-refund-1", "o-4711"}, std::pair{"loose-refund-2", "o-4712"}}) {
        ClaimInput in;
        in.key = key;
        in.payloadJson = std::string("{\"customer\":\"cust-9\",\"refund\":{\"order_id\":\"") +
                         order + "\",\"amount\":900}}";
        in.owner = "worker-n";
        in.requiresApproval = true;
        m_fixture->engine().claim(in);
    }
    ApproveCommand::Request reject;
    reject.key = "loose-refund-2";
    reject.decision = ApprovalDecision::Reject;
    reject.reason = "duplicate of o-4711";
    ApproveCommand command(m_fixture->store(), ActorIdentity{"carol", "approver"}, reject);
    QVERIFY(command.validate().empty());
    command.execute();
    m_window = test::openConsole(m_fixture->url(), QSize(1024, 700));
    QVERIFY(m_window);
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<OperationsView *>(v))
            m_view = view;
    QVERIFY(m_view);
    m_window->tabs()->setCurrentWidget(m_view);
    // Every operation of the fixture is listed before any search narrows the list.
    QTRY_VERIFY(m_view->model()->rowCount() > 40);
}

void TestFindPayload::cleanup()
{
    m_window.reset();
    m_fixture.reset();
    m_view = nullptr;
}

OperationDetailPane *TestFindPayload::select(int row)
{
    QSignalSpy loaded(m_view->detail(), &OperationDetailPane::historyLoaded);
    m_view->table()->setCurrentIndex(m_view->model()->index(row, 0));
    return loaded.wait() ? m_view->detail() : nullptr;
}

void TestFindPayload::findsAnOperationWithoutRunByPayloadField()
{
    m_view->filters()->setPayloadField(QStringLiteral("/refund/order_id = o-4711"));
    QTRY_COMPARE(keys(m_view->model()), QStringList{QStringLiteral("loose-refund-1")});
    const Operation op = m_view->model()->operationAt(m_view->model()->index(0, 0));
    QCOMPARE(op.runId, std::string());
    QCOMPARE(op.state, OperationState::AwaitingApproval);
    QCOMPARE(m_view->model()->query().payload,
             (std::vector<PayloadMatch>{{"/refund/order_id", "o-4711"}}));

    // A number matches its text; two terms must both hold.
    m_view->filters()->setPayloadField(QStringLiteral("/refund/amount=900"));
    QTRY_COMPARE(m_view->model()->rowCount(), 2);
    m_view->filters()->setPayloadField(QStringLiteral("/refund/amount=901"));
    QTRY_COMPARE(m_view->model()->rowCount(), 0);
    m_view->filters()->setPayloadField({});
    QTRY_VERIFY(m_view->model()->rowCount() > 40);
}

void TestFindPayload::findsByCustomer()
{
    m_view->filters()->setCustomer(QStringLiteral("cust-9"));
    QTRY_COMPARE(keys(m_view->model()),
                 (QStringList{QStringLiteral("loose-refund-1"), QStringLiteral("loose-refund-2")}));
    QCOMPARE(m_view->model()->query().customer, std::string("cust-9"));
    QVERIFY(m_view->filters()->isActive());
    // With the namespace filter of the same bar: the refunds live in "default" only.
    m_view->filters()->setNamespace(QStringLiteral("sandbox-a"));
    QTRY_COMPARE(m_view->model()->rowCount(), 0);
    m_view->filters()->setNamespace(QStringLiteral("default"));
    QTRY_COMPARE(m_view->model()->rowCount(), 2);
    m_view->filters()->setPayloadField(QStringLiteral("/refund/order_id = o-4712"));
    QTRY_COMPARE(keys(m_view->model()), QStringList{QStringLiteral("loose-refund-2")});
    m_view->filters()->setCustomer(QStringLiteral("cust-10"));
    QTRY_COMPARE(m_view->model()->rowCount(), 0);
}

void TestFindPayload::badPointerIsNamedAndRunsNoQuery()
{
    FilterBar *bar = m_view->filters();
    bar->setPayloadField(QStringLiteral("/refund/order_id = o-4711"));
    QTRY_COMPARE(keys(m_view->model()), QStringList{QStringLiteral("loose-refund-1")});
    QTRY_VERIFY(!m_view->model()->isLoading());
    const OperationQuery applied = m_view->model()->query();

    const QString named = QStringLiteral("payload field 'refund.order_id' is not a JSON Pointer: "
                                         "it must start with '/'");
    bar->setPayloadField(QStringLiteral("refund.order_id = o-4712"));
    QCOMPARE(bar->payloadProblem(), named);
    QCOMPARE(shownLabels(bar, named), 1);
    // No query starts: the debounce is idle, the model asks nothing and keeps its rows.
    for (const QTimer *t : bar->findChildren<QTimer *>())
        QVERIFY(!t->isActive());
    QVERIFY(!m_view->model()->isLoading());
    QCOMPARE(m_view->model()->query(), applied);
    QCOMPARE(bar->query().payload, applied.payload);
    QCOMPARE(keys(m_view->model()), QStringList{QStringLiteral("loose-refund-1")});

    bar->setPayloadField(QStringLiteral("/a~2b = x"));
    QVERIFY2(bar->payloadProblem().contains(QLatin1String("'/a~2b'")) &&
                 bar->payloadProblem().contains(QLatin1String("'~' at byte 2")),
             qPrintable(bar->payloadProblem()));
    bar->setPayloadField(QStringLiteral("/refund/order_id"));
    QVERIFY2(bar->payloadProblem().contains(QLatin1String("has no '='")),
             qPrintable(bar->payloadProblem()));
    QCOMPARE(m_view->model()->query(), applied);

    // A good term again: the error goes and the search runs.
    bar->setPayloadField(QStringLiteral("/refund/order_id = o-4712"));
    QVERIFY(bar->payloadProblem().isEmpty());
    QCOMPARE(shownLabels(bar, QStringLiteral("JSON Pointer")), 0);
    QTRY_COMPARE(keys(m_view->model()), QStringList{QStringLiteral("loose-refund-2")});
}

void TestFindPayload::drawerShowsPayloadHistoryApprovalsAndAudit()
{
    m_view->filters()->setCustomer(QStringLiteral("cust-9"));
    QTRY_COMPARE(m_view->model()->rowCount(), 2);
    OperationDetailPane *drawer = select(1);
    QVERIFY(drawer);
    QCOMPARE(drawer->operation()->key, std::string("loose-refund-2"));
    QVERIFY2(drawer->factsText().contains(QLatin1String("customer <b>cust-9</b>")),
             qPrintable(drawer->factsText()));
    QVERIFY(drawer->factsText().contains(QLatin1String("run (none)")));
    const auto *payload = drawer->findChild<QPlainTextEdit *>(QStringLiteral("payload"));
    QVERIFY(payload);
    QVERIFY2(payload->toPlainText().contains(QLatin1String("\"order_id\": \"o-4712\"")),
             qPrintable(payload->toPlainText()));
    // Created awaiting approval, then rejected.
    const EventTableModel *history = drawer->history();
    QCOMPARE(history->rowCount(), 2);
    QCOMPARE(history->events().front().toState, OperationState::AwaitingApproval);
    QCOMPARE(history->events().back().toState, OperationState::FailedTerminal);
    QCOMPARE(drawer->auditText().count(QLatin1Char('\n')), 0);
    QVERIFY2(drawer->auditText().contains(
                 QStringLiteral("carol (approver) reject: awaiting_approval → failed_terminal: "
                                "“duplicate of o-4711”")),
             qPrintable(drawer->auditText()));
    QVERIFY2(drawer->approvalListText().contains(QLatin1String("carol (approver) reject")),
             qPrintable(drawer->approvalListText()));
    // A terminal operation offers no action, and the button says why.
    QPushButton *approve = drawer->actionButton(OperationAction::Redispatch);
    QVERIFY(!approve->isEnabled());
    QVERIFY2(approve->toolTip().contains(QLatin1String("failed_terminal")),
             qPrintable(approve->toolTip()));

    // The other refund: one event, no approval, no audit record, and it may be approved.
    QVERIFY(select(0));
    QCOMPARE(drawer->operation()->key, std::string("loose-refund-1"));
    QCOMPARE(history->rowCount(), 1);
    QCOMPARE(drawer->auditText(), QStringLiteral("No audit record names this operation."));
    QCOMPARE(drawer->approvalListText(),
             QStringLiteral("No approval recorded for this operation."));
    QTRY_VERIFY2(approve->isEnabled(), qPrintable(approve->toolTip()));
}

void TestFindPayload::drawerActsThroughTheActionController()
{
    m_view->filters()->setPayloadField(QStringLiteral("/refund/order_id=o-4711"));
    QTRY_COMPARE(m_view->model()->rowCount(), 1);
    OperationDetailPane *drawer = select(0);
    QVERIFY(drawer);
    QPushButton *approve = drawer->actionButton(OperationAction::Redispatch);
    QTRY_VERIFY2(approve->isEnabled(), qPrintable(approve->toolTip()));
    QSignalSpy opened(m_window->actions(), &ActionController::dialogOpened);
    approve->click();
    QVERIFY(opened.wait());
    GuardedActionDialog *dialog = m_window->actions()->dialog();
    QVERIFY2(dialog->subjectText().contains(QLatin1String("loose-refund-1")),
             qPrintable(dialog->subjectText()));
    dialog->reasonEdit()->setPlainText(QStringLiteral("order o-4711 refunded once"));
    QSignalSpy executed(m_window->actions(), &ActionController::executed);
    QSignalSpy reloaded(drawer, &OperationDetailPane::historyLoaded);
    QTest::mouseClick(dialog->okButton(), Qt::LeftButton);
    QVERIFY(executed.wait());
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    // The drawer reads the operation again: its new state, event and audit record.
    QTRY_COMPARE(drawer->operation()->state, OperationState::Received);
    QTRY_COMPARE(drawer->history()->rowCount(), 2);
    QTRY_VERIFY2(drawer->auditText().contains(QStringLiteral(
                     "approve: awaiting_approval → received: “order o-4711 refunded once”")),
                 qPrintable(drawer->auditText()));
    QCOMPARE(m_fixture->store().find("default", "loose-refund-1")->state, OperationState::Received);
}

void TestFindPayload::ledgerSwitchEmptiesTheDrawer()
{
    m_view->filters()->setCustomer(QStringLiteral("cust-9"));
    QTRY_COMPARE(m_view->model()->rowCount(), 2);
    OperationDetailPane *drawer = select(1);
    QVERIFY(drawer);
    QVERIFY(!drawer->auditText().isEmpty());

    test::ConsoleFixture other;
    other.populate();
    QSignalSpy opened(m_window.get(), &MainWindow::ledgerOpened);
    m_window->openLedger(other.url());
    QVERIFY(drawer->operation() == std::nullopt);
    QVERIFY(opened.wait());
    QVERIFY(drawer->operation() == std::nullopt);
    QCOMPARE(drawer->auditText(), QString());
    QCOMPARE(drawer->approvalListText(), QString());
    QCOMPARE(drawer->history()->rowCount(), 0);
    QVERIFY(!drawer->actionButton(OperationAction::Reject)->isEnabled());
    // The other ledger has no customer cust-9: the search finds nothing there.
    QTRY_VERIFY(!m_view->model()->isLoading());
    QCOMPARE(m_view->model()->rowCount(), 0);
}

QTEST_MAIN(TestFindPayload)
#include "tst_findpayload.moc"
