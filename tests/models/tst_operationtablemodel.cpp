// SPDX-License-Identifier: Apache-2.0
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "consolefixture.h"
#include "ledgerconnection.h"
#include "operationtablemodel.h"

using namespace idempo;

/// Operations paged from a prepared ledger: first page, filters, paging, live changes.
class TestOperationTableModel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void showsDispatchingWithLapsedLease();
    void mergesTwoStatesOldestFirst();
    void filtersServerSide();
    void pagesWithFetchMore();
    void followsLiveChanges();
    void ordersByValueServerSide();
};

namespace {

void openLedger(LedgerConnection &c, const QString &url)
{
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(url);
    QVERIFY(opened.wait(5000));
}

} // namespace

void TestOperationTableModel::showsDispatchingWithLapsedLease()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    openLedger(c, f.url());
    OperationTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setQuery({{OperationState::Dispatching}});
    QTRY_COMPARE(m.rowCount(), test::ConsoleFixture::Dispatching);
    int lapsed = 0;
    for (int r = 0; r < m.rowCount(); ++r) {
        const bool isLapsed = m.index(r, 0).data(OperationTableModel::LapsedRole).toBool();
        lapsed += isLapsed ? 1 : 0;
        const QString lease = m.index(r, OperationTableModel::LeaseExpiry).data().toString();
        QVERIFY2(isLapsed ? lease.startsWith(QLatin1String("LAPSED"))
                          : lease.endsWith(QLatin1String("left")),
                 qPrintable(lease));
    }
    QCOMPARE(lapsed, 1);
    for (int r = 0; r < m.rowCount(); ++r)
        QCOMPARE(m.index(r, 0).data(OperationTableModel::LapsedRole).toBool(),
                 m.index(r, 0).data(OperationTableModel::KeyRole).toString() ==
                     QLatin1String("run-7007:charge_card"));
}

void TestOperationTableModel::mergesTwoStatesOldestFirst()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    openLedger(c, f.url());
    OperationTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setQuery({{OperationState::ConfirmationRequired, OperationState::AwaitingApproval}});
    QTRY_COMPARE(m.rowCount(), test::ConsoleFixture::NeedsPerson);
    QCOMPARE(m.index(0, OperationTableModel::Key).data().toString(),
             QStringLiteral("run-7002:refund"));
    QCOMPARE(m.index(1, OperationTableModel::State).data().toString(),
             QStringLiteral("confirmation_required"));
    QVERIFY(m.operationAt(m.index(0, 0)).id < m.operationAt(m.index(1, 0)).id);
}

void TestOperationTableModel::filtersServerSide()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    openLedger(c, f.url());
    OperationTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    OperationQuery q;
    q.keyPrefix = "run-710";
    m.setQuery(q);
    QTRY_COMPARE(m.rowCount(), 30);
    q.runId = "run-7105";
    m.setQuery(q);
    QTRY_COMPARE(m.rowCount(), 3);
    q = {};
    q.states = {OperationState::Dispatching};
    q.minAgeMs = 10 * 60'000; // untouched for ten minutes: only the lapsed charge
    m.setQuery(q);
    QTRY_COMPARE(m.rowCount(), 1);
    QCOMPARE(m.index(0, 0).data().toString(), QStringLiteral("run-7007:charge_card"));
}

void TestOperationTableModel::pagesWithFetchMore()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    openLedger(c, f.url());
    OperationTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setPageSize(10);
    m.setQuery({});
    QTRY_COMPARE(m.rowCount(), 10);
    QTRY_VERIFY(m.canFetchMore({}));
    m.fetchMore({});
    QTRY_COMPARE(m.rowCount(), 20);
    while (m.rowCount() < 47) {
        QTRY_VERIFY(m.canFetchMore({}) || m.rowCount() >= 47);
        m.fetchMore({});
        QTest::qWait(20);
    }
    QTRY_VERIFY(!m.canFetchMore({}) && !m.isLoading());
    for (int r = 1; r < m.rowCount(); ++r)
        QVERIFY(m.operationAt(m.index(r - 1, 0)).id < m.operationAt(m.index(r, 0)).id);
}

void TestOperationTableModel::followsLiveChanges()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    openLedger(c, f.url());
    OperationTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QObject::connect(&c, &LedgerConnection::changed, &m, [&m] { m.refresh(); });
    m.setQuery({{OperationState::Dispatching}});
    QTRY_COMPARE(m.rowCount(), 3);
    QTRY_VERIFY(c.isLive());

    const ClaimResult claimed = f.claimNew("run-7200:capture_payment", "run-7200");
    QTRY_COMPARE(m.rowCount(), 4);
    QCOMPARE(m.index(3, 0).data().toString(), QStringLiteral("run-7200:capture_payment"));

    QSignalSpy changed(&m, &QAbstractItemModel::dataChanged);
    f.engine().heartbeat("default", claimed.operation.key, claimed.operation.fencingToken, 900'000);
    QTRY_VERIFY(!changed.isEmpty());

    f.engine().complete("default", claimed.operation.key, claimed.operation.fencingToken, "{}", "");
    QTRY_COMPARE(m.rowCount(), 3);
}

void TestOperationTableModel::ordersByValueServerSide()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    openLedger(c, f.url());
    OperationTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QObject::connect(&c, &LedgerConnection::changed, &m, [&m] { m.refresh(); });
    m.setPageSize(1); // every row is its own keyset page: the (value, id) cursor carries the order
    OperationQuery q{{OperationState::ConfirmationRequired, OperationState::AwaitingApproval}};
    q.order = ListOrder::ValueDescending;
    m.setQuery(q);
    QTRY_VERIFY(!m.isLoading());
    while (m.canFetchMore({})) {
        m.fetchMore({});
        QTRY_VERIFY(!m.isLoading());
    }
    QCOMPARE(m.rowCount(), test::ConsoleFixture::NeedsPerson);
    QCOMPARE(m.index(0, OperationTableModel::Key).data().toString(),
             QStringLiteral("run-7004:send_invoice"));
    QCOMPARE(m.index(0, OperationTableModel::Value).data().toString(),
             QStringLiteral("8,400.00 EUR"));
    QCOMPARE(m.index(1, OperationTableModel::Key).data().toString(),
             QStringLiteral("run-7002:refund"));
    QCOMPARE(m.index(1, OperationTableModel::Value).data().toString(),
             QStringLiteral("1,250.00 EUR"));
    QVERIFY(m.operationAt(m.index(0, 0)).id > m.operationAt(m.index(1, 0)).id);

    // A newer approval worth more than the refund and less than the invoice lands between them.
    ClaimInput gated;
    gated.key = "run-7600:refund";
    gated.runId = "run-7600";
    gated.stepId = "refund";
    gated.payloadJson = R"({"amount":500000,"currency":"EUR"})";
    gated.owner = "worker-a";
    gated.requiresApproval = true;
    gated.value = Amount{500'000, "EUR"};
    QCOMPARE(f.engine().claim(gated).operation.state, OperationState::AwaitingApproval);
    m.setViewport(0, 10);
    QTRY_VERIFY(c.isLive());
    c.pollNow();
    QTRY_COMPARE(m.rowCount(), 3);
    QCOMPARE(m.index(1, OperationTableModel::Key).data().toString(),
             QStringLiteral("run-7600:refund"));
    QCOMPARE(m.index(2, OperationTableModel::Key).data().toString(),
             QStringLiteral("run-7002:refund"));
}

QTEST_MAIN(TestOperationTableModel)
#include "tst_operationtablemodel.moc"
