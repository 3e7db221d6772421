// SPDX-License-Identifier: Apache-2.0
// Run budgets (runbudget.h), through the engine: one suite, run against every store. Each budget
// at its limit and one past it, workers racing the last unit, the no-progress sweep on the
// ledger's clock, and what a halted run still answers.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <thread>
#include <tuple>

#include <QtTest>

#include "error.h"
#include "errorof.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"

using namespace idempo;
using idempo::test::errorOf;
using idempo::test::LedgerFixture;

namespace {

const std::string kNs = "default";
const std::string kRun = "run-7";

ClaimInput inRun(const std::string &step, const std::string &run = kRun)
{
    ClaimInput in;
    in.ns = kNs;
    in.key = run + ":" + step;
    in.runId = run;
    in.stepId = step;
    in.payloadJson = R"({"step":")" + step + R"("})";
    in.owner = "worker-a";
    return in;
}

ClaimInput withCost(ClaimInput in, std::int64_t minor, const std::string &currency = "EUR")
{
    in.cost = Amount{minor, currency};
    return in;
}

void setDefault(LedgerStore &store, std::string_view name, const std::string &value)
{
    GuardSettingCommand command(store, store.actor(), std::string(name), value,
                                "budget policy for agent runs");
    const std::vector<std::string> problems = command.validate();
    QVERIFY2(problems.empty(), problems.empty() ? "" : problems.front().c_str());
    command.execute();
}

/// Claims `step` and fails the dispatch with a transient error: one failed dispatch.
void failedDispatch(LedgerFixture &f, const std::string &step)
{
    const ClaimResult r = f.engine().claim(inRun(step));
    QCOMPARE(r.outcome, ClaimOutcome::Claimed);
    f.engine().fail(kNs, r.operation.key, r.operation.fencingToken, ErrorClass::Transient, "503");
}

} // namespace

class TestRunBudgetContract final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void firstClaimCreatesTheRunWithDefaults()
    {
        LedgerFixture f;
        QVERIFY(!f.store().findRun(kNs, kRun));
        ClaimInput outside = inRun("lookup");
        outside.runId.clear();
        f.engine().claim(outside);
        QVERIFY(f.store().listRuns({}).empty());

        const std::int64_t t0 = f.store().nowMs();
        QCOMPARE(f.engine().claim(inRun("provision")).outcome, ClaimOutcome::Claimed);
        const std::optional<RunRecord> run = f.store().findRun(kNs, kRun);
        QVERIFY(run);
        QCOMPARE(run->state, RunState::Active);
        QCOMPARE(run->budgets, RunBudgets{});
        QCOMPARE(run->budgets.failedDispatches, std::optional<std::int64_t>(3));
        QCOMPARE(run->budgets.noProgressMs, std::optional<std::int64_t>(600'000));
        QCOMPARE(run->failedDispatches, std::int64_t(0));
        QVERIFY(run->lastProgressAtMs >= t0);
        QCOMPARE(f.store().listRuns({}).size(), std::size_t(1));
    }

    void findRunsReadsAPageOfRunsAtOnce()
    {
        LedgerFixture f;
        f.engine().claim(inRun("a", "run-1"));
        f.engine().claim(inRun("a", "run-2"));
        ClaimInput elsewhere = inRun("a", "run-1");
        elsewhere.ns = "other";
        f.engine().claim(elsewhere);
        QVERIFY(f.store().findRuns({}).empty());

        std::vector<RunRecord> found = f.store().findRuns(
            {{kNs, "run-1"}, {"other", "run-1"}, {kNs, "nosuch"}, {"other", "run-2"}});
        std::sort(found.begin(), found.end(), [](const RunRecord &a, const RunRecord &b) {
            return std::tie(a.ns, a.runId) < std::tie(b.ns, b.runId);
        });
        QCOMPARE(found.size(), std::size_t(2));
        QCOMPARE(found[0], *f.store().findRun(kNs, "run-1"));
        QCOMPARE(found[1], *f.store().findRun("other", "run-1"));
    }

    void aRetryNamingAnotherRunOrNoneStaysInTheHaltedRun()
    {
        LedgerFixture f;
        failedDispatch(f, "a");
        failedDispatch(f, "b");
        failedDispatch(f, "c");
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Halted);
        f.advanceMs(300'000); // past every retry's backoff
        for (const std::string &named : {std::string(), std::string("run-other")}) {
            ClaimInput retry = inRun("a");
            retry.runId = named;
            const ClaimResult r = f.engine().claim(retry);
            QCOMPARE(r.outcome, ClaimOutcome::BudgetExhausted);
            QCOMPARE(r.operation.state, OperationState::FailedRetryable);
            QCOMPARE(r.operation.attempt, 1);
        }
        QCOMPARE(f.store().findRun(kNs, kRun)->failedDispatches, std::int64_t(3));
        QVERIFY(!f.store().findRun(kNs, "run-other"));
    }

    void aRunWithEveryOperationFinalIsReportedFinished()
    {
        LedgerFixture f;
        const ClaimResult a = f.engine().claim(inRun("a"));
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Active);
        f.engine().complete(kNs, a.operation.key, a.operation.fencingToken, "{}", "");
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Finished);
        RunFilter finished;
        finished.state = RunState::Finished;
        RunFilter active;
        active.state = RunState::Active;
        QCOMPARE(f.store().listRuns(finished).size(), std::size_t(1));
        QVERIFY(f.store().listRuns(active).empty());

        // Its next claim goes on: the ledger stored it as active all along.
        QCOMPARE(f.engine().claim(inRun("b")).outcome, ClaimOutcome::Claimed);
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Active);
        QCOMPARE(f.store().listRuns(active).size(), std::size_t(1));
        QVERIFY(f.store().listRuns(finished).empty());

        // A run halted on terminal failures stays halted, though nothing of it is open.
        const std::string other = "run-8";
        for (const std::string step : {"x", "y", "z"}) {
            const ClaimResult r = f.engine().claim(inRun(step, other));
            QCOMPARE(r.outcome, ClaimOutcome::Claimed);
            f.engine().fail(kNs, r.operation.key, r.operation.fencingToken, ErrorClass::Validation,
                            "refused");
        }
        QCOMPARE(f.store().findRun(kNs, other)->state, RunState::Halted);
        RunFilter halted;
        halted.state = RunState::Halted;
        QCOMPARE(f.store().listRuns(halted).size(), std::size_t(1));
    }

    void defaultsComeFromTheAuditedGuardSettings()
    {
        LedgerFixture f;
        setDefault(f.store(), RunFailedDispatchesSetting, "5");
        setDefault(f.store(), RunNoProgressSetting, "");
        setDefault(f.store(), RunSpendCapSetting, "25.50 EUR");
        setDefault(f.store(), RunTokenCapSetting, "1000");
        f.engine().claim(inRun("plan"));
        const RunRecord run = *f.store().findRun(kNs, kRun);
        QCOMPARE(run.budgets.failedDispatches, std::optional<std::int64_t>(5));
        QVERIFY(!run.budgets.noProgressMs);
        QCOMPARE(run.budgets.spend, std::optional<Amount>(Amount{2550, "EUR"}));
        QCOMPARE(run.budgets.tokens, std::optional<std::int64_t>(1000));
        const auto audit = f.store().auditLog(0, 100);
        QCOMPARE(audit.size(), std::size_t(4));
        QCOMPARE(audit.back().entry.target, std::string("setting:run_token_cap"));

        for (const auto &[name, value] : std::vector<std::pair<std::string_view, std::string>>{
                 {RunFailedDispatchesSetting, "0"},
                 {RunNoProgressSetting, "-5"},
                 {RunTokenCapSetting, "1e3"},
                 {RunSpendCapSetting, "10 euro"}}) {
            GuardSettingCommand bad(f.store(), f.store().actor(), std::string(name), value, "typo");
            const std::vector<std::string> problems = bad.validate();
            QCOMPARE(problems.size(), std::size_t(1));
            QVERIFY2(problems.front().find(value) != std::string::npos, problems.front().c_str());
            QCOMPARE(errorOf([&] { bad.execute(); }), ErrorCode::InvalidArgument);
        }
        QCOMPARE(f.store().auditLog(0, 100).size(), std::size_t(4));
    }

    void failedDispatchesHaltAtTheLimit()
    {
        LedgerFixture f;
        failedDispatch(f, "a");
        failedDispatch(f, "b");
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Active);
        // The third dispatch is within the budget; its failure uses the last unit and halts.
        failedDispatch(f, "c");
        const RunRecord halted = *f.store().findRun(kNs, kRun);
        QCOMPARE(halted.state, RunState::Halted);
        QCOMPARE(halted.failedDispatches, std::int64_t(3));
        QCOMPARE(halted.haltBudget, std::optional(BudgetKind::FailedDispatches));
        QCOMPARE(halted.haltDetail, std::string("3 failed dispatches of 3"));

        // One over: neither a retry nor a new step dispatches, and nothing about them changes.
        f.advanceMs(20'000);
        const Operation before = *f.store().find(kNs, kRun + ":a");
        const ClaimResult retry = f.engine().claim(inRun("a"));
        QCOMPARE(retry.outcome, ClaimOutcome::BudgetExhausted);
        QVERIFY(retry.exhausted);
        QCOMPARE(retry.exhausted->budget, BudgetKind::FailedDispatches);
        QCOMPARE(retry.exhausted->used, std::int64_t(3));
        QCOMPARE(retry.exhausted->limit, std::int64_t(3));
        QCOMPARE(retry.exhausted->detail, std::string("3 failed dispatches of 3"));
        QCOMPARE(retry.operation.state, OperationState::FailedRetryable);
        QCOMPARE(f.store().find(kNs, kRun + ":a")->version, before.version);
        QCOMPARE(f.store().history(kNs, kRun + ":a").size(), std::size_t(2));

        const ClaimResult fresh = f.engine().claim(inRun("d"));
        QCOMPARE(fresh.outcome, ClaimOutcome::BudgetExhausted);
        QCOMPARE(fresh.operation.id, std::int64_t(0));
        QCOMPARE(fresh.operation.state, OperationState::Received);
        QVERIFY(!f.store().find(kNs, kRun + ":d"));
        const auto suppressed = f.store().suppressions(kNs, 0, 100);
        QCOMPARE(suppressed.size(), std::size_t(2));
        QCOMPARE(suppressed.back().outcome, ClaimOutcome::BudgetExhausted);

        // Another run is not touched.
        QCOMPARE(f.engine().claim(inRun("a", "run-8")).outcome, ClaimOutcome::Claimed);
    }

    void failedDispatchesCountEveryFailureClass()
    {
        LedgerFixture f;
        const ClaimResult a = f.engine().claim(inRun("a"));
        f.engine().fail(kNs, a.operation.key, a.operation.fencingToken, ErrorClass::Validation,
                        "bad account");
        const ClaimResult b = f.engine().claim(inRun("b"));
        f.engine().fail(kNs, b.operation.key, b.operation.fencingToken, ErrorClass::UnknownOutcome,
                        "timeout");
        const ClaimResult c = f.engine().claim(inRun("c"));
        f.engine().complete(kNs, c.operation.key, c.operation.fencingToken, "{}", "");
        const RunRecord run = *f.store().findRun(kNs, kRun);
        QCOMPARE(run.failedDispatches, std::int64_t(2));
        QCOMPARE(run.state, RunState::Active);
    }

    void spendCapExactlyAndOneOver()
    {
        LedgerFixture f;
        setDefault(f.store(), RunSpendCapSetting, "10.00 EUR");
        QCOMPARE(f.engine().claim(withCost(inRun("a"), 600)).outcome, ClaimOutcome::Claimed);
        QCOMPARE(f.engine().claim(withCost(inRun("b"), 400)).outcome, ClaimOutcome::Claimed);
        RunRecord run = *f.store().findRun(kNs, kRun);
        QCOMPARE(run.spentMinor, std::int64_t(1000));
        QCOMPARE(run.state, RunState::Active);
        // At the cap a dispatch that declares no cost still runs; one cent more does not.
        QCOMPARE(f.engine().claim(inRun("c")).outcome, ClaimOutcome::Claimed);
        const ClaimResult over = f.engine().claim(withCost(inRun("d"), 1));
        QCOMPARE(over.outcome, ClaimOutcome::BudgetExhausted);
        QCOMPARE(over.exhausted->budget, BudgetKind::Spend);
        QCOMPARE(over.exhausted->used, std::int64_t(1000));
        QCOMPARE(over.exhausted->limit, std::int64_t(1000));
        QCOMPARE(over.exhausted->requested, std::int64_t(1));
        QCOMPARE(over.exhausted->currency, std::string("EUR"));
        QCOMPARE(over.exhausted->detail,
                 std::string("spent 10.00 EUR + 0.01 EUR would pass the cap of 10.00 EUR"));
        QVERIFY(!f.store().find(kNs, kRun + ":d"));
        run = *f.store().findRun(kNs, kRun);
        QCOMPARE(run.spentMinor, std::int64_t(1000));
        QCOMPARE(run.state, RunState::Halted);
        QCOMPARE(run.haltBudget, std::optional(BudgetKind::Spend));
        // Halted: even a dispatch without cost waits for a person.
        QCOMPARE(f.engine().claim(inRun("e")).outcome, ClaimOutcome::BudgetExhausted);
    }

    void spendInAnotherCurrencyIsRefused()
    {
        LedgerFixture f;
        setDefault(f.store(), RunSpendCapSetting, "10.00 EUR");
        const QByteArray snapshot = f.snapshot();
        try {
            f.engine().claim(withCost(inRun("a"), 100, "USD"));
            QFAIL("a cost in USD against a EUR cap was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::InvalidArgument);
            QVERIFY2(std::string(e.what()).find("USD") != std::string::npos, e.what());
        }
        QVERIFY(!f.store().find(kNs, kRun + ":a"));
        ClaimInput noRun = withCost(inRun("a"), 100);
        noRun.runId.clear();
        QCOMPARE(errorOf([&] { f.engine().claim(noRun); }), ErrorCode::InvalidArgument);
        ClaimInput negative = inRun("a");
        negative.tokens = -1;
        QCOMPARE(errorOf([&] { f.engine().claim(negative); }), ErrorCode::InvalidArgument);
        QCOMPARE(f.snapshot(), snapshot);
    }

    void tokenCapExactlyAndOneOver()
    {
        LedgerFixture f;
        setDefault(f.store(), RunTokenCapSetting, "100");
        ClaimInput a = inRun("a");
        a.tokens = 100;
        QCOMPARE(f.engine().claim(a).outcome, ClaimOutcome::Claimed);
        QCOMPARE(f.store().findRun(kNs, kRun)->tokensUsed, std::int64_t(100));
        ClaimInput b = inRun("b");
        b.tokens = 1;
        const ClaimResult over = f.engine().claim(b);
        QCOMPARE(over.outcome, ClaimOutcome::BudgetExhausted);
        QCOMPARE(over.exhausted->budget, BudgetKind::Tokens);
        QCOMPARE(over.exhausted->detail, std::string("100 tokens + 1 would pass the cap of 100"));
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Halted);
        QCOMPARE(f.store().findRun(kNs, kRun)->tokensUsed, std::int64_t(100));
    }

    void racingTheLastUnitOneWins_data()
    {
        QTest::addColumn<bool>("tokens");
        QTest::newRow("spend") << false;
        QTest::newRow("tokens") << true;
    }

    void racingTheLastUnitOneWins()
    {
        QFETCH(bool, tokens);
        LedgerFixture f;
        setDefault(f.store(), tokens ? RunTokenCapSetting : RunSpendCapSetting,
                   tokens ? "10" : "10.00 EUR");
        ClaimInput first = inRun("first");
        first.tokens = tokens ? 9 : 0;
        if (!tokens)
            first = withCost(first, 900);
        QCOMPARE(f.engine().claim(first).outcome, ClaimOutcome::Claimed);

        constexpr int kThreads = 8;
        std::atomic<int> claimed{0};
        std::atomic<int> exhausted{0};
        std::atomic<int> other{0};
        std::barrier start(kThreads);
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                ClaimInput in = inRun("last-" + std::to_string(t));
                in.owner = "worker-" + std::to_string(t);
                if (tokens)
                    in.tokens = 1;
                else
                    in.cost = Amount{100, "EUR"};
                start.arrive_and_wait();
                try {
                    const ClaimResult r = f.engine().claim(in);
                    (r.outcome == ClaimOutcome::Claimed           ? claimed
                     : r.outcome == ClaimOutcome::BudgetExhausted ? exhausted
                                                                  : other)++;
                } catch (...) {
                    other++;
                }
            });
        }
        for (auto &t : threads)
            t.join();
        QCOMPARE(claimed.load(), 1);
        QCOMPARE(exhausted.load(), kThreads - 1);
        QCOMPARE(other.load(), 0);
        const RunRecord run = *f.store().findRun(kNs, kRun);
        QCOMPARE(tokens ? run.tokensUsed : run.spentMinor, std::int64_t(tokens ? 10 : 1000));
        QCOMPARE(run.state, RunState::Halted);
    }

    void noProgressSweepOnTheLedgerClock()
    {
        LedgerFixture f;
        failedDispatch(f, "a");
        // A run whose operations are all final is done, not stalled: the sweep leaves it.
        const ClaimResult done = f.engine().claim(inRun("x", "run-done"));
        f.engine().complete(kNs, done.operation.key, done.operation.fencingToken, "{}", "");

        f.advanceMs(599'999);
        QCOMPARE(f.store().sweepRuns({}), std::int64_t(0));
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Active);
        f.advanceMs(1);
        QCOMPARE(f.store().sweepRuns("other-namespace"), std::int64_t(0));
        QCOMPARE(f.store().sweepRuns(kNs), std::int64_t(1));
        const RunRecord run = *f.store().findRun(kNs, kRun);
        QCOMPARE(run.state, RunState::Halted);
        QCOMPARE(run.haltBudget, std::optional(BudgetKind::NoProgress));
        QCOMPARE(run.haltDetail, std::string("no progress for 600 s (limit 600 s)"));
        QCOMPARE(f.store().findRun(kNs, "run-done")->state, RunState::Finished);
        QCOMPARE(f.store().sweepRuns({}), std::int64_t(0));

        const ClaimResult retry = f.engine().claim(inRun("a"));
        QCOMPARE(retry.outcome, ClaimOutcome::BudgetExhausted);
        QCOMPARE(retry.exhausted->budget, BudgetKind::NoProgress);
        QCOMPARE(retry.operation.state, OperationState::FailedRetryable);
    }

    void noProgressJudgedByTheNextClaim()
    {
        LedgerFixture f;
        failedDispatch(f, "a");
        failedDispatch(f, "c");
        f.advanceMs(300'000);
        // Progress: an operation of the run succeeds.
        const ClaimResult b = f.engine().claim(inRun("b"));
        f.engine().complete(kNs, b.operation.key, b.operation.fencingToken, "{}", "");
        f.advanceMs(599'000);
        QCOMPARE(f.engine().claim(inRun("a")).outcome, ClaimOutcome::Claimed);
        f.advanceMs(1'000);
        const ClaimResult stalled = f.engine().claim(inRun("c"));
        QCOMPARE(stalled.outcome, ClaimOutcome::BudgetExhausted);
        QCOMPARE(stalled.exhausted->budget, BudgetKind::NoProgress);
        QCOMPARE(stalled.exhausted->used, std::int64_t(600'000));
        QCOMPARE(stalled.exhausted->limit, std::int64_t(600'000));
        QCOMPARE(stalled.operation.state, OperationState::FailedRetryable);
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Halted);
    }

    void haltedRunStillReplays()
    {
        LedgerFixture f;
        const ClaimResult ok = f.engine().claim(inRun("charge"));
        f.engine().complete(kNs, ok.operation.key, ok.operation.fencingToken,
                            R"({"charge":"ch_1"})", "");
        const ClaimResult refused = f.engine().claim(inRun("refund"));
        f.engine().fail(kNs, refused.operation.key, refused.operation.fencingToken,
                        ErrorClass::Validation, "no such charge");
        const ClaimResult live = f.engine().claim(inRun("mail"));
        failedDispatch(f, "a");
        failedDispatch(f, "b");
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Halted);

        const ClaimResult replay = f.engine().claim(inRun("charge"));
        QCOMPARE(replay.outcome, ClaimOutcome::Replayed);
        QCOMPARE(replay.operation.result, std::string(R"({"charge":"ch_1"})"));
        QCOMPARE(f.engine().claim(inRun("refund")).outcome, ClaimOutcome::Replayed);
        QCOMPARE(f.engine().claim(inRun("mail")).outcome, ClaimOutcome::InProgress);
        ClaimInput changed = inRun("charge");
        changed.payloadJson = R"({"step":"other"})";
        QCOMPARE(f.engine().claim(changed).outcome, ClaimOutcome::PayloadMismatch);
        // The worker holding a live lease may still finish what it started.
        QCOMPARE(f.engine()
                     .complete(kNs, live.operation.key, live.operation.fencingToken, "{}", "")
                     .state,
                 OperationState::Succeeded);
    }

    void approvalsWaitWithoutSpending()
    {
        LedgerFixture f;
        failedDispatch(f, "a");
        failedDispatch(f, "b");
        failedDispatch(f, "c");
        ClaimInput gated = inRun("payout");
        gated.requiresApproval = true;
        const ClaimResult r = f.engine().claim(gated);
        QCOMPARE(r.outcome, ClaimOutcome::InProgress);
        QCOMPARE(r.operation.state, OperationState::AwaitingApproval);
    }
};

QTEST_GUILESS_MAIN(TestRunBudgetContract)
#include "tst_runbudgetcontract.moc"
