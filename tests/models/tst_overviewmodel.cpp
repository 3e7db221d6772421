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
    QCOMPARE(s.leasesLive, 2);
    QCOMPARE(s.leasesLapsed, 1);
    QCOMPARE(s.confirmations, 1);
    QCOMPARE(s.awaitingApproval, 1);
    QCOMPARE(s.unknownOutcome, 1);
    QVERIFY(s.oldestConfirmationAgeMs && *s.oldestConfirmationAgeMs > 60'000);
    QCOMPARE(s.dlqDepth, 1);
    QCOMPARE(m.suppressionsLastHour(), test::ConsoleFixture::Suppressions);
    QCOMPARE(s.timeToFinalSampled, 39);
    QVERIFY(s.backlogAgeMs && *s.backlogAgeMs > 0);
    std::int64_t failures = 0;
    for (const auto &[cls, n] : s.failuresByClass)
        failures += n;
    QCOMPARE(failures, 4); // rate_limited, transient, validation, unknown_outcome

    f.claimNew("run-7400:pay", "run-7400");
    m.refresh();
    QTRY_COMPARE(m.snapshot().leasesLive, 3);
}

QTEST_MAIN(TestOverviewModel)
#include "tst_overviewmodel.moc"
