// SPDX-License-Identifier: Apache-2.0
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "actioncontroller.h"
#include "approvecommand.h"
#include "audittablemodel.h"
#include "auditview.h"
#include "confirmationsview.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "foureyesmodel.h"
#include "foureyesview.h"
#include "guardedactiondialog.h"
#include "guardsettingcommand.h"
#include "leasesview.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "money.h"
#include "operationdetailpane.h"
#include "operationsview.h"
#include "operationtablemodel.h"
#include "runsview.h"
#include "runtablemodel.h"

using namespace idempo;

/// The console at 1024×700 on the prepared ledger, offscreen: the window fits, and the columns
/// that must be read whole (state, value, attempt, the lease countdown) are on screen and wide
/// enough for the longest text their rows hold.
class TestConsoleLayout final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void windowFits1024x700();
    void confirmationsStateValueAttemptWhole();
    void leaseCountdownWhole();
    void emptyColumnTakesOnlyItsTitle();
    void personsWidthIsKeptAndNewColumnsShown();
    void auditFitsWithoutScrolling();
    void findKeyWholeBesideThePane();
    void leasesKeyAndStepBeforeTitles();
    void runsFitWithoutScrolling();
    void fourEyesWhole_data();
    void fourEyesWhole();

private:
    template <typename View> View *show();
    /// Column `column` of `table` ends inside the viewport and is wide enough for every loaded
    /// row's text in its font (and its decoration).
    void verifyWhole(LedgerTableView *table, int column);
    /// The widest loaded cell of `column` as the table's delegate draws it.
    static int columnNeed(LedgerTableView *table, int column);
    /// No column of `table` ends past its viewport, and it has no horizontal scroll bar.
    void verifyFits(LedgerTableView *table);

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
};

void TestConsoleLayout::init()
{
    QSettings().clear();
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    m_window = test::openConsole(m_fixture->url(), QSize(1024, 700));
    QVERIFY(m_window);
}

void TestConsoleLayout::cleanup()
{
    m_window.reset();
    m_fixture.reset();
}

template <typename View> View *TestConsoleLayout::show()
{
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<View *>(v)) {
            m_window->tabs()->setCurrentWidget(view);
            return view;
        }
    return nullptr;
}

void TestConsoleLayout::verifyWhole(LedgerTableView *table, int column)
{
    QAbstractItemModel *model = table->model();
    QTRY_VERIFY(model->rowCount() > 0);
    QHeaderView *header = table->horizontalHeader();
    int needed = 0;
    for (int row = 0; row < model->rowCount(); ++row) {
        const QModelIndex index = model->index(row, column);
        const QVariant font = index.data(Qt::FontRole);
        const QFontMetrics metrics(font.isValid() ? font.value<QFont>() : table->font());
        const int icon =
            index.data(Qt::DecorationRole).isValid() ? table->iconSize().width() + 4 : 0;
        needed = std::max(needed, metrics.horizontalAdvance(index.data().toString()) + icon);
    }
    const QString title = model->headerData(column, Qt::Horizontal).toString();
    QTRY_VERIFY2(header->sectionSize(column) >= needed,
                 qPrintable(QStringLiteral("%1 is %2 px wide, its text needs %3")
                                .arg(title)
                                .arg(header->sectionSize(column))
                                .arg(needed)));
    const int right = header->sectionViewportPosition(column) + header->sectionSize(column);
    QVERIFY2(right <= table->viewport()->width(),
             qPrintable(QStringLiteral("%1 ends at %2, the list shows %3 px")
                            .arg(title)
                            .arg(right)
                            .arg(table->viewport()->width())));
}

int TestConsoleLayout::columnNeed(LedgerTableView *table, int column)
{
    int need = 0;
    for (int row = 0; row < table->model()->rowCount(); ++row)
        need = std::max(need, table->cellWidth(table->model()->index(row, column)));
    return need;
}

void TestConsoleLayout::verifyFits(LedgerTableView *table)
{
    QHeaderView *header = table->horizontalHeader();
    const auto sizes = [header] {
        QStringList s;
        for (int c = 0; c < header->count(); ++c)
            if (!header->isSectionHidden(c))
                s << QStringLiteral("%1 %2")
                         .arg(header->model()->headerData(c, Qt::Horizontal).toString())
                         .arg(header->sectionSize(c));
        return s.join(QLatin1String(", "));
    };
    QTRY_VERIFY2(header->length() <= table->viewport()->width() &&
                     !table->horizontalScrollBar()->isVisible(),
                 qPrintable(QStringLiteral("the columns take %1 px (%2), the list shows %3")
                                .arg(header->length())
                                .arg(sizes())
                                .arg(table->viewport()->width())));
}

void TestConsoleLayout::windowFits1024x700()
{
    // Each tab's own minimum, and within it the widest of its direct parts, names what forces
    // a wider window.
    QStringList wide;
    for (LedgerView *v : m_window->views()) {
        m_window->tabs()->setCurrentWidget(v);
        const QString tab = m_window->tabs()->tabText(m_window->tabs()->indexOf(v));
        wide << QStringLiteral("%1 %2").arg(tab).arg(v->minimumSizeHint().width());
        for (QWidget *part : v->findChildren<QWidget *>())
            if (part->minimumSizeHint().width() > 900)
                wide << QStringLiteral("  %1 %2")
                            .arg(QString::fromLatin1(part->metaObject()->className()))
                            .arg(part->minimumSizeHint().width());
    }
    const QSize minimum = m_window->minimumSizeHint().expandedTo(m_window->minimumSize());
    QVERIFY2(minimum.width() <= 1024 && minimum.height() <= 700,
             qPrintable(QStringLiteral("minimum %1×%2; %3")
                            .arg(minimum.width())
                            .arg(minimum.height())
                            .arg(wide.join(QLatin1String(", ")))));
    QCOMPARE(m_window->size(), QSize(1024, 700));
}

void TestConsoleLayout::confirmationsStateValueAttemptWhole()
{
    auto *view = show<ConfirmationsView>();
    QVERIFY(view);
    for (int column :
         {OperationTableModel::State, OperationTableModel::Value, OperationTableModel::Attempt})
        verifyWhole(view->table(), column);
}

void TestConsoleLayout::leaseCountdownWhole()
{
    auto *view = show<LeasesView>();
    QVERIFY(view);
    verifyWhole(view->table(), OperationTableModel::LeaseExpiry);
    verifyWhole(view->table(), OperationTableModel::State);
}

void TestConsoleLayout::emptyColumnTakesOnlyItsTitle()
{
    // Nothing waiting for a person holds a lease: shown, the lease column is empty on every row
    // and takes no more than its title.
    auto *view = show<ConfirmationsView>();
    LedgerTableView *table = view->table();
    table->setColumnHidden(OperationTableModel::LeaseExpiry, false);
    QTRY_VERIFY(table->model()->rowCount() > 0);
    for (int row = 0; row < table->model()->rowCount(); ++row)
        QVERIFY(table->model()
                    ->index(row, OperationTableModel::LeaseExpiry)
                    .data()
                    .toString()
                    .isEmpty());
    table->fitColumns();
    QCOMPARE(table->horizontalHeader()->sectionSize(OperationTableModel::LeaseExpiry),
             table->headerWidth(OperationTableModel::LeaseExpiry));
}

void TestConsoleLayout::personsWidthIsKeptAndNewColumnsShown()
{
    auto *view = show<ConfirmationsView>();
    LedgerTableView *table = view->table();
    QTRY_VERIFY(table->model()->rowCount() > 0);
    QHeaderView *header = table->horizontalHeader();
    // The person drags the right edge of Operation key 40 px to the left.
    const int right = header->sectionViewportPosition(OperationTableModel::Key) +
                      header->sectionSize(OperationTableModel::Key) - 1;
    const int width = header->sectionSize(OperationTableModel::Key);
    const QPoint from(right, header->height() / 2);
    QTest::mousePress(header->viewport(), Qt::LeftButton, {}, from);
    QMouseEvent move(QEvent::MouseMove, from - QPoint(40, 0),
                     header->viewport()->mapToGlobal(from - QPoint(40, 0)), Qt::LeftButton,
                     Qt::LeftButton, {});
    QApplication::sendEvent(header->viewport(), &move);
    QTest::mouseRelease(header->viewport(), Qt::LeftButton, {}, from - QPoint(40, 0));
    QCOMPARE(header->sectionSize(OperationTableModel::Key), width - 40);

    // A choice saved by an older console that knew fewer columns, one of them hidden.
    QSettings settings;
    QVariantMap saved = settings.value(QStringLiteral("columns/confirmations/by-title")).toMap();
    QVariantMap shown = saved.value(QStringLiteral("shown")).toMap();
    shown.remove(QStringLiteral("Attempt"));
    saved.insert(QStringLiteral("shown"), shown);
    settings.setValue(QStringLiteral("columns/confirmations/by-title"), saved);

    m_window.reset();
    m_window = test::openConsole(m_fixture->url(), QSize(1024, 700));
    QVERIFY(m_window);
    view = show<ConfirmationsView>();
    table = view->table();
    QTRY_VERIFY(table->model()->rowCount() > 0);
    table->fitColumns();
    QCOMPARE(table->horizontalHeader()->sectionSize(OperationTableModel::Key), width - 40);
    QVERIFY(!table->isColumnHidden(OperationTableModel::Attempt));
    verifyWhole(table, OperationTableModel::Attempt);
}

void TestConsoleLayout::auditFitsWithoutScrolling()
{
    GuardSettingCommand(m_fixture->store(), {"olga", "owner"}, ReferenceRatesSetting,
                        "EUR USD=0.92 JPY=0.0061", "rates of the day")
        .execute();
    QCOMPARE(m_fixture->approveRefundOnce(), std::string("pending"));
    auto *view = show<AuditView>();
    QVERIFY(view);
    LedgerTableView *table = view->table();
    QTRY_VERIFY(table->model()->rowCount() >= 2);
    QHeaderView *header = table->horizontalHeader();
    const auto sizes = [header] {
        QStringList s;
        for (int c = 0; c < header->count(); ++c)
            s << QString::number(header->sectionSize(c));
        return s.join(QLatin1Char(' '));
    };
    QTRY_VERIFY2(header->length() <= table->viewport()->width(),
                 qPrintable(QStringLiteral("the columns take %1 px (%2), the list shows %3")
                                .arg(header->length())
                                .arg(sizes())
                                .arg(table->viewport()->width())));
    verifyWhole(table, AuditTableModel::When);
    verifyWhole(table, AuditTableModel::Change);
}

void TestConsoleLayout::findKeyWholeBesideThePane()
{
    // At 1600 px the details pane stands beside the list: the list keeps the width its operation
    // keys need, the pane takes what is left above its own minimum.
    m_window.reset();
    m_window = test::openConsole(m_fixture->url(), QSize(1600, 1000));
    QVERIFY(m_window);
    auto *view = show<OperationsView>();
    QVERIFY(view);
    LedgerTableView *table = view->table();
    QTRY_VERIFY(table->model()->rowCount() > 0);
    table->setCurrentIndex(table->model()->index(0, 0));
    QTRY_VERIFY(view->detail()->operation().has_value());
    QVERIFY(view->detail()->isVisible());
    QCOMPARE(view->detail()->x() > table->x(), true);
    QTRY_VERIFY2(
        table->horizontalHeader()->sectionSize(OperationTableModel::Key) >=
            columnNeed(table, OperationTableModel::Key),
        qPrintable(QStringLiteral("Operation key is %1 px wide, its keys need %2; the "
                                  "list is %3 px, the pane %4")
                       .arg(table->horizontalHeader()->sectionSize(OperationTableModel::Key))
                       .arg(columnNeed(table, OperationTableModel::Key))
                       .arg(table->width())
                       .arg(view->detail()->width())));
    QVERIFY(view->detail()->width() >= view->detail()->minimumSizeHint().width());
    verifyFits(table);
}

void TestConsoleLayout::leasesKeyAndStepBeforeTitles()
{
    // A title wider than what its column holds (Fencing token over two-digit tokens) gives way
    // before the operation key and the step are cut short.
    auto *view = show<LeasesView>();
    QVERIFY(view);
    LedgerTableView *table = view->table();
    QTRY_VERIFY(table->model()->rowCount() == test::ConsoleFixture::Dispatching);
    const int tokens = columnNeed(table, OperationTableModel::Token);
    const auto why = [&] {
        return QStringLiteral("Fencing token is %1 px wide for tokens that need %2")
            .arg(table->horizontalHeader()->sectionSize(OperationTableModel::Token))
            .arg(tokens);
    };
    for (int column : {OperationTableModel::Key, OperationTableModel::Step})
        QTRY_VERIFY2(
            table->horizontalHeader()->sectionSize(column) >= columnNeed(table, column),
            qPrintable(QStringLiteral("%1 is %2 px wide, needs %3; %4")
                           .arg(table->model()->headerData(column, Qt::Horizontal).toString())
                           .arg(table->horizontalHeader()->sectionSize(column))
                           .arg(columnNeed(table, column))
                           .arg(why())));
    for (int column :
         {OperationTableModel::Key, OperationTableModel::Step, OperationTableModel::State,
          OperationTableModel::LeaseExpiry, OperationTableModel::Token})
        verifyWhole(table, column);
    verifyFits(table);
}

void TestConsoleLayout::runsFitWithoutScrolling()
{
    auto *view = show<RunsView>();
    QVERIFY(view);
    LedgerTableView *table = view->table();
    QTRY_VERIFY(table->model()->rowCount() > 0);
    verifyFits(table);
    for (int column : {RunTableModel::RunId, RunTableModel::State, RunTableModel::Steps,
                       RunTableModel::Pending, RunTableModel::Started, RunTableModel::LastChange})
        verifyWhole(table, column);
}

void TestConsoleLayout::fourEyesWhole_data()
{
    QTest::addColumn<QSize>("size");
    QTest::newRow("1024x700") << QSize(1024, 700);
    QTest::newRow("1600x1000") << QSize(1600, 1000);
}

void TestConsoleLayout::fourEyesWhole()
{
    // The second approver weighs the key, the value, who approved first and who asked: those are
    // whole in the list, and the pane's facts (the state) and its note of the first approval are
    // not cut off.
    QFETCH(QSize, size);
    QCOMPARE(m_fixture->approveRefundOnce(), std::string("pending"));
    // A second one with a longer key, requester and reason, as an agent pipeline names them: the
    // list is short of room at 1024 px.
    ClaimInput claim;
    claim.key = "run-7012:refund_duplicate_card_charge";
    claim.runId = "run-7012";
    claim.stepId = "refund_duplicate_card_charge";
    claim.kind = ToolKind::ProtectedWrite;
    claim.payloadJson = R"({"amount":480000,"currency":"EUR","order":"SO-90417"})";
    claim.owner = "refund-planner@payments-eu-west";
    claim.requiresApproval = true;
    claim.value = Amount{480'000, "EUR"};
    QCOMPARE(m_fixture->engine().claim(claim).operation.state, OperationState::AwaitingApproval);
    ApproveCommand::Request first;
    first.key = claim.key;
    first.reason = "the bank confirmed the duplicate card charge; the customer called twice";
    QCOMPARE(ApproveCommand(m_fixture->store(), {"carol", "approver"}, first).execute().status,
             std::string("pending"));
    m_window.reset();
    m_window = test::openConsole(m_fixture->url(), size);
    QVERIFY(m_window);
    QTRY_VERIFY(m_window->actions()->actor().has_value());
    m_window->actions()->setActor({"alice", "approver"});
    auto *view = show<FourEyesView>();
    QVERIFY(view);
    LedgerTableView *table = view->table();
    QTRY_COMPARE(table->model()->rowCount(), 2);
    table->setCurrentIndex(table->model()->index(1, 0));
    QTRY_VERIFY(!view->detail()->approvalsText().isEmpty());
    for (int column : {FourEyesModel::Key, FourEyesModel::Value, FourEyesModel::FirstApprover,
                       FourEyesModel::RequestedBy, FourEyesModel::Waiting})
        verifyWhole(table, column);
    verifyFits(table);
    QVERIFY2(view->detail()->factsText().contains(QLatin1String("awaiting_approval")),
             qPrintable(view->detail()->factsText()));
    for (QLabel *label : view->findChildren<QLabel *>()) {
        if (!label->isVisible() || label->text().isEmpty())
            continue;
        const int needs =
            label->wordWrap() ? label->heightForWidth(label->width()) : label->sizeHint().height();
        QVERIFY2(label->height() >= needs &&
                     (label->wordWrap() || label->width() >= label->minimumSizeHint().width()),
                 qPrintable(QStringLiteral("\"%1\" is %2×%3, needs %4 px of height")
                                .arg(label->text().left(60))
                                .arg(label->width())
                                .arg(label->height())
                                .arg(needs)));
    }
}

QTEST_MAIN(TestConsoleLayout)
#include "tst_consolelayout.moc"
