// SPDX-License-Identifier: Apache-2.0
#include <algorithm>

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "consolefixture.h"
#include "ledgerconnection.h"
#include "overviewsnapshot.h"
#include "runbudgetuse.h"
#include "runtablemodel.h"

using namespace idempo;

/// What the console shows of run budgets: each budget's use at its boundaries, the Runs list
/// with halted runs first and a bar per budget, and the Overview's halted runs.
class TestRunBudgetUse final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void everyLimitedBudgetHasABar();
    void noProgressCountsOnlyWhileSomethingWaits();
    void haltedRunsComeFirstWithTheirBars();
    void aFilterPinsOnlyTheHaltedRunsItMatches();
    void overviewNamesTheHaltedRuns();
};

namespace {

RunRecord budgeted(std::int64_t nowMs)
{
    RunRecord run;
    run.ns = "default";
    run.runId = "run-1";
    run.budgets.failedDispatches = 3;
    run.budgets.noProgressMs = 600'000;
    run.budgets.spend = Amount{10'000, "EUR"};
    run.budgets.tokens = 10'000;
    run.failedDispatches = 2;
    run.spentMinor = 9'500;
    run.currency = "EUR";
    run.tokensUsed = 10'000;
    run.lastProgressAtMs = nowMs - 300'000;
    return run;
}

} // namespace

void TestRunBudgetUse::everyLimitedBudgetHasABar()
{
    const std::int64_t now = 10'000'000;
    const std::vector<BudgetUse> uses = budgetUses(budgeted(now), 1, now);
    QCOMPARE(uses.size(), std::size_t(4));
    QCOMPARE(uses[0].kind, BudgetKind::FailedDispatches);
    QCOMPARE(uses[0].fraction, 2.0 / 3.0);
    QCOMPARE(uses[0].label, QStringLiteral("2 of 3 failed dispatches"));
    QCOMPARE(uses[1].kind, BudgetKind::NoProgress);
    QCOMPARE(uses[1].fraction, 0.5);
    QCOMPARE(uses[2].kind, BudgetKind::Spend);
    QCOMPARE(uses[2].fraction, 0.95);
    QCOMPARE(uses[2].label, QStringLiteral("95.00 EUR of 100.00 EUR spent"));
    QCOMPARE(uses[3].fraction, 1.0); // exactly at the cap
    for (const BudgetUse &use : uses)
        QVERIFY(!use.haltedIt);

    RunRecord over = budgeted(now);
    over.failedDispatches = 7; // limits lowered under what was used stay a full bar
    QCOMPARE(budgetUses(over, 1, now)[0].fraction, 1.0);

    RunRecord unlimited;
    unlimited.budgets = {std::nullopt, std::nullopt, std::nullopt, std::nullopt};
    QVERIFY(budgetUses(unlimited, 1, now).empty());
}

void TestRunBudgetUse::noProgressCountsOnlyWhileSomethingWaits()
{
    const std::int64_t now = 10'000'000;
    RunRecord run = budgeted(now);
    const std::vector<BudgetUse> finished = budgetUses(run, 0, now);
    QCOMPARE(finished.size(), std::size_t(3));
    QVERIFY(std::none_of(finished.begin(), finished.end(),
                         [](const BudgetUse &u) { return u.kind == BudgetKind::NoProgress; }));

    // A halted run's clock stops at its halt: it waits for a person, not for progress.
    run.state = RunState::Halted;
    run.haltBudget = BudgetKind::Tokens;
    run.haltedAtMs = now - 200'000;
    const std::vector<BudgetUse> uses = budgetUses(run, 1, now);
    QCOMPARE(uses[1].fraction, 100'000.0 / 600'000.0);
    QVERIFY(!uses[1].haltedIt);
    QVERIFY(uses[3].haltedIt);
    QCOMPARE(runStateText(run), QStringLiteral("Halted"));
    run.haltDetail = "10000 tokens of 10000";
    QCOMPARE(runStateText(run), QStringLiteral("Halted: 10000 tokens of 10000"));
}

void TestRunBudgetUse::haltedRunsComeFirstWithTheirBars()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(f.url());
    QVERIFY(opened.wait());
    RunTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setQuery({});
    QTRY_COMPARE(m.rowCount(), 12 + 9);

    // run-7004's invoice failed three times: its third failure halted the run.
    QCOMPARE(m.runAt(0).runId, std::string("run-7004"));
    QVERIFY(m.runAt(0).halted());
    QCOMPARE(m.runAt(0).steps(), 1); // counted once, though its step is on the scanned page too
    QCOMPARE(m.index(0, RunTableModel::State).data().toString(),
             QStringLiteral("Halted: failed dispatches"));
    const QVariantList bars =
        m.index(0, RunTableModel::Budget).data(RunTableModel::BudgetRole).toList();
    QCOMPARE(bars.size(), 2);
    QCOMPARE(bars[0].toMap().value(QStringLiteral("fraction")).toDouble(), 1.0);
    QVERIFY(bars[0].toMap().value(QStringLiteral("halted_it")).toBool());
    QCOMPARE(bars[0].toMap().value(QStringLiteral("label")).toString(),
             QStringLiteral("3 of 3 failed dispatches"));

    int halted = 0;
    for (int row = 0; row < m.rowCount(); ++row)
        halted += m.runAt(row).halted() ? 1 : 0;
    QCOMPARE(halted, 1);
    QCOMPARE(m.runAt(1).runId, std::string("run-7100"));
    QVERIFY(m.runAt(1).record);
    QCOMPARE(m.index(1, RunTableModel::State).data().toString(), QStringLiteral("succeeded"));
    QCOMPARE(m.index(1, RunTableModel::Budget).data().toString(),
             QStringLiteral("0 of 3 failed dispatches"));
    // run-7006's capture is still in flight: its time without progress is counting.
    for (int row = 0; row < m.rowCount(); ++row)
        if (m.runAt(row).runId == "run-7006") {
            const QString text = m.index(row, RunTableModel::Budget).data().toString();
            QVERIFY2(text.startsWith(QStringLiteral("0 of 3 failed dispatches · ")) &&
                         text.endsWith(QStringLiteral(" of 10 min 00 s without progress")),
                     qPrintable(text));
        }
}

void TestRunBudgetUse::aFilterPinsOnlyTheHaltedRunsItMatches()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(f.url());
    QVERIFY(opened.wait());
    RunTableModel m(&c);
    OperationQuery succeeded;
    succeeded.states = {OperationState::Succeeded};
    m.setQuery(succeeded);
    QTRY_VERIFY(m.rowCount() > 0);
    QTRY_VERIFY(!m.canFetchMore({}));
    for (int row = 0; row < m.rowCount(); ++row)
        QVERIFY2(m.runAt(row).runId != "run-7004", "a halted run without a matching step");

    OperationQuery other;
    other.ns = "elsewhere";
    m.setQuery(other);
    QTRY_VERIFY(!m.canFetchMore({}));
    QCOMPARE(m.rowCount(), 0);
}

void TestRunBudgetUse::overviewNamesTheHaltedRuns()
{
    test::ConsoleFixture f;
    f.populate();
    const OverviewSnapshot s = OverviewSnapshot::read(f.store(), nullptr, 0);
    QCOMPARE(s.haltedRuns.size(), std::size_t(1));
    QCOMPARE(s.haltedRuns[0].runId, std::string("run-7004"));
    QCOMPARE(s.haltedRuns[0].haltBudget, std::optional(BudgetKind::FailedDispatches));
    QCOMPARE(s.figures.metrics.runsHalted, std::int64_t(1));
}

QTEST_MAIN(TestRunBudgetUse)
#include "tst_runbudgetuse.moc"
