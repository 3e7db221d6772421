// SPDX-License-Identifier: Apache-2.0
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "consolefixture.h"
#include "ledgerconnection.h"
#include "runtablemodel.h"
#include "runtimeline.h"

using namespace idempo;

/// Runs folded from operation pages, their filters and live state, and the timeline builder.
class TestRunTableModel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void foldsRunsFiltersAndFollows();
    void timelineMarksTakeoverAndBoundary();
};

void TestRunTableModel::foldsRunsFiltersAndFollows()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(f.url());
    QVERIFY(opened.wait());
    RunTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QObject::connect(&c, &LedgerConnection::changed, &m, [&m] { m.refresh(); });
    m.setQuery({});
    QTRY_COMPARE(m.rowCount(), 12 + 9);
    // The halted run-7004 is pinned first (tst_runbudgetuse); then in order of first operation.
    QVERIFY(m.runAt(0).halted());
    QCOMPARE(m.runAt(1).runId, std::string("run-7100"));
    QCOMPARE(m.runAt(1).steps(), 3);
    QCOMPARE(m.index(1, RunTableModel::State).data().toString(), QStringLiteral("succeeded"));

    OperationQuery stuck;
    stuck.states = {OperationState::ConfirmationRequired};
    m.setQuery(stuck);
    QTRY_COMPARE(m.rowCount(), 1);
    QCOMPARE(m.index(0, RunTableModel::RunId).data().toString(), QStringLiteral("run-7004"));

    OperationQuery one;
    one.runId = "run-7006";
    m.setQuery(one);
    QTRY_COMPARE(m.rowCount(), 1);
    QCOMPARE(m.index(0, RunTableModel::State).data().toString(), QStringLiteral("dispatching"));
    QTRY_VERIFY(c.isLive());
    const Operation op = f.engine().get("default", "run-7006:capture_payment");
    f.engine().fail("default", op.key, op.fencingToken, ErrorClass::UnknownOutcome, "timeout");
    QTRY_COMPARE(m.index(0, RunTableModel::State).data().toString(),
                 QStringLiteral("unknown_outcome"));
    QCOMPARE(m.index(0, RunTableModel::Pending).data().toInt(), 1);
}

void TestRunTableModel::timelineMarksTakeoverAndBoundary()
{
    test::ConsoleFixture f;
    f.populate();
    ListFilter filter;
    filter.runId = "run-7005";
    const std::vector<Operation> ops = f.store().list(filter);
    QCOMPARE(ops.size(), std::size_t{1});
    std::vector<std::vector<OperationEvent>> histories{f.store().history("default", ops[0].key)};
    const RunTimeline t = RunTimeline::build("run-7005", ops, histories, f.store().nowMs());
    QCOMPARE(t.lanes.size(), std::size_t{1});
    QVERIFY(std::any_of(t.lanes[0].markers.begin(), t.lanes[0].markers.end(),
                        [](const RunTimeline::Marker &m) {
                            return m.kind == RunTimeline::Marker::Kind::Takeover;
                        }));
    QVERIFY(!t.writeBoundaryMs); // a read never crosses the write boundary

    filter.runId = "run-7001";
    const std::vector<Operation> kyc = f.store().list(filter);
    std::vector<std::vector<OperationEvent>> kycHistories;
    for (const Operation &op : kyc)
        kycHistories.push_back(f.store().history("default", op.key));
    const RunTimeline k = RunTimeline::build("run-7001", kyc, kycHistories, f.store().nowMs());
    QCOMPARE(k.lanes.size(), std::size_t{3});
    QVERIFY(k.writeBoundaryMs);
    QCOMPARE(*k.writeBoundaryMs, k.lanes[0].spans[0].startMs);
}

QTEST_MAIN(TestRunTableModel)
#include "tst_runtablemodel.moc"
