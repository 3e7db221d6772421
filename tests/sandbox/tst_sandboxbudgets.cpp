// SPDX-License-Identifier: Apache-2.0
// A provider that degrades to 100 % 5xx while the planner keeps re-planning: with run budgets
// every run halts after its failed-dispatch budget and the provider sees at most that many calls
// per run; the naive consumer under the same plan shows the retry storm.
#include <set>

#include <spdlog/spdlog.h>

#include <QtTest>

#include "faultplan.h"
#include "invariantchecker.h"
#include "sandboxrunner.h"
#include "sqliteledgerstore.h"

using namespace idempo;
using namespace idempo::sandbox;

namespace {

constexpr int Runs = 6;

nlohmann::json runOutage(const std::string &scenario, bool naive)
{
    QTemporaryDir dir;
    auto clock = std::make_shared<ManualClock>();
    SqliteLedgerStore::Options storeOptions;
    storeOptions.synchronous = QStringLiteral("NORMAL");
    auto store = std::make_shared<SqliteLedgerStore>(dir.filePath(QStringLiteral("ledger.db")),
                                                     clock, storeOptions);
    SandboxOptions options;
    options.scenarioLabel = scenario;
    options.scenarios.push_back(Scenario::find(scenario));
    options.runs = Runs;
    options.workers = 2;
    options.faults = FaultPlan::parse("provider-outage=1", 11);
    options.naive = naive;
    options.maxVirtualMs = 120'000; // two minutes of outage
    return SandboxRunner(store, clock, options).run();
}

} // namespace

class TestSandboxBudgets final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { spdlog::set_level(spdlog::level::warn); }

    void outageHaltsEveryRun_data()
    {
        QTest::addColumn<QString>("scenario");
        for (const Scenario &s : Scenario::all())
            QTest::newRow(s.name().c_str()) << QString::fromStdString(s.name());
    }

    void outageHaltsEveryRun()
    {
        QFETCH(QString, scenario);
        const nlohmann::json engine = runOutage(scenario.toStdString(), false);
        QVERIFY2(engine.at("invariants").at("ok").get<bool>(),
                 engine.at("invariants").dump().c_str());
        QCOMPARE(engine.at("runs_halted").get<int>(), Runs);
        QCOMPARE(engine.at("faults_injected").at("provider-outage").get<int>(), Runs);
        // The default budget: three failed dispatches per run, so three calls at most.
        const std::int64_t most =
            engine.at("provider_calls").at("most_per_run").get<std::int64_t>();
        QVERIFY2(most <= 3, engine.at("provider_calls").dump().c_str());
        QCOMPARE(engine.at("provider_calls").at("total").get<std::int64_t>(), 3 * Runs);
        QVERIFY(engine.at("duplicates_suppressed").at("budget_exhausted").get<int>() >= Runs);
        QCOMPARE(engine.at("duplicate_effects").get<int>(), 0);
        std::set<std::string> names;
        for (const nlohmann::json &i : engine.at("invariants").at("invariants"))
            names.insert(i.at("name").get<std::string>());
        QVERIFY(names.count("no_dispatch_after_halt"));
        QVERIFY(names.count("spend_within_cap"));

        const nlohmann::json naive = runOutage(scenario.toStdString(), true);
        const std::int64_t storm =
            naive.at("provider_calls").at("most_per_run").get<std::int64_t>();
        QVERIFY2(storm > 5 * most, naive.at("provider_calls").dump().c_str());
    }
};

QTEST_GUILESS_MAIN(TestSandboxBudgets)
#include "tst_sandboxbudgets.moc"
