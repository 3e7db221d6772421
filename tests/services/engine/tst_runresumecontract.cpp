// SPDX-License-Identifier: Apache-2.0
// Resuming a halted run and changing a run's budgets (runactioncommand.h) on every store: reason,
// role, idempotency by request id, four-eyes on added spend, the audit record.
#include <QtTest>

#include "approvecommand.h"
#include "error.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"
#include "runactioncommand.h"

using namespace idempo;
using idempo::test::LedgerFixture;

namespace {

const std::string kNs = "default";
const std::string kRun = "run-7";
const ActorIdentity kAlice{"alice", "operator"};
const ActorIdentity kBob{"bob", "operator"};

ClaimInput inRun(const std::string &step)
{
    ClaimInput in;
    in.ns = kNs;
    in.key = kRun + ":" + step;
    in.runId = kRun;
    in.stepId = step;
    in.payloadJson = R"({"step":")" + step + R"("})";
    in.owner = "worker-a";
    return in;
}

void setting(LedgerStore &store, std::string_view name, const std::string &value)
{
    GuardSettingCommand command(store, store.actor(), std::string(name), value, "policy");
    command.execute();
}

/// Three failed dispatches: the run halts on the default budget.
void haltByFailures(LedgerFixture &f)
{
    for (const std::string step : {"a", "b", "c"}) {
        const ClaimResult r = f.engine().claim(inRun(step));
        f.engine().fail(kNs, r.operation.key, r.operation.fencingToken, ErrorClass::Transient,
                        "503");
    }
    QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Halted);
}

RunActionCommand::Request resume(std::int64_t addFailed = 0)
{
    RunActionCommand::Request r;
    r.runId = kRun;
    r.reason = "provider back up (INC-42)";
    r.addFailed = addFailed;
    return r;
}

Error refusal(LedgerStore &store, const ActorIdentity &who, const RunActionCommand::Request &r)
{
    try {
        RunActionCommand(store, who, r).execute();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorCode::Internal, "not refused");
}

} // namespace

class TestRunResumeContract final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void resumeRefusals()
    {
        LedgerFixture f;
        f.engine().claim(inRun("a"));
        RunActionCommand::Request noReason = resume(1);
        noReason.reason.clear();
        QCOMPARE(refusal(f.store(), kAlice, noReason).code(), ErrorCode::Refused);
        const Error active = refusal(f.store(), kAlice, resume(1));
        QCOMPARE(active.code(), ErrorCode::IllegalTransition);
        QVERIFY2(std::string(active.what()).find("not halted") != std::string::npos, active.what());
        RunActionCommand::Request missing = resume(1);
        missing.runId = "run-unknown";
        QCOMPARE(refusal(f.store(), kAlice, missing).code(), ErrorCode::NotFound);
        QCOMPARE(refusal(f.store(), {"walter", "worker"}, resume(1)).code(), ErrorCode::Refused);

        haltByFailures(f);
        const auto before = f.snapshot();
        const Error stillOut = refusal(f.store(), kAlice, resume());
        QCOMPARE(stillOut.code(), ErrorCode::Refused);
        QVERIFY2(std::string(stillOut.what()).find("failed dispatches (3 of 3)") !=
                     std::string::npos,
                 stillOut.what());
        RunActionCommand::Request tokens = resume(1);
        tokens.addTokens = 10;
        QCOMPARE(refusal(f.store(), kAlice, tokens).code(), ErrorCode::Refused);
        QCOMPARE(f.snapshot(), before);
    }

    void resumeAddsFailuresAndIsAudited()
    {
        LedgerFixture f;
        haltByFailures(f);
        RunActionCommand command(f.store(), kAlice, resume(2));
        QVERIFY(command.validate().empty());
        const RunActionOutcome done = command.execute();
        QCOMPARE(done.status, std::string("applied"));
        QVERIFY(done.run);
        QCOMPARE(done.run->state, RunState::Active);
        QCOMPARE(done.run->budgets.failedDispatches, std::optional<std::int64_t>(5));
        QVERIFY(done.run->haltDetail.empty());
        QVERIFY(done.auditSeq);
        const auto audit = f.store().auditLog(0, 100);
        QCOMPARE(audit.back().seq, *done.auditSeq);
        QCOMPARE(audit.back().entry.action, std::string("run_resume"));
        QCOMPARE(audit.back().entry.target, std::string("run:default/run-7"));
        QCOMPARE(audit.back().entry.who, std::string("alice"));
        QCOMPARE(audit.back().entry.reason, std::string("provider back up (INC-42)"));

        f.advanceMs(20'000);
        QCOMPARE(f.engine().claim(inRun("a")).outcome, ClaimOutcome::Claimed);

        // The same request again: the first answer, nothing written.
        const std::size_t records = f.store().auditLog(0, 100).size();
        RunActionCommand::Request again = resume(2);
        again.requestId = command.requestId();
        const RunActionOutcome replay = RunActionCommand(f.store(), kAlice, again).execute();
        QCOMPARE(replay.status, std::string("replayed"));
        QCOMPARE(f.store().auditLog(0, 100).size(), records);
        RunActionCommand::Request reused;
        reused.kind = RunActionCommand::Kind::Budget;
        reused.runId = kRun;
        reused.reason = "raise";
        reused.tokens = std::optional<std::int64_t>(10);
        reused.requestId = command.requestId();
        QCOMPARE(refusal(f.store(), kAlice, reused).code(), ErrorCode::Refused);
    }

    void theSameCommandAgainIsTheSameRequest()
    {
        LedgerFixture f;
        haltByFailures(f);
        QCOMPARE(RunActionCommand(f.store(), kAlice, resume(2)).execute().status,
                 std::string("applied"));
        const std::size_t records = f.store().auditLog(0, 100).size();
        // A retry after a lost answer: same ask, same person, same reason, no id given.
        RunActionCommand retry(f.store(), kAlice, resume(2));
        QVERIFY(retry.validate().empty());
        QCOMPARE(retry.execute().status, std::string("replayed"));
        QCOMPARE(f.store().auditLog(0, 100).size(), records);
        QCOMPARE(f.store().findRun(kNs, kRun)->budgets.failedDispatches,
                 std::optional<std::int64_t>(5));

        RunActionCommand::Request tokens;
        tokens.kind = RunActionCommand::Kind::Budget;
        tokens.runId = kRun;
        tokens.reason = "cap the planner";
        tokens.tokens = std::optional<std::int64_t>(5000);
        QCOMPARE(RunActionCommand(f.store(), kAlice, tokens).execute().status,
                 std::string("applied"));
        QCOMPARE(RunActionCommand(f.store(), kAlice, tokens).execute().status,
                 std::string("replayed"));
        QCOMPARE(f.store().auditLog(0, 100).size(), records + 1);
    }

    void aRequestIdAnswersOnlyTheSameAsk()
    {
        LedgerFixture f;
        haltByFailures(f);
        RunActionCommand::Request first = resume(2);
        first.requestId = "rr-ticket-311";
        QCOMPARE(RunActionCommand(f.store(), kAlice, first).execute().status,
                 std::string("applied"));
        RunActionCommand::Request other = first;
        other.addFailed = 7;
        const Error figures = refusal(f.store(), kAlice, other);
        QCOMPARE(figures.code(), ErrorCode::Refused);
        QVERIFY2(std::string(figures.what()).find("rr-ticket-311") != std::string::npos,
                 figures.what());
        QCOMPARE(refusal(f.store(), kBob, first).code(), ErrorCode::Refused);
        QCOMPARE(f.store().findRun(kNs, kRun)->budgets.failedDispatches,
                 std::optional<std::int64_t>(5));
        QCOMPARE(RunActionCommand(f.store(), kAlice, first).execute().status,
                 std::string("replayed"));
    }

    void aPendingRequestAgainIsStillPending()
    {
        LedgerFixture f;
        setting(f.store(), FourEyesSetting, "50");
        setting(f.store(), RunSpendCapSetting, "10.00 EUR");
        ClaimInput pricey = inRun("a");
        pricey.cost = Amount{1500, "EUR"};
        QCOMPARE(f.engine().claim(pricey).outcome, ClaimOutcome::BudgetExhausted);
        RunActionCommand::Request more = resume();
        more.addSpend = Amount{10000, "EUR"};
        QCOMPARE(RunActionCommand(f.store(), kAlice, more).execute().status,
                 std::string("pending"));
        const RunActionOutcome again = RunActionCommand(f.store(), kAlice, more).execute();
        QCOMPARE(again.status, std::string("pending"));
        QVERIFY(again.text().find("pending a second identity") != std::string::npos);
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Halted);
    }

    void resumeRestartsTheProgressClock()
    {
        LedgerFixture f;
        const ClaimResult a = f.engine().claim(inRun("a"));
        f.engine().fail(kNs, a.operation.key, a.operation.fencingToken, ErrorClass::Transient,
                        "503");
        f.advanceMs(600'000);
        QCOMPARE(f.store().sweepRuns(kNs), std::int64_t(1));
        QCOMPARE(RunActionCommand(f.store(), kAlice, resume()).execute().status,
                 std::string("applied"));
        QCOMPARE(f.engine().claim(inRun("a")).outcome, ClaimOutcome::Claimed);
    }

    void addedSpendAboveTheThresholdNeedsTwoIdentities()
    {
        LedgerFixture f;
        setting(f.store(), FourEyesSetting, "50");
        setting(f.store(), RunSpendCapSetting, "10.00 EUR");
        ClaimInput pricey = inRun("a");
        pricey.cost = Amount{1500, "EUR"};
        QCOMPARE(f.engine().claim(pricey).outcome, ClaimOutcome::BudgetExhausted);

        RunActionCommand::Request more = resume();
        more.addSpend = Amount{10000, "EUR"};
        const RunActionOutcome first = RunActionCommand(f.store(), kAlice, more).execute();
        QCOMPARE(first.status, std::string("pending"));
        QCOMPARE(f.store().findRun(kNs, kRun)->state, RunState::Halted);
        RunActionCommand::Request sameAgain = more;
        sameAgain.requestId = "rr-alice-again";
        const Error twice = refusal(f.store(), kAlice, sameAgain);
        QCOMPARE(twice.code(), ErrorCode::Refused);
        QVERIFY2(std::string(twice.what()).find("four-eyes") != std::string::npos, twice.what());

        const RunActionOutcome second = RunActionCommand(f.store(), kBob, more).execute();
        QCOMPARE(second.status, std::string("applied"));
        const RunRecord run = *f.store().findRun(kNs, kRun);
        QCOMPARE(run.state, RunState::Active);
        QCOMPARE(run.budgets.spend, std::optional<Amount>(Amount{11000, "EUR"}));
        QCOMPARE(f.engine().claim(pricey).outcome, ClaimOutcome::Claimed);

        // Above the threshold even a little more needs a second identity; lowering needs one.
        RunActionCommand::Request small;
        small.kind = RunActionCommand::Kind::Budget;
        small.runId = kRun;
        small.reason = "a little more";
        small.spend = std::optional<Amount>(Amount{12000, "EUR"});
        QCOMPARE(RunActionCommand(f.store(), kAlice, small).execute().status,
                 std::string("pending"));
        RunActionCommand::Request lower = small;
        lower.reason = "less";
        lower.spend = std::optional<Amount>(Amount{10000, "EUR"});
        QCOMPARE(RunActionCommand(f.store(), kAlice, lower).execute().status,
                 std::string("applied"));
        RunActionCommand::Request usd = small;
        usd.reason = "in dollars";
        usd.spend = std::optional<Amount>(Amount{12000, "USD"});
        QCOMPARE(refusal(f.store(), kAlice, usd).code(), ErrorCode::Refused);
    }

    void steppingTheCapUpStillMeetsFourEyes()
    {
        LedgerFixture f;
        setting(f.store(), FourEyesSetting, "50");
        setting(f.store(), RunSpendCapSetting, "10.00 EUR");
        QCOMPARE(f.engine().claim(inRun("a")).outcome, ClaimOutcome::Claimed);
        const auto raiseTo = [&f](std::int64_t minor, const ActorIdentity &who) {
            RunActionCommand::Request step;
            step.kind = RunActionCommand::Kind::Budget;
            step.runId = kRun;
            step.reason = "step to " + std::to_string(minor);
            step.spend = std::optional<Amount>(Amount{minor, "EUR"});
            return RunActionCommand(f.store(), who, step).execute().status;
        };
        QCOMPARE(raiseTo(3000, kAlice), std::string("applied"));
        QCOMPARE(raiseTo(5000, kAlice), std::string("applied")); // at the threshold exactly
        QCOMPARE(raiseTo(5500, kAlice), std::string("pending")); // a small step, but past it
        QCOMPARE(f.store().findRun(kNs, kRun)->budgets.spend,
                 std::optional<Amount>(Amount{5000, "EUR"}));

        // A first cap on a run without one narrows it: one identity, whatever its height.
        ClaimInput uncapped = inRun("u");
        uncapped.key = "run-8:u";
        uncapped.runId = "run-8";
        setting(f.store(), RunSpendCapSetting, "");
        QCOMPARE(f.engine().claim(uncapped).outcome, ClaimOutcome::Claimed);
        QVERIFY(!f.store().findRun(kNs, "run-8")->budgets.spend);
        RunActionCommand::Request first;
        first.kind = RunActionCommand::Kind::Budget;
        first.runId = "run-8";
        first.reason = "cap it";
        first.spend = std::optional<Amount>(Amount{12000, "EUR"});
        QCOMPARE(RunActionCommand(f.store(), kAlice, first).execute().status,
                 std::string("applied"));

        // Adding spend on resume follows the same rule.
        setting(f.store(), RunSpendCapSetting, "10.00 EUR");
        ClaimInput other = inRun("x");
        other.key = "run-9:x";
        other.runId = "run-9";
        other.cost = Amount{1000, "EUR"};
        QCOMPARE(f.engine().claim(other).outcome, ClaimOutcome::Claimed);
        other.key = "run-9:y";
        QCOMPARE(f.engine().claim(other).outcome, ClaimOutcome::BudgetExhausted);
        RunActionCommand::Request more;
        more.runId = "run-9";
        more.reason = "a little more";
        more.addSpend = Amount{4100, "EUR"}; // 51.00 EUR afterwards
        QCOMPARE(RunActionCommand(f.store(), kAlice, more).execute().status,
                 std::string("pending"));
        QCOMPARE(RunActionCommand(f.store(), kBob, more).execute().status, std::string("applied"));
    }

    void budgetSetsLimits()
    {
        LedgerFixture f;
        for (const std::string step : {"a", "b"}) {
            const ClaimResult r = f.engine().claim(inRun(step));
            f.engine().fail(kNs, r.operation.key, r.operation.fencingToken, ErrorClass::Transient,
                            "503");
        }
        RunActionCommand::Request set;
        set.kind = RunActionCommand::Kind::Budget;
        set.runId = kRun;
        set.reason = "tighter for this customer";
        set.failedDispatches = std::optional<std::int64_t>(2);
        set.noProgressS = std::optional<std::int64_t>();
        set.tokens = std::optional<std::int64_t>(500);
        const RunActionOutcome done = RunActionCommand(f.store(), kAlice, set).execute();
        QCOMPARE(done.status, std::string("applied"));
        const RunRecord run = *f.store().findRun(kNs, kRun);
        QCOMPARE(run.budgets.failedDispatches, std::optional<std::int64_t>(2));
        QVERIFY(!run.budgets.noProgressMs);
        QCOMPARE(run.budgets.tokens, std::optional<std::int64_t>(500));
        f.advanceMs(20'000);
        const ClaimResult halted = f.engine().claim(inRun("a"));
        QCOMPARE(halted.outcome, ClaimOutcome::BudgetExhausted);
        QCOMPARE(halted.exhausted->detail, std::string("2 failed dispatches of 2"));

        RunActionCommand::Request nothing;
        nothing.kind = RunActionCommand::Kind::Budget;
        nothing.runId = kRun;
        nothing.reason = "no-op";
        QCOMPARE(refusal(f.store(), kAlice, nothing).code(), ErrorCode::InvalidArgument);
        RunActionCommand::Request zero = nothing;
        zero.failedDispatches = std::optional<std::int64_t>(0);
        QCOMPARE(refusal(f.store(), kAlice, zero).code(), ErrorCode::InvalidArgument);
    }
};

QTEST_GUILESS_MAIN(TestRunResumeContract)
#include "tst_runresumecontract.moc"
