// SPDX-License-Identifier: Apache-2.0
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "consolefixture.h"
#include "deadlettertablemodel.h"
#include "ledgerconnection.h"

using namespace idempo;

/// Dead letters browsed read-only: rows, key filter, and a new dead letter arriving live.
class TestDeadLetterTableModel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void browsesFiltersAndFollows();
};

void TestDeadLetterTableModel::browsesFiltersAndFollows()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(f.url());
    QVERIFY(opened.wait());
    QVERIFY(c.hasQueues());
    DeadLetterTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QObject::connect(&c, &LedgerConnection::changed, &m, [&m] { m.refresh(); });
    m.setQueue("payments");
    QTRY_COMPARE(m.rowCount(), 1);
    QCOMPARE(m.index(0, DeadLetterTableModel::Key).data().toString(),
             QStringLiteral("run-7009:capture"));
    QCOMPARE(m.index(0, DeadLetterTableModel::ReadCount).data().toInt(), 1);
    QVERIFY(m.index(0, DeadLetterTableModel::LastError)
                .data()
                .toString()
                .contains(QLatin1String("503")));

    m.setQueue("payments", "run-8");
    QTRY_VERIFY(!m.isLoading());
    QCOMPARE(m.rowCount(), 0);

    m.setQueue("payments");
    QTRY_COMPARE(m.rowCount(), 1);
    QTRY_VERIFY(c.isLive());
    f.queues().send("payments", R"({"idempotency_key":"run-7300:notify"})", "", 0);
    f.queues().read("payments", 0, 1);
    f.queues().read("payments", 0, 1);
    QTRY_COMPARE(m.rowCount(), 2);
    // Browsing never counts as a read.
    QCOMPARE(f.queues().metrics("payments_dlq").length, 2);
}

QTEST_MAIN(TestDeadLetterTableModel)
#include "tst_deadlettertablemodel.moc"
