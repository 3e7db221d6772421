// SPDX-License-Identifier: Apache-2.0
// The sandbox on the embedded ledger: every fault window alone on every scenario keeps the
// invariants; the naive consumer under the same plan makes duplicates the checker catches;
// equal seeds give equal reports; a paused worker that lost its lease is fenced off.
#include <spdlog/spdlog.h>

#include <QtTest>

#include "error.h"
#include "faultplan.h"
#include "invariantchecker.h"
#include "sandboxjournal.h"
#include "sandboxrunner.h"
#include "sqliteledgerstore.h"

using namespace idempo;
using namespace idempo::sandbox;

namespace {

constexpr int Runs = 8;

/// A fresh ledger in a temporary directory with the sandbox's clock.
struct SandboxLedger
{
    QTemporaryDir dir;
    std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
    std::shared_ptr<SqliteLedgerStore> store;

    SandboxLedger()
    {
        SqliteLedgerStore::Options options;
        options.synchronous = QStringLiteral("NORMAL");
        store = std::make_shared<SqliteLedgerStore>(dir.filePath(QStringLiteral("ledger.db")),
                                                    clock, options);
    }

    nlohmann::json run(const std::string &scenario, const std::string &faults, int runs,
                       std::uint64_t seed, bool naive = false, int workers = 2)
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
        options.workers = workers;
        options.faults = FaultPlan::parse(faults, seed);
        options.naive = naive;
        return SandboxRunner(store, clock, options).run();
    }
};

nlohmann::json withoutTiming(nlohmann::json report)
{
    report.erase("timing");
    return report;
}

/// Checks "POINTER=N" (exactly) and "POINTER>N" conditions, separated by ';'.
void expectAll(const nlohmann::json &report, const QString &conditions)
{
    for (const QString &condition : conditions.split(QLatin1Char(';'), Qt::SkipEmptyParts)) {
        const bool greater = condition.contains(QLatin1Char('>'));
        const QStringList parts = condition.split(greater ? QLatin1Char('>') : QLatin1Char('='));
        QCOMPARE(parts.size(), 2);
        const nlohmann::json::json_pointer pointer(parts.at(0).toStdString());
        QVERIFY2(report.contains(pointer), qPrintable(parts.at(0)));
        const std::int64_t actual = report.at(pointer).get<std::int64_t>();
        const std::int64_t wanted = parts.at(1).toLongLong();
        const QByteArray what = condition.toUtf8() + " (actual " + QByteArray::number(actual) + ")";
        QVERIFY2(greater ? actual > wanted : actual == wanted, what.constData());
    }
}

QByteArray failing(const nlohmann::json &report)
{
    return QByteArray::fromStdString(report.at("invariants").dump());
}

} // namespace

class TestSandbox final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { spdlog::set_level(spdlog::level::warn); }

    void faultWindow_data()
    {
        QTest::addColumn<QString>("scenario");
        QTest::addColumn<QString>("faults");
        QTest::addColumn<QString>("expect");
        const QString r = QString::number(Runs);
        // Rows whose outcome the capabilities decide, stated exactly.
        const std::map<std::pair<std::string, std::string>, QString> exact{
            {{"invoice-email", "provider-timeout"},
             QStringLiteral("/confirmations_pending=%1;/provider_effects/mailer=%1").arg(r)},
            {{"invoice-email", "crash-after-effect"},
             QStringLiteral("/confirmations_pending=%1;/provider_effects/mailer=%1").arg(r)},
            {{"invoice-email", "delayed-confirmation"},
             QStringLiteral("/confirmations_pending=%1;/provider_effects/mailer=%1").arg(r)},
            {{"travel-booking", "provider-timeout"},
             QStringLiteral("/reconciliations/effect_found=%1;/states/succeeded=%2;/"
                            "provider_effects/travel-booking=%1")
                 .arg(r, QString::number(2 * Runs))},
            {{"travel-booking", "crash-before-dispatch"},
             QStringLiteral("/reconciliations/no_effect_dispatched_again=%1;/states/succeeded=%2")
                 .arg(r, QString::number(2 * Runs))},
            {{"travel-booking", "delayed-confirmation"},
             QStringLiteral("/reconciliations/effect_found=%1;/states/succeeded=%2")
                 .arg(r, QString::number(2 * Runs))},
            {{"payment-refund", "provider-rejection"},
             QStringLiteral("/states/failed_terminal=%1").arg(r)},
            {{"kyc-onboarding", "crash-after-record"},
             QStringLiteral("/duplicates_suppressed/replayed>0")},
            {{"kyc-onboarding", "duplicate-delivery"},
             QStringLiteral("/duplicates_suppressed/replayed>0")},
            {{"kyc-onboarding", "two-planners"},
             QStringLiteral("/duplicates_suppressed/in_progress>0")},
            {{"kyc-onboarding", "provider-429"}, QStringLiteral("/retries>0")},
            {{"kyc-onboarding", "crash-after-effect"},
             QStringLiteral("/reconciliations/effect_found>0")},
        };
        for (const Scenario &s : Scenario::all()) {
            for (int f = 0; f < FaultCount; ++f) {
                const auto fault = static_cast<Fault>(f);
                if (fault == Fault::ClockSkew)
                    continue; // on its own it changes nothing; see clockSkewChangesNothing()
                const std::string name(FaultPlan::name(fault));
                const auto found = exact.find({s.name(), name});
                QString expect =
                    QStringLiteral("/duplicate_effects=0;/dead_letters=0;/faults_injected/%1>0")
                        .arg(QString::fromStdString(name));
                if (found != exact.end())
                    expect += QLatin1Char(';') + found->second;
                QTest::addRow("%s/%s", s.name().c_str(), name.c_str())
                    << QString::fromStdString(s.name()) << QString::fromStdString(name + "=1")
                    << expect;
            }
        }
    }

    void faultWindow()
    {
        QFETCH(QString, scenario);
        QFETCH(QString, faults);
        QFETCH(QString, expect);
        SandboxLedger ledger;
        const nlohmann::json report =
            ledger.run(scenario.toStdString(), faults.toStdString(), Runs, 11);
        QVERIFY2(report.at("invariants").at("ok").get<bool>(), failing(report).constData());
        expectAll(report, expect);
        QCOMPARE(report.at("model_calls_after_write_boundary").get<int>(), 0);
    }

    void naiveMakesDuplicates_data()
    {
        QTest::addColumn<QString>("scenario");
        QTest::addColumn<QString>("faults");
        for (const Scenario &s : Scenario::all()) {
            for (const char *faults : {"duplicate-delivery=1", "crash-after-effect=1",
                                       "provider-timeout=1", "paused-worker=1", "two-planners=1"})
                QTest::addRow("%s/%s", s.name().c_str(), faults)
                    << QString::fromStdString(s.name()) << QString::fromLatin1(faults);
        }
    }

    /// The same plan without the idempotency layer: duplicate effects, each caught and named.
    void naiveMakesDuplicates()
    {
        QFETCH(QString, scenario);
        QFETCH(QString, faults);
        SandboxLedger naive;
        const nlohmann::json report =
            naive.run(scenario.toStdString(), faults.toStdString(), Runs, 11, true);
        QVERIFY(report.at("duplicate_effects").get<int>() > 0);
        QVERIFY(!report.at("invariants").at("ok").get<bool>());
        const nlohmann::json &once = report.at("invariants").at("invariants").at(0);
        QCOMPARE(once.at("name").get<std::string>(), "at_most_one_effect");
        QVERIFY(once.at("violations").get<int>() > 0);
        QVERIFY(once.at("examples").at(0).at("operation").get<std::string>().find(':') !=
                std::string::npos);

        SandboxLedger engine;
        const nlohmann::json guarded =
            engine.run(scenario.toStdString(), faults.toStdString(), Runs, 11);
        QVERIFY2(guarded.at("invariants").at("ok").get<bool>(), failing(guarded).constData());
        QCOMPARE(guarded.at("duplicate_effects").get<int>(), 0);
    }

    void sameSeedSameReport_data()
    {
        QTest::addColumn<QString>("scenario");
        QTest::addColumn<bool>("naive");
        QTest::addRow("kyc-onboarding") << QStringLiteral("kyc-onboarding") << false;
        QTest::addRow("all") << QStringLiteral("all") << false;
        QTest::addRow("all naive") << QStringLiteral("all") << true;
    }

    void sameSeedSameReport()
    {
        QFETCH(QString, scenario);
        QFETCH(bool, naive);
        SandboxLedger first;
        SandboxLedger second;
        const nlohmann::json a = first.run(scenario.toStdString(), "all", 300, 42, naive, 2);
        const nlohmann::json b = second.run(scenario.toStdString(), "all", 300, 42, naive, 2);
        QCOMPARE(QByteArray::fromStdString(withoutTiming(a).dump()),
                 QByteArray::fromStdString(withoutTiming(b).dump()));
        QVERIFY(a.at("deliveries").get<int>() > 300);
        if (!naive)
            QVERIFY2(a.at("invariants").at("ok").get<bool>(), failing(a).constData());

        SandboxLedger other;
        const nlohmann::json c = other.run(scenario.toStdString(), "all", 300, 43, naive, 2);
        QVERIFY(withoutTiming(a).dump() != withoutTiming(c).dump());
    }

    /// Workers' own clocks never decide anything: the ledger's clock judges every lease.
    void clockSkewChangesNothing()
    {
        SandboxLedger plain;
        SandboxLedger skewed;
        const std::string faults =
            "crash-before-dispatch,paused-worker=0.2,provider-timeout,duplicate-delivery";
        nlohmann::json a = withoutTiming(plain.run("all", faults, 200, 5, false, 3));
        nlohmann::json b =
            withoutTiming(skewed.run("all", faults + ",clock-skew", 200, 5, false, 3));
        QVERIFY(b.at("faults_injected").at("clock-skew").get<int>() > 0);
        for (nlohmann::json *r : {&a, &b}) {
            r->erase("faults");
            r->at("faults_injected").erase("clock-skew");
        }
        QCOMPARE(QByteArray::fromStdString(a.dump()), QByteArray::fromStdString(b.dump()));
    }

    /// A worker that stalls past its lease and resumes is refused (stale_lease) and performs
    /// nothing a second time, whether it stalled before or after the provider call.
    void pausedWorkerIsFenced_data()
    {
        QTest::addColumn<QString>("scenario");
        for (const Scenario &s : Scenario::all())
            QTest::addRow("%s", s.name().c_str()) << QString::fromStdString(s.name());
    }

    void pausedWorkerIsFenced()
    {
        QFETCH(QString, scenario);
        SandboxLedger ledger;
        const nlohmann::json report = ledger.run(scenario.toStdString(), "paused-worker=1", 16, 3);
        QVERIFY2(report.at("invariants").at("ok").get<bool>(), failing(report).constData());
        const int paused = report.at("faults_injected").at("paused-worker").get<int>();
        QVERIFY(paused > 0);
        QCOMPARE(report.at("fenced_writes").get<int>(), paused);
        QCOMPARE(report.at("duplicate_effects").get<int>(), 0);
        // The protected writes' lapsed leases were revoked, each under a new token.
        const auto events = ledger.store->list({});
        bool revoked = false;
        for (const Operation &op : events) {
            for (const OperationEvent &e : ledger.store->history(op.ns, op.key))
                revoked = revoked || (e.fromState == OperationState::Dispatching &&
                                      e.toState == OperationState::UnknownOutcome);
        }
        QVERIFY(revoked);
    }

    /// A crash window counted in faults_injected is a worker that died: a crash-after-effect
    /// window that opens on a provider call that failed (here a 503) must not be counted as a
    /// crash fault that never happened.
    void crashFaultsCountedAreCrashes()
    {
        SandboxLedger ledger;
        const nlohmann::json report =
            ledger.run("payment-refund", "crash-after-effect=1,provider-5xx=0.5", 40, 1);
        QVERIFY2(report.at("invariants").at("ok").get<bool>(), failing(report).constData());
        QVERIFY(report.at("faults_injected").at("provider-5xx").get<int>() > 0);
        QCOMPARE(report.at("faults_injected").at("crash-after-effect").get<int>(),
                 report.at("crashes").get<int>());
    }

    /// The checker reads what is on disk: a forged second effect and a forged receipt are
    /// named by operation.
    void checkerNamesForgedViolations()
    {
        SandboxLedger ledger;
        QVERIFY(ledger.run("travel-booking", "none", 2, 9).at("invariants").at("ok").get<bool>());
        const auto journal = SandboxJournal::open(*ledger.store);
        InvariantChecker checker(*ledger.store, *journal);
        const std::vector<Effect> effects = journal->effects("sandbox");
        QCOMPARE(effects.size(), std::size_t(2));
        Effect again = effects.front();
        again.effectId += "-again";
        journal->addEffects({again});
        const auto results = checker.check("sandbox");
        QVERIFY(!InvariantChecker::allHold(results));
        QCOMPARE(results.at(0).name, std::string("at_most_one_effect"));
        QCOMPARE(results.at(0).violations.size(), std::size_t(1));
        QCOMPARE(results.at(0).violations.at(0).operation, again.operationKey);
        // The forged effect is not the one the ledger's receipt names: it was never recorded.
        QCOMPARE(results.at(2).name, std::string("effect_recorded"));
        QCOMPARE(results.at(2).violations.size(), std::size_t(1));
        QCOMPARE(results.at(2).violations.at(0).operation, again.operationKey);
        QVERIFY(results.at(2).violations.at(0).message.find(again.effectId) != std::string::npos);
        const QString text = QString::fromStdString(InvariantChecker::toText(results));
        QVERIFY(text.contains(QString::fromStdString(again.operationKey)));
    }

    void faultListParsing()
    {
        const FaultPlan all = FaultPlan::parse("all", 1);
        for (int f = 0; f < FaultCount; ++f)
            QCOMPARE(all.rate(static_cast<Fault>(f)),
                     FaultPlan::defaultRate(static_cast<Fault>(f)));
        const FaultPlan some = FaultPlan::parse("provider-429=0.5,two-planners", 1);
        QCOMPARE(some.rate(Fault::Provider429), 0.5);
        QCOMPARE(some.rate(Fault::TwoPlanners), FaultPlan::defaultRate(Fault::TwoPlanners));
        QVERIFY(!some.enabled(Fault::Provider5xx));
        QVERIFY_THROWS_EXCEPTION(Error, FaultPlan::parse("meteor-strike", 1));
        QVERIFY_THROWS_EXCEPTION(Error, FaultPlan::parse("provider-429=2", 1));
        QVERIFY_THROWS_EXCEPTION(Error, FaultPlan::parse("provider-429=x", 1));
        QCOMPARE(FaultPlan(7).uniform("run", "what", 3), FaultPlan(7).uniform("run", "what", 3));
        QVERIFY(FaultPlan(7).uniform("run", "what", 3) != FaultPlan(8).uniform("run", "what", 3));
    }
};

QTEST_GUILESS_MAIN(TestSandbox)
#include "tst_sandbox.moc"
