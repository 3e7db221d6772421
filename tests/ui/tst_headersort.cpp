// SPDX-License-Identifier: Apache-2.0
#include <QHeaderView>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "confirmationsview.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationsview.h"
#include "operationtablemodel.h"

using namespace idempo;

/// Header clicks order the operation lists in the store, offscreen: the first rows after a click
/// are the store's first rows in that order, a column the store cannot order by changes nothing,
/// and the order chosen is the one a reopened window lists in.
class TestHeaderSort final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void headerClickOrdersInTheStore();
    void unorderableColumnKeepsTheOrder();
    void orderIsRestoredOnReopen();
    void confirmationsOrderByValue();

private:
    template <typename View> View *show();
    void clickHeader(LedgerTableView *table, int column);
    /// The ids of the model's first rows, once loaded, against the store's first `count` in
    /// `order`.
    void compareFirstRows(OperationTableModel *model, ListOrder order);

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
};

void TestHeaderSort::init()
{
    QSettings().clear();
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    // More records than a page of the test's size, with values that tie.
    for (int i = 0; i < 30; ++i) {
        ClaimInput in;
        in.key = "bulk-" + std::to_string(29 - i) + ":refund";
        in.payloadJson = R"({"amount":1})";
        in.owner = "worker-s";
        in.requiresApproval = true;
        in.value = Amount{(i % 4) * 10'000, "EUR"};
        m_fixture->engine().claim(in);
        m_fixture->clock().advanceMs(i % 3 == 0 ? 1'000 : 0);
    }
    m_window = test::openConsole(m_fixture->url(), QSize(1024, 700));
    QVERIFY(m_window);
}

void TestHeaderSort::cleanup()
{
    m_window.reset();
    m_fixture.reset();
}

template <typename View> View *TestHeaderSort::show()
{
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<View *>(v)) {
            m_window->tabs()->setCurrentWidget(view);
            return view;
        }
    return nullptr;
}

void TestHeaderSort::clickHeader(LedgerTableView *table, int column)
{
    QHeaderView *header = table->horizontalHeader();
    table->scrollTo(table->model()->index(0, column));
    const int x = header->sectionViewportPosition(column) + header->sectionSize(column) / 2;
    QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, QPoint(x, header->height() / 2));
}

void TestHeaderSort::compareFirstRows(OperationTableModel *model, ListOrder order)
{
    QTRY_COMPARE(model->query().order, order);
    QTRY_VERIFY(!model->isLoading());
    while (model->rowCount() < 20 && model->canFetchMore({})) {
        model->fetchMore({});
        QTRY_VERIFY(!model->isLoading());
    }
    ListFilter filter;
    filter.order = order;
    filter.limit = 20;
    const std::vector<Operation> first = m_fixture->store().list(filter);
    QCOMPARE(first.size(), std::size_t(20));
    for (int row = 0; row < 20; ++row)
        QCOMPARE(model->operationAt(model->index(row, 0)).id,
                 first[static_cast<std::size_t>(row)].id);
}

void TestHeaderSort::headerClickOrdersInTheStore()
{
    auto *find = show<OperationsView>();
    QVERIFY(find);
    auto *model = qobject_cast<OperationTableModel *>(find->table()->model());
    QVERIFY(model);
    model->setPageSize(7); // the rows shown come from several keyset pages
    QTRY_VERIFY(!model->isLoading());
    QHeaderView *header = find->table()->horizontalHeader();
    QCOMPARE(header->sortIndicatorSection(), int(OperationTableModel::Created));
    QCOMPARE(header->sortIndicatorOrder(), Qt::AscendingOrder);

    clickHeader(find->table(), OperationTableModel::Value); // highest first on a first click
    compareFirstRows(model, ListOrder::ValueDescending);
    QCOMPARE(header->sortIndicatorSection(), int(OperationTableModel::Value));
    clickHeader(find->table(), OperationTableModel::Value);
    compareFirstRows(model, ListOrder::ValueAscending);
    clickHeader(find->table(), OperationTableModel::Updated);
    compareFirstRows(model, ListOrder::UpdatedDescending);
    clickHeader(find->table(), OperationTableModel::Key);
    compareFirstRows(model, ListOrder::KeyAscending);
    clickHeader(find->table(), OperationTableModel::Created);
    compareFirstRows(model, ListOrder::IdDescending);
    // Scrolling on fetches the next pages in the same order.
    while (model->canFetchMore({})) {
        model->fetchMore({});
        QTRY_VERIFY(!model->isLoading());
    }
    for (int row = 1; row < model->rowCount(); ++row)
        QVERIFY(model->operationAt(model->index(row - 1, 0)).id >
                model->operationAt(model->index(row, 0)).id);
}

void TestHeaderSort::unorderableColumnKeepsTheOrder()
{
    auto *find = show<OperationsView>();
    QVERIFY(find);
    auto *model = qobject_cast<OperationTableModel *>(find->table()->model());
    QHeaderView *header = find->table()->horizontalHeader();
    clickHeader(find->table(), OperationTableModel::Value);
    compareFirstRows(model, ListOrder::ValueDescending);
    clickHeader(find->table(), OperationTableModel::Step);
    QCOMPARE(header->sortIndicatorSection(), int(OperationTableModel::Value));
    QCOMPARE(header->sortIndicatorOrder(), Qt::DescendingOrder);
    QCOMPARE(model->query().order, ListOrder::ValueDescending);
    QVERIFY(model->headerData(OperationTableModel::Step, Qt::Horizontal, Qt::ToolTipRole)
                .toString()
                .contains(QStringLiteral("cannot order")));
    // The key orders one way only: a second click keeps it ascending.
    clickHeader(find->table(), OperationTableModel::Key);
    compareFirstRows(model, ListOrder::KeyAscending);
    clickHeader(find->table(), OperationTableModel::Key);
    QCOMPARE(header->sortIndicatorOrder(), Qt::AscendingOrder);
    QCOMPARE(model->query().order, ListOrder::KeyAscending);
}

void TestHeaderSort::orderIsRestoredOnReopen()
{
    auto *find = show<OperationsView>();
    QVERIFY(find);
    clickHeader(find->table(), OperationTableModel::Updated);
    compareFirstRows(qobject_cast<OperationTableModel *>(find->table()->model()),
                     ListOrder::UpdatedDescending);
    auto *confirmations = show<ConfirmationsView>();
    QVERIFY(confirmations);
    clickHeader(confirmations->table(), OperationTableModel::Key);
    QTRY_COMPARE(confirmations->model()->query().order, ListOrder::KeyAscending);

    m_window.reset();
    m_window = test::openConsole(m_fixture->url(), QSize(1024, 700));
    QVERIFY(m_window);
    find = show<OperationsView>();
    auto *model = qobject_cast<OperationTableModel *>(find->table()->model());
    compareFirstRows(model, ListOrder::UpdatedDescending);
    QCOMPARE(find->table()->horizontalHeader()->sortIndicatorSection(),
             int(OperationTableModel::Updated));
    QCOMPARE(find->table()->horizontalHeader()->sortIndicatorOrder(), Qt::DescendingOrder);
    // Each view keeps its own.
    confirmations = show<ConfirmationsView>();
    QCOMPARE(confirmations->model()->query().order, ListOrder::KeyAscending);
    QCOMPARE(confirmations->table()->horizontalHeader()->sortIndicatorSection(),
             int(OperationTableModel::Key));
}

void TestHeaderSort::confirmationsOrderByValue()
{
    auto *view = show<ConfirmationsView>();
    QVERIFY(view);
    OperationTableModel *model = view->model();
    model->setPageSize(4);
    clickHeader(view->table(), OperationTableModel::Value);
    QTRY_COMPARE(model->query().order, ListOrder::ValueDescending);
    QTRY_VERIFY(!model->isLoading() && model->rowCount() > 0);
    while (model->canFetchMore({})) {
        model->fetchMore({});
        QTRY_VERIFY(!model->isLoading());
    }
    QCOMPARE(model->index(0, OperationTableModel::Key).data().toString(),
             QStringLiteral("run-7004:send_invoice"));
    // Across pages and the three states: values never rise, equal values oldest first.
    for (int row = 1; row < model->rowCount(); ++row) {
        const Operation &a = model->operationAt(model->index(row - 1, 0));
        const Operation &b = model->operationAt(model->index(row, 0));
        const std::int64_t va = a.value ? a.value->minorUnits : ListFilter::NoValue;
        const std::int64_t vb = b.value ? b.value->minorUnits : ListFilter::NoValue;
        QVERIFY(va > vb || (va == vb && a.id < b.id));
    }
}

QTEST_MAIN(TestHeaderSort)
#include "tst_headersort.moc"
