// SPDX-License-Identifier: Apache-2.0
// GuardedActionBuilder, on every store: each guarded action gets the engine's settings as its
// options, as the CLI and the console build it, and the ledger rows show them applied.
#include <QtTest>

#include "guardedactionbuilder.h"
#include "guardedactionhelpers.h"
#include "ledgerfixture.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kOliverApprover{"oliver", "approver"};

/// A lookup that is never asked (the options only carry it).
class FoundNothing final : public ProviderLookup
{
public:
    ProviderEvidence lookup(const Operation &) override { return {}; }
};

Engine::Settings custom()
{
    Engine::Settings s;
    s.maxAttempts = 5;
    s.retentionMs = 2 * 3600'000;
    return s;
}

ApproveCommand::Request decision(const std::string &key, ApprovalDecision d)
{
    ApproveCommand::Request r;
    r.key = key;
    r.decision = d;
    r.reason = "checked with the provider";
    return r;
}

} // namespace

class TestGuardedActionBuilder final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    /// Without settings: the engine's defaults, which are the commands' own (what the console
    /// passed before it built through here, and the CLI without --retention).
    void defaultsAreTheEnginesAndTheCommands()
    {
        const GuardedActionBuilder b;
        const Engine::Settings engine;
        QCOMPARE(b.approveOptions().extraAttempts, engine.maxAttempts);
        QCOMPARE(b.approveOptions().retentionMs, engine.retentionMs);
        QCOMPARE(b.approveOptions().extraAttempts, ApproveCommand::Options{}.extraAttempts);
        QCOMPARE(b.approveOptions().retentionMs, ApproveCommand::Options{}.retentionMs);
        QCOMPARE(b.reconcileOptions().retentionMs, ReconcileCommand::Options{}.retentionMs);
        QCOMPARE(b.replayOptions().retentionMs, DlqReplayCommand::Options{}.retentionMs);
        QCOMPARE(b.bulkOptions().extraAttempts, BulkCommand::Options{}.extraAttempts);
        QCOMPARE(b.bulkOptions().retentionMs, BulkCommand::Options{}.retentionMs);
    }

    void optionsFollowTheSettings()
    {
        const GuardedActionBuilder b(custom());
        QCOMPARE(b.approveOptions().extraAttempts, 5);
        QCOMPARE(b.approveOptions().retentionMs, std::int64_t(7'200'000));
        QCOMPARE(b.reconcileOptions().retentionMs, std::int64_t(7'200'000));
        QCOMPARE(b.bulkOptions().extraAttempts, 5);
        QCOMPARE(b.bulkOptions().retentionMs, std::int64_t(7'200'000));
        int slept = 0;
        PacedRun::Hooks hooks;
        hooks.sleep = [&slept](std::chrono::milliseconds) { ++slept; };
        hooks.cancelled = [] { return true; };
        const DlqReplayCommand::Options replay = b.replayOptions(hooks);
        QCOMPARE(replay.retentionMs, std::int64_t(7'200'000));
        QVERIFY(replay.cancelled && replay.cancelled());
        replay.sleep(std::chrono::milliseconds(1));
        QCOMPARE(slept, 1);
        QVERIFY(!replay.progress);
        FoundNothing lookup;
        QCOMPARE(b.bulkOptions(&lookup, hooks).lookup, &lookup);
        QVERIFY(b.bulkOptions(&lookup, hooks).pacing.cancelled());
    }

    /// A re-dispatch from confirmation_required gets maxAttempts more attempts; a rejected
    /// operation is kept retentionMs.
    void approvalsApplyTheSettings()
    {
        LedgerFixture f;
        const GuardedActionBuilder b(custom());
        needingConfirmation(f, "run-1:refund");
        b.approve(f.store(), kOliverApprover,
                  decision("run-1:refund", ApprovalDecision::Redispatch))
            .execute();
        const Operation again = *f.store().find(kNs, "run-1:refund");
        QCOMPARE(again.state, OperationState::Received);
        QCOMPARE(again.maxAttempts, again.attempt + 5);

        needingConfirmation(f, "run-2:refund");
        b.approve(f.store(), kOliverApprover, decision("run-2:refund", ApprovalDecision::Reject))
            .execute();
        const Operation rejected = *f.store().find(kNs, "run-2:refund");
        QCOMPARE(rejected.state, OperationState::FailedTerminal);
        QVERIFY(rejected.retentionExpiresAtMs);
        QCOMPARE(*rejected.retentionExpiresAtMs - rejected.updatedAtMs, std::int64_t(7'200'000));
    }
};

QTEST_GUILESS_MAIN(TestGuardedActionBuilder)
#include "tst_guardedactionbuilder.moc"
