// SPDX-License-Identifier: Apache-2.0
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "consolefixture.h"
#include "ledgerconnection.h"
#include "overviewmodel.h"

using namespace idempo;

/// The Overview's figures on a prepared ledger, and their change after a write.
class TestOverviewModel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void figures();
};

void TestOverviewModel::figures()
{
    test::ConsoleFixture f;
    f.populate();
    LedgerConnection c;
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(f.url());
    QVERIFY(opened.wait());
    OverviewModel m(&c);
    QSignalSpy updated(&m, &OverviewModel::updated);
    m.refresh();
    QVERIFY(updated.wait());
    const OverviewSnapshot &s = m.snapshot();
    const LedgerFigures &figures = s.figures;
    QCOMPARE(figures.metrics.leasesLive, 2);
    QCOMPARE(figures.metrics.leasesLapsed, 1);
    QCOMPARE(figures.count(OperationState::ConfirmationRequired), 1);
    QCOMPARE(figures.count(OperationState::AwaitingApproval), 1);
    QCOMPARE(figures.count(OperationState::UnknownOutcome), 1);
    QVERIFY(figures.oldestConfirmationAgeMs && *figures.oldestConfirmationAgeMs > 60'000);
    QCOMPARE(s.dlqDepth, 1);
    QCOMPARE(figures.metrics.suppressionsInWindow, test::ConsoleFixture::Suppressions);
    // The window's finals: 39 succeeded records and run-7008's refusal, all within the hour.
    QCOMPARE(figures.metrics.finalDurationsMs.size(), std::size_t(40));
    QVERIFY(s.backlogAgeMs && *s.backlogAgeMs > 0);
    std::int64_t failures = 0;
    for (const auto &[cls, n] : s.failuresByClass)
        failures += n;
    QCOMPARE(failures, 4); // rate_limited, transient, validation, unknown_outcome

    f.claimNew("run-7400:pay", "run-7400");
    m.refresh();
    QTRY_COMPARE(m.snapshot().figures.metrics.leasesLive, 3);
}

QTEST_MAIN(TestOverviewModel)
#include "tst_overviewmodel.moc"
