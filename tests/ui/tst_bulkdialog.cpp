// SPDX-License-Identifier: Apache-2.0
// Bulk actions from the console: rows selected in Confirmations, the guarded dialog asking for the
// set's count typed, the run off the GUI thread with its Stop, and the buttons a viewer sees.
#include <QCheckBox>
#include <QDir>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressDialog>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include "actioncontroller.h"
#include "bulkactionbar.h"
#include "bulkactioncontroller.h"
#include "confirmationsview.h"
#include "consolefixture.h"
#include "guardedactiondialog.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationtablemodel.h"

using namespace idempo;

class TestBulkDialog final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void typedCountStopAndViewer();
};

namespace {

void needingConfirmation(test::ConsoleFixture &f, const std::string &key)
{
    ClaimInput in;
    in.key = key;
    in.runId = key.substr(0, key.find(':'));
    in.stepId = "refund";
    in.payloadJson = R"({"amount":120.00,"currency":"EUR","customer":"C-1"})";
    in.owner = "worker-t";
    in.maxAttempts = 1;
    const ClaimResult r = f.engine().claim(in);
    f.engine().fail("default", key, r.operation.fencingToken, ErrorClass::Transient, "503");
}

} // namespace

void TestBulkDialog::typedCountStopAndViewer()
{
    test::ConsoleFixture fixture;
    for (int i = 0; i < 4; ++i)
        needingConfirmation(fixture, "run-" + std::to_string(i) + ":refund");

    MainWindow window;
    window.setInteractive(false);
    QSignalSpy opened(&window, &MainWindow::ledgerOpened);
    window.resize(1024, 700);
    window.show();
    window.openLedger(fixture.url());
    QVERIFY(opened.wait());
    ConfirmationsView *view = nullptr;
    for (LedgerView *v : window.views())
        if (auto *c = qobject_cast<ConfirmationsView *>(v))
            view = c;
    QVERIFY(view);
    window.tabs()->setCurrentWidget(view);
    QTRY_COMPARE(view->model()->rowCount(), 4);
    BulkActionBar *bar = view->bulkBar();
    QPushButton *approve = bar->button(BulkAction::Approve);
    QTRY_VERIFY(window.actions()->actor().has_value());
    QVERIFY(!approve->isEnabled()); // nothing selected yet, and the tooltip says so
    QVERIFY(approve->toolTip().contains(QStringLiteral("Select operations")));
    view->table()->selectRow(0);
    view->table()->selectionModel()->select(
        view->model()->index(1, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    view->table()->selectionModel()->select(
        view->model()->index(2, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
    QCOMPARE(bar->selectedTargets().size(), std::size_t(3));
    QVERIFY(approve->isEnabled());
    if (const QString dir = qEnvironmentVariable("IDEMPO_SCREENSHOT_DIR"); !dir.isEmpty())
        QVERIFY(window.grab().save(QDir(dir).filePath(QStringLiteral("confirmations-bulk.png"))));

    auto *bulk = window.findChild<BulkActionController *>();
    QVERIFY(bulk);
    bulk->setRate(4); // slow enough to stop after the first operation
    QSignalSpy dialogs(bulk, &BulkActionController::dialogOpened);
    approve->click();
    QVERIFY(dialogs.wait());
    GuardedActionDialog *dialog = bulk->dialog();
    QVERIFY(dialog->windowTitle().contains(QStringLiteral("Bulk approve")));
    auto *table = dialog->findChild<QTableWidget *>();
    QVERIFY(table);
    QCOMPARE(table->rowCount(), 3);
    dialog->reasonEdit()->setPlainText(QStringLiteral("customers confirmed by phone"));
    for (const char *wrong : {"", "2", "4", "three", "0"}) {
        dialog->countEdit()->setText(QString::fromLatin1(wrong));
        QVERIFY2(!dialog->okButton()->isEnabled(), wrong);
    }
    dialog->countEdit()->setText(QStringLiteral("3"));
    QVERIFY(dialog->okButton()->isEnabled());
    QVERIFY(dialog->okButton()->text().contains(QStringLiteral("3 operations")));
    QVERIFY(dialog->width() <= 1024 && dialog->height() <= 700);

    QSignalSpy progress(bulk, &BulkActionController::progress);
    QSignalSpy executed(bulk, &BulkActionController::executed);
    dialog->okButton()->click();
    QVERIFY(progress.wait());
    QVERIFY(bulk->progressDialog());
    auto *stop = bulk->progressDialog()->findChild<QPushButton *>();
    QVERIFY(stop);
    QCOMPARE(stop->text(), QStringLiteral("&Stop"));
    stop->click();
    QVERIFY(executed.wait(10'000));
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    const QString outcome = executed.at(0).at(1).toString();
    QVERIFY2(outcome.contains(QStringLiteral("1 applied")), qPrintable(outcome));
    QVERIFY2(outcome.contains(QStringLiteral("stopped, 2 not touched")), qPrintable(outcome));
    QCOMPARE(dialog->outcomeText(), outcome);
    QCOMPARE(fixture.store().auditLog(0, 100).size(), std::size_t(1));
    int waiting = 0;
    for (int i = 0; i < 4; ++i)
        waiting += fixture.store().find("default", "run-" + std::to_string(i) + ":refund")->state ==
                           OperationState::ConfirmationRequired
                       ? 1
                       : 0;
    QCOMPARE(waiting, 3);
    dialog->close();

    // Everything the filter matches: the three still waiting, frozen on the worker.
    QTRY_COMPARE(view->model()->rowCount(), 3);
    bar->allMatching()->setChecked(true);
    bulk->setRate(BulkCommand::DefaultRatePerSecond);
    QPushButton *reject = bar->button(BulkAction::Reject);
    QVERIFY(reject->isEnabled());
    reject->click();
    QVERIFY(dialogs.wait());
    dialog = bulk->dialog();
    QCOMPARE(dialog->findChild<QTableWidget *>()->rowCount(), 3);
    dialog->reasonEdit()->setPlainText(QStringLiteral("duplicate refunds"));
    dialog->countEdit()->setText(QStringLiteral("3"));
    QVERIFY(dialog->width() <= 1024 && dialog->height() <= 700);
    if (const QString dir = qEnvironmentVariable("IDEMPO_SCREENSHOT_DIR"); !dir.isEmpty())
        QVERIFY(dialog->grab().save(QDir(dir).filePath(QStringLiteral("dialog-bulk.png"))));
    dialog->okButton()->click();
    QVERIFY(executed.wait(10'000));
    QVERIFY(executed.last().at(1).toString().contains(QStringLiteral("3 applied")));
    dialog->close();

    // A viewer sees the buttons disabled, with why.
    window.actions()->setActor({"vic", "viewer"});
    for (const BulkAction a : {BulkAction::Approve, BulkAction::Reject, BulkAction::Reconcile}) {
        QVERIFY(!bar->button(a)->isEnabled());
        QVERIFY2(bar->button(a)->toolTip().contains(QStringLiteral("role 'viewer'")),
                 qPrintable(bar->button(a)->toolTip()));
    }
}

QTEST_MAIN(TestBulkDialog)
#include "tst_bulkdialog.moc"
