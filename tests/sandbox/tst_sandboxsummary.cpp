// SPDX-License-Identifier: Apache-2.0
// The typed summary of a sandbox report (SandboxSummary, what the console's sandbox panel shows)
// read from what the runners report: the thread mode on the embedded ledger (a guarded run with
// faults, a naive one whose violations are listed, a cancelled one) and the process mode through
// the real `idempo worker` binary; a report without a member the summary needs is refused.
#include <spdlog/spdlog.h>

#include <QTemporaryDir>
#include <QtTest>

#include "error.h"
#include "faultplan.h"
#include "processsandboxrunner.h"
#include "sandboxreport.h"
#include "sandboxrunner.h"
#include "scenario.h"
#include "sqliteledgerstore.h"

using namespace idempo;
using namespace idempo::sandbox;

namespace {

SandboxOptions optionsFor(const std::string &scenario, const std::string &faults, int runs,
                          std::uint64_t seed, const std::string &ns)
{
    SandboxOptions options;
    options.scenarioLabel = scenario;
    if (scenario == "all") {
        for (const Scenario &s : Scenario::all())
            options.scenarios.push_back(&s);
    } else {
        options.scenarios.push_back(Scenario::find(scenario));
    }
    options.runs = runs;
    options.workers = 2;
    options.faults = FaultPlan::parse(faults, seed);
    options.ns = ns;
    return options;
}

/// A run of the thread mode on a fresh embedded ledger.
nlohmann::json threadRun(SandboxOptions options)
{
    QTemporaryDir dir;
    auto clock = std::make_shared<ManualClock>();
    SqliteLedgerStore::Options store;
    store.synchronous = QStringLiteral("NORMAL");
    return SandboxRunner(std::make_shared<SqliteLedgerStore>(
                             dir.filePath(QStringLiteral("ledger.db")), clock, store),
                         clock, std::move(options))
        .run();
}

std::map<std::string, std::int64_t> countsIn(const nlohmann::json &report, const char *name)
{
    return report.at(name).get<std::map<std::string, std::int64_t>>();
}

/// Every field of `s` is what `report` says.
void expectSummaryOf(const SandboxSummary &s, const nlohmann::json &report)
{
    const nlohmann::json &invariants = report.at("invariants");
    QCOMPARE(s.ok, invariants.at("ok").get<bool>());
    QCOMPARE(s.invariants.size(), invariants.at("invariants").size());
    for (std::size_t n = 0; n < s.invariants.size(); ++n) {
        const SandboxSummary::Invariant &i = s.invariants[n];
        const nlohmann::json &j = invariants.at("invariants").at(n);
        QCOMPARE(i.name, j.at("name").get<std::string>());
        QCOMPARE(i.ok, j.at("ok").get<bool>());
        QCOMPARE(i.checked, j.at("checked").get<std::int64_t>());
        QCOMPARE(i.violations, j.at("violations").get<std::int64_t>());
        QCOMPARE(i.examples.size(), j.at("examples").size());
        for (std::size_t e = 0; e < i.examples.size(); ++e) {
            QCOMPARE(i.examples[e].operation,
                     j.at("examples").at(e).at("operation").get<std::string>());
            QCOMPARE(i.examples[e].message,
                     j.at("examples").at(e).at("message").get<std::string>());
        }
    }
    QCOMPARE(s.runs, report.at("runs").get<int>());
    QCOMPARE(s.seed, report.at("seed").get<std::uint64_t>());
    QCOMPARE(s.deliveries, report.at("deliveries").get<std::int64_t>());
    QCOMPARE(s.duplicatesSuppressed, countsIn(report, "duplicates_suppressed"));
    QCOMPARE(s.providerEffects, countsIn(report, "provider_effects"));
    QCOMPARE(s.duplicateEffects, report.at("duplicate_effects").get<std::int64_t>());
    QCOMPARE(s.faultsInjected, countsIn(report, "faults_injected"));
    QCOMPARE(s.retries, report.at("retries").get<std::int64_t>());
    QCOMPARE(s.crashes, report.at("crashes").get<std::int64_t>());
    QCOMPARE(s.fencedWrites, report.at("fenced_writes").get<std::int64_t>());
    QCOMPARE(s.approvalsPending, report.at("approvals_pending").get<std::int64_t>());
    QCOMPARE(s.confirmationsPending, report.at("confirmations_pending").get<std::int64_t>());
    QCOMPARE(s.virtualSeconds.has_value(), report.contains("virtual_seconds"));
    if (s.virtualSeconds)
        QCOMPARE(*s.virtualSeconds, report.at("virtual_seconds").get<std::int64_t>());
    QCOMPARE(s.wallSeconds, report.at("timing").at("wall_s").get<double>());
    QCOMPARE(s.cancelled, report.at("cancelled").get<bool>());
}

/// The message of the Error read() throws for `report`; empty when it throws none.
std::string refusalOf(const nlohmann::json &report)
{
    try {
        SandboxSummary::read(report);
    } catch (const Error &e) {
        if (e.code() != ErrorCode::InvalidArgument)
            return std::string("not invalid_argument: ") + e.what();
        return e.what();
    }
    return {};
}

} // namespace

class TestSandboxSummary final : public QObject
{
    Q_OBJECT

private:
    /// A guarded thread run with faults: the report every refusal test below spoils.
    nlohmann::json m_report;

private Q_SLOTS:
    void initTestCase()
    {
        spdlog::set_level(spdlog::level::warn);
        m_report = threadRun(optionsFor("all", "duplicate-delivery,crash-after-effect,provider-5xx",
                                        12, 42, "sandbox-summary"));
    }

    void guardedThreadRun()
    {
        const SandboxSummary s = SandboxSummary::read(m_report);
        expectSummaryOf(s, m_report);
        // The run did what the figures are for: counted deliveries, effects and faults.
        QVERIFY(s.ok);
        QCOMPARE(s.runs, 12);
        QCOMPARE(s.seed, std::uint64_t{42});
        QVERIFY(s.deliveries > 12);
        QVERIFY(!s.providerEffects.empty());
        QCOMPARE(s.faultsInjected.size(), std::size_t{3});
        QVERIFY(s.virtualSeconds);
        QVERIFY(!s.cancelled);
        QVERIFY(!s.invariants.empty());
    }

    /// The naive consumer makes duplicates: the summary lists the violating operations.
    void naiveThreadRunListsViolations()
    {
        SandboxOptions options =
            optionsFor("payment-refund", "duplicate-delivery=1", 8, 11, "sandbox-naive");
        options.naive = true;
        const nlohmann::json report = threadRun(std::move(options));
        const SandboxSummary s = SandboxSummary::read(report);
        expectSummaryOf(s, report);
        QVERIFY(!s.ok);
        QVERIFY(s.duplicateEffects > 0);
        const auto broken = std::find_if(s.invariants.begin(), s.invariants.end(),
                                         [](const auto &i) { return !i.ok; });
        QVERIFY(broken != s.invariants.end());
        QVERIFY(broken->violations > 0);
        QVERIFY(!broken->examples.empty());
        QVERIFY(!broken->examples.front().operation.empty());
        QVERIFY(!broken->examples.front().message.empty());
    }

    void cancelledThreadRun()
    {
        SandboxOptions options = optionsFor("invoice-email", "none", 50, 7, "sandbox-cancelled");
        options.cancelled = [] { return true; };
        const nlohmann::json report = threadRun(std::move(options));
        const SandboxSummary s = SandboxSummary::read(report);
        expectSummaryOf(s, report);
        QVERIFY(s.cancelled);
    }

    /// Worker processes of the real binary on the embedded ledger: the report has no virtual
    /// time, and adds fields the summary leaves alone.
    void processRun()
    {
        QTemporaryDir dir;
        ProcessRunOptions process;
        process.ledgerUrl = QStringLiteral("sqlite:") + dir.filePath(QStringLiteral("ledger.db"));
        process.openMode = OpenMode::CreateIfMissing;
        process.program = QStringLiteral(IDEMPO_CLI_PATH);
        process.checkEveryMs = 50;
        process.maxWallMs = 120'000;
        const nlohmann::json report =
            ProcessSandboxRunner(
                optionsFor("payment-refund", "duplicate-delivery", 4, 5, "sandbox-processes"),
                process)
                .run();
        QVERIFY(report.at("processes").get<bool>());
        const SandboxSummary s = SandboxSummary::read(report);
        expectSummaryOf(s, report);
        QVERIFY(s.ok);
        QCOMPARE(s.runs, 4);
        QVERIFY(!s.virtualSeconds);
        QVERIFY(!s.cancelled);
    }

    void malformedReportsAreRefused_data()
    {
        QTest::addColumn<QString>("pointer"); ///< the member spoilt
        QTest::addColumn<QString>("value");   ///< its new value as JSON; empty: removed
        QTest::addColumn<QString>("refusal"); ///< what the message must say
        QTest::addRow("no invariants") << "/invariants"
                                       << ""
                                       << "/invariants is missing";
        QTest::addRow("invariants not an object") << "/invariants"
                                                  << "[]"
                                                  << "/invariants is not an object";
        QTest::addRow("no invariant list") << "/invariants/invariants"
                                           << ""
                                           << "/invariants/invariants is missing";
        QTest::addRow("invariant without name") << "/invariants/invariants/0/name"
                                                << ""
                                                << "/invariants/invariants/0/name is missing";
        QTest::addRow("checked as text") << "/invariants/invariants/1/checked"
                                         << "\"4\""
                                         << "/invariants/invariants/1/checked is not a count";
        QTest::addRow("example without message")
            << "/invariants/invariants/0/examples"
            << R"([{"operation":"r:s"}])"
            << "/invariants/invariants/0/examples/0/message is missing";
        QTest::addRow("ok as a number") << "/invariants/ok"
                                        << "1"
                                        << "/invariants/ok is not true or false";
        QTest::addRow("no deliveries") << "/deliveries"
                                       << ""
                                       << "/deliveries is missing";
        QTest::addRow("negative retries") << "/retries"
                                          << "-1"
                                          << "/retries is not a count";
        QTest::addRow("fractional crashes") << "/crashes"
                                            << "1.5"
                                            << "/crashes is not a count";
        QTest::addRow("effects not an object") << "/provider_effects"
                                               << "[1]"
                                               << "/provider_effects is not an object";
        QTest::addRow("a suppression as text") << "/duplicates_suppressed/replayed"
                                               << "\"x\""
                                               << "/duplicates_suppressed/replayed is not a count";
        QTest::addRow("negative seed") << "/seed"
                                       << "-3"
                                       << "/seed is not a whole number";
        QTest::addRow("virtual time as text") << "/virtual_seconds"
                                              << "\"9\""
                                              << "/virtual_seconds is not a count";
        QTest::addRow("no timing") << "/timing"
                                   << ""
                                   << "/timing is missing";
        QTest::addRow("wall time as text") << "/timing/wall_s"
                                           << "\"1\""
                                           << "/timing/wall_s is not a number";
        QTest::addRow("no cancelled") << "/cancelled"
                                      << ""
                                      << "/cancelled is missing";
        QTest::addRow("runs too large") << "/runs"
                                        << "4294967296"
                                        << "/runs is out of range";
    }

    void malformedReportsAreRefused()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, refusal);
        nlohmann::json report = m_report;
        const nlohmann::json::json_pointer at(pointer.toStdString());
        if (value.isEmpty())
            report.at(at.parent_pointer()).erase(at.back());
        else
            report[at] = nlohmann::json::parse(value.toStdString());
        const std::string message = refusalOf(report);
        QVERIFY2(message.starts_with("malformed sandbox report: "), message.c_str());
        QVERIFY2(message.find(refusal.toStdString()) != std::string::npos, message.c_str());
    }

    void notAnObjectIsRefused()
    {
        for (const nlohmann::json &report : {nlohmann::json(), nlohmann::json::array()}) {
            const std::string message = refusalOf(report);
            QVERIFY2(message == "malformed sandbox report: the report is not an object",
                     message.c_str());
        }
    }

    /// What only one mode reports is not required: without virtual time, there is none.
    void virtualTimeIsOptional()
    {
        nlohmann::json report = m_report;
        report.erase("virtual_seconds");
        QVERIFY(!SandboxSummary::read(report).virtualSeconds);
    }
};

QTEST_GUILESS_MAIN(TestSandboxSummary)
#include "tst_sandboxsummary.moc"
