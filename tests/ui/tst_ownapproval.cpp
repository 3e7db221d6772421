// SPDX-License-Identifier: Apache-2.0
#include <QCheckBox>
#include <QPushButton>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "actioncontroller.h"
#include "confirmationsview.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "foureyesmodel.h"
#include "foureyesview.h"
#include "guardedactiondialog.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationsview.h"
#include "operationtablemodel.h"

using namespace idempo;

/// The person who gave the first of two approvals cannot give the second: on the prepared ledger
/// with carol's first approval of the 1,250.00 EUR refund above a 1,000 threshold, "Approve
/// re-dispatch…" is disabled for carol, saying why, in every pane that shows the refund
/// (Confirmations, Four eyes, Find), and enabled for another approver.
class TestOwnApproval final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void firstApproverSeesWhyAndAnotherMayApprove();

private:
    /// The panes showing the refund, once each list has selected it.
    QList<OperationDetailPane *> panesShowingRefund();

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
};

namespace {

const QString Refund = QStringLiteral("run-7002:refund");

void selectKey(LedgerTableView *table, int keyRole)
{
    QAbstractItemModel *model = table->model();
    QTRY_VERIFY(model->rowCount() > 0);
    for (int row = 0; row < model->rowCount(); ++row)
        if (model->index(row, 0).data(keyRole).toString() == Refund) {
            table->setCurrentIndex(model->index(row, 0));
            return;
        }
    QFAIL("the refund is not listed");
}

} // namespace

void TestOwnApproval::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    QCOMPARE(m_fixture->approveRefundOnce(), std::string("pending"));
    m_window = test::openConsole(m_fixture->url(), QSize(1024, 700));
    QVERIFY(m_window);
    QTRY_VERIFY(m_window->actions()->actor().has_value());
    m_window->actions()->setActor({"carol", "approver"});
}

void TestOwnApproval::cleanup()
{
    m_window.reset();
    m_fixture.reset();
}

QList<OperationDetailPane *> TestOwnApproval::panesShowingRefund()
{
    QList<OperationDetailPane *> panes;
    for (LedgerView *v : m_window->views()) {
        m_window->tabs()->setCurrentWidget(v);
        if (auto *view = qobject_cast<ConfirmationsView *>(v)) {
            selectKey(view->table(), OperationTableModel::KeyRole);
            panes << view->detail();
        } else if (auto *view = qobject_cast<OperationsView *>(v)) {
            selectKey(view->table(), OperationTableModel::KeyRole);
            panes << view->detail();
        } else if (auto *view = qobject_cast<FourEyesView *>(v)) {
            view->includeMine()->setChecked(true);
            selectKey(view->table(), FourEyesModel::KeyRole);
            panes << view->detail();
        }
    }
    return panes;
}

void TestOwnApproval::firstApproverSeesWhyAndAnotherMayApprove()
{
    const QList<OperationDetailPane *> panes = panesShowingRefund();
    QCOMPARE(panes.size(), 3);
    for (OperationDetailPane *pane : panes) {
        QTRY_VERIFY(pane->operation() && pane->operation()->key == Refund.toStdString());
        QPushButton *approve = pane->actionButton(OperationAction::Redispatch);
        QTRY_VERIFY2(!approve->isEnabled(), qPrintable(approve->toolTip()));
        QVERIFY2(approve->toolTip().contains(
                     QLatin1String("approved this proposal first; another person must approve"),
                     Qt::CaseInsensitive),
                 qPrintable(approve->toolTip()));
        // Rejecting is another proposal: carol may still make it.
        QVERIFY(pane->actionButton(OperationAction::Reject)->isEnabled());
    }
    m_window->actions()->setActor({"alice", "approver"});
    for (OperationDetailPane *pane : panes) {
        QPushButton *approve = pane->actionButton(OperationAction::Redispatch);
        QTRY_VERIFY2(approve->isEnabled(), qPrintable(approve->toolTip()));
    }
}

QTEST_MAIN(TestOwnApproval)
#include "tst_ownapproval.moc"
