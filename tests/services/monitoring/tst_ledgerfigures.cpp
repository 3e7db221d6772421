// SPDX-License-Identifier: Apache-2.0
// The figures monitoring and the console read (ledgerfigures.h) on a ledger built with known
// ages, on every store, and their Prometheus text exposition (metricsexposition.h).
#include <QtTest>

#include "ledgercontracthelpers.h"
#include "ledgerfigures.h"
#include "metricsexposition.h"

using namespace idempo;
using idempo::test::claimInput;
using idempo::test::kNs;
using idempo::test::LedgerFixture;
using idempo::test::reach;

namespace {

using Ms = std::optional<std::int64_t>;

/// Three transient failures in run-7: three failed_retryable records, and the run halts on its
/// default failed-dispatch budget (3).
void haltRun(LedgerFixture &f)
{
    for (const char *step : {"a", "b", "c"}) {
        ClaimInput in = claimInput(std::string("run-7:") + step);
        in.runId = "run-7";
        in.stepId = step;
        const ClaimResult r = f.engine().claim(in);
        QCOMPARE(r.outcome, ClaimOutcome::Claimed);
        f.engine().fail(kNs, in.key, r.operation.fencingToken, ErrorClass::Transient, "503");
    }
}

/// The ledger of known ages: on the fixture's clock (t = 0 at the start) three finals that took
/// 2 s, 10 s and 0 s, an unknown_outcome since t = 12 s, a confirmation since t = 72 s, three
/// retries and a halted run since t = 73 s, two suppressions at t = 73 s, a lease lapsed at
/// t = 78 s and one live; the clock ends at t = 80 s.
void build(LedgerFixture &f)
{
    Engine &e = f.engine();
    const ClaimResult pay1 = e.claim(claimInput("pay:1"));
    f.advanceMs(2'000);
    e.complete(kNs, "pay:1", pay1.operation.fencingToken, R"({"ok":true})", "");
    const ClaimResult pay2 = e.claim(claimInput("pay:2"));
    f.advanceMs(10'000);
    e.complete(kNs, "pay:2", pay2.operation.fencingToken, R"({"ok":true})", "");
    reach(f, "mail:1", OperationState::FailedTerminal);
    reach(f, "book:1", OperationState::UnknownOutcome);
    f.advanceMs(60'000);
    reach(f, "kyc:1", OperationState::ConfirmationRequired);
    f.advanceMs(1'000);
    haltRun(f);
    ClaimInput shortLease = claimInput("lease:1");
    shortLease.leaseMs = 5'000;
    QCOMPARE(e.claim(shortLease).outcome, ClaimOutcome::Claimed);
    ClaimInput longLease = claimInput("lease:2");
    longLease.leaseMs = 600'000;
    QCOMPARE(e.claim(longLease).outcome, ClaimOutcome::Claimed);
    QCOMPARE(e.claim(claimInput("pay:1")).outcome, ClaimOutcome::Replayed);
    QCOMPARE(e.claim(claimInput("pay:1", R"({"amount":999})")).outcome,
             ClaimOutcome::PayloadMismatch);
    ClaimInput elsewhere = claimInput("pay:1");
    elsewhere.ns = "other";
    QCOMPARE(e.claim(elsewhere).outcome, ClaimOutcome::Claimed);
    f.advanceMs(7'000);
}

} // namespace

class TestLedgerFigures final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void figuresOfALedgerWithKnownAges()
    {
        LedgerFixture f;
        const std::int64_t t0 = f.store().nowMs();
        build(f);
        const LedgerFigures g = LedgerFigures::read(f.store(), kNs);
        QCOMPARE(g.metrics.nowMs, t0 + 80'000);
        QCOMPARE(g.operations, std::int64_t(10));
        QCOMPARE(g.count(OperationState::Succeeded), std::int64_t(2));
        QCOMPARE(g.count(OperationState::FailedTerminal), std::int64_t(1));
        QCOMPARE(g.count(OperationState::Dispatching), std::int64_t(2));
        QCOMPARE(g.oldestUnknownOutcomeAgeMs, Ms(68'000));
        QCOMPARE(g.oldestConfirmationAgeMs, Ms(8'000));
        QCOMPARE(g.metrics.retriesWaiting, std::int64_t(3));
        QCOMPARE(g.oldestRetryAgeMs, Ms(7'000));
        QCOMPARE(g.metrics.leasesLive, std::int64_t(1));
        QCOMPARE(g.metrics.leasesLapsed, std::int64_t(1));
        QCOMPARE(g.suppressionsTotal, std::int64_t(2));
        QCOMPARE(g.metrics.suppressionsInWindow, std::int64_t(2));
        QCOMPARE(g.metrics.suppressionsRecent, std::int64_t(2));
        QCOMPARE(g.suppressionRatePerSecond, 2.0 / 300.0);
        QCOMPARE(g.metrics.finalsInWindow, std::int64_t(3));
        QCOMPARE(g.metrics.finalDurationsMs.size(), std::size_t(3));
        QCOMPARE(g.timeToFinalP50Ms, Ms(2'000));
        QCOMPARE(g.timeToFinalP95Ms, Ms(10'000));
        QCOMPARE(g.timeToFinalMaxMs, Ms(10'000));
        QCOMPARE(g.timeToFinalBuckets[0], 1); // 0 s
        QCOMPARE(g.timeToFinalBuckets[1], 1); // 2 s
        QCOMPARE(g.timeToFinalBuckets[2], 1); // 10 s
        QCOMPARE(g.metrics.runsHalted, std::int64_t(1));

        const LedgerFigures other = LedgerFigures::read(f.store(), "other");
        QCOMPARE(other.operations, std::int64_t(1));
        QCOMPARE(other.metrics.runsHalted, std::int64_t(0));
        QCOMPARE(other.oldestUnknownOutcomeAgeMs, Ms());
        QCOMPARE(LedgerFigures::read(f.store(), {}).operations, std::int64_t(11));
        QCOMPARE(f.store().namespaces(), (std::vector<std::string>{"default", "other"}));
    }

    void windowedFiguresLeaveTheWindow()
    {
        LedgerFixture f;
        build(f);
        f.advanceMs(LedgerMetrics::WindowMs - 10'000 +
                    1); // the window now starts at t = 70 s + 1 ms
        const LedgerFigures g = LedgerFigures::read(f.store(), kNs);
        QCOMPARE(g.metrics.finalsInWindow, std::int64_t(0));
        QVERIFY(g.metrics.finalDurationsMs.empty());
        QCOMPARE(g.timeToFinalP50Ms, Ms());
        QCOMPARE(g.metrics.suppressionsInWindow, std::int64_t(2));
        QCOMPARE(g.metrics.suppressionsRecent, std::int64_t(0));
        QCOMPARE(g.suppressionRatePerSecond, 0.0);
        QCOMPARE(g.metrics.leasesLive, std::int64_t(0));
        QCOMPARE(g.metrics.leasesLapsed, std::int64_t(2));
        QCOMPARE(g.oldestUnknownOutcomeAgeMs, Ms(68'000 + LedgerMetrics::WindowMs - 10'000 + 1));
    }

    void expositionInBothFormats()
    {
        LedgerFixture f;
        build(f);
        const std::string ledger = "sqlite:/tmp/a \"b\"\\c\nd.db";
        const std::vector<LedgerFigures> figures{LedgerFigures::read(f.store(), kNs)};
        AuditVerify::Result audit;
        audit.records = 4;
        const std::string om = MetricsExposition::render(MetricsExposition::Format::OpenMetrics,
                                                         ledger, figures, audit);
        // The ledger's name quoted as the text format says: \" for ", \\ for \, \n for a line feed.
        const std::string quoted = "\"sqlite:/tmp/a \\\"b\\\"\\\\c\\nd.db\"";
        const std::string labels = "{namespace=\"default\",ledger=" + quoted;
        QVERIFY(om.ends_with("\n# EOF\n"));
        for (const std::string &line : std::vector<std::string>{
                 "# TYPE idempo_suppressions counter",
                 "idempo_suppressions_total" + labels + R"(,outcome="replayed"} 1)",
                 "idempo_oldest_unknown_outcome_age_seconds" + labels + "} 68",
                 "idempo_oldest_confirmation_age_seconds" + labels + "} 8",
                 "idempo_oldest_retry_age_seconds" + labels + "} 7",
                 "idempo_time_to_final_seconds" + labels + R"(,quantile="0.5"} 2)",
                 "idempo_time_to_final_seconds" + labels + R"(,quantile="1"} 10)",
                 "idempo_leases_lapsed" + labels + "} 1", "idempo_runs_halted" + labels + "} 1",
                 "idempo_operations" + labels + R"(,state="dispatching"} 2)",
                 "idempo_audit_chain_ok{ledger=" + quoted + "} 1"})
            QVERIFY2(om.find("\n" + line + "\n") != std::string::npos, line.c_str());

        const std::string prom = MetricsExposition::render(MetricsExposition::Format::Prometheus,
                                                           ledger, figures, audit);
        QVERIFY(prom.find("# TYPE idempo_suppressions_total counter\n") != std::string::npos);
        QVERIFY(prom.find("# EOF") == std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestLedgerFigures)
#include "tst_ledgerfigures.moc"
