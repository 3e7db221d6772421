// SPDX-License-Identifier: Apache-2.0
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "consolefixture.h"
#include "ledgerconnection.h"
#include "suppressiontablemodel.h"

using namespace idempo;

/// Suppressions of a prepared ledger: all of them, filtered on the worker, and live appends.
class TestSuppressionTableModel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void showsFiltersAndFollows();
};

void TestSuppressionTableModel::showsFiltersAndFollows()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(f.url());
    QVERIFY(opened.wait());
    SuppressionTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QObject::connect(&c, &LedgerConnection::changed, &m, [&m] { m.refresh(); });
    m.setQuery({});
    QTRY_COMPARE(m.rowCount(), test::ConsoleFixture::Suppressions);
    QCOMPARE(m.index(0, SuppressionTableModel::Kind).data().toString(), QStringLiteral("replay"));
    QCOMPARE(m.index(0, SuppressionTableModel::Source).data().toString(),
             QStringLiteral("queue-redelivery"));

    SuppressionQuery mismatch;
    mismatch.outcome = ClaimOutcome::PayloadMismatch;
    m.setQuery(mismatch);
    QTRY_COMPARE(m.rowCount(), 1);
    QCOMPARE(m.index(0, SuppressionTableModel::Source).data().toString(),
             QStringLiteral("planner-2"));

    SuppressionQuery run;
    run.runId = "run-7001";
    m.setQuery(run);
    QTRY_COMPARE(m.rowCount(), 3);

    m.setQuery({});
    QTRY_COMPARE(m.rowCount(), test::ConsoleFixture::Suppressions);
    QTRY_VERIFY(c.isLive());
    f.claimNew("run-7006:capture_payment", "run-7006"); // same key, another payload
    QTRY_COMPARE(m.rowCount(), test::ConsoleFixture::Suppressions + 1);
    QCOMPARE(m.index(m.rowCount() - 1, SuppressionTableModel::Kind).data().toString(),
             QStringLiteral("payload mismatch"));
}

QTEST_MAIN(TestSuppressionTableModel)
#include "tst_suppressiontablemodel.moc"
