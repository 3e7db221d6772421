// SPDX-License-Identifier: Apache-2.0
// The LedgerStore contract, through the engine: one suite, run against every store. Claims,
// leases and fencing, the state machine, retries and retention, refused input; listing, values
// and namespaces are in tst_ledgerlisting.cpp.
#include <atomic>
#include <barrier>
#include <thread>

#include <QtTest>

#include "error.h"
#include "ledgercontracthelpers.h"
#include "ledgerfixture.h"
#include "transitiontable.h"

using namespace idempo;
using namespace idempo::test;

class TestLedgerContract final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void transitionTable_data()
    {
        QTest::addColumn<int>("from");
        QTest::addColumn<int>("to");
        for (int from = 0; from < OperationStateCount; ++from)
            for (int to = 0; to < OperationStateCount; ++to)
                QTest::addRow("%s->%s", stateName(OperationState(from)).data(),
                              stateName(OperationState(to)).data())
                    << from << to;
    }

    void transitionTable()
    {
        QFETCH(int, from);
        QFETCH(int, to);
        LedgerFixture f;
        const Operation before = reach(f, "run-1:step", OperationState(from));
        QCOMPARE(before.state, OperationState(from));
        const QByteArray snapshot = f.snapshot();

        TransitionRequest request{.ns = kNs,
                                  .key = before.key,
                                  .from = before.state,
                                  .fencingToken = before.fencingToken,
                                  .to = OperationState(to),
                                  .actor = "operator"};
        request.leaseMs = 10'000;
        request.retentionMs = 3600'000;
        if (isTransitionAllowed(OperationState(from), OperationState(to))) {
            const Operation after = f.store().transition(request);
            QCOMPARE(after.state, OperationState(to));
            QCOMPARE(after.version, before.version + 1);
            const Operation stored = *f.store().find(kNs, before.key);
            QCOMPARE(stored.state, OperationState(to));
            QCOMPARE(stored.fencingToken, after.fencingToken);
            const auto history = f.store().history(kNs, before.key);
            QVERIFY(history.back().fromState == OperationState(from));
            QCOMPARE(history.back().toState, OperationState(to));
            QCOMPARE(stored.retentionExpiresAtMs.has_value(), isFinal(OperationState(to)));
        } else {
            QCOMPARE(errorOf([&] { f.store().transition(request); }), ErrorCode::IllegalTransition);
            QCOMPARE(f.snapshot(), snapshot);
        }
    }

    void finalStatesHaveNoWayOut()
    {
        for (const Transition &t : idempo::transitionTable())
            QVERIFY2(!isFinal(t.from), stateName(t.from).data());
    }

    void claimRaceOneWinner()
    {
        LedgerFixture f;
        constexpr int kThreads = 8;
        constexpr int kRounds = 40;
        for (int round = 0; round < kRounds; ++round) {
            const std::string key = "race-" + std::to_string(round) + ":charge";
            std::atomic<int> claimed{0};
            std::atomic<int> inProgress{0};
            std::atomic<int> other{0};
            std::barrier start(kThreads);
            std::vector<std::thread> threads;
            for (int t = 0; t < kThreads; ++t) {
                threads.emplace_back([&, t] {
                    ClaimInput in = claimInput(key);
                    in.owner = "worker-" + std::to_string(t);
                    start.arrive_and_wait();
                    try {
                        const ClaimResult r = f.engine().claim(in);
                        (r.outcome == ClaimOutcome::Claimed      ? claimed
                         : r.outcome == ClaimOutcome::InProgress ? inProgress
                                                                 : other)++;
                    } catch (...) {
                        other++;
                    }
                });
            }
            for (auto &t : threads)
                t.join();
            QCOMPARE(claimed.load(), 1);
            QCOMPARE(inProgress.load(), kThreads - 1);
            QCOMPARE(other.load(), 0);
        }
        std::int64_t suppressed = 0;
        for (const auto &[outcome, count] : f.store().metrics({}).suppressionsByOutcome)
            suppressed += count;
        QCOMPARE(suppressed, std::int64_t(kRounds * (kThreads - 1)));
    }

    void lapsedLeaseTakeoverFencesStaleWriter_data()
    {
        QTest::addColumn<int>("kind");
        QTest::newRow("read") << int(ToolKind::Read);
        QTest::newRow("idempotent_write") << int(ToolKind::IdempotentWrite);
    }

    void lapsedLeaseTakeoverFencesStaleWriter()
    {
        QFETCH(int, kind);
        LedgerFixture f;
        ClaimInput in = claimInput("run-7:lookup", R"({"q":1})", ToolKind(kind));
        in.leaseMs = 5'000;
        const ClaimResult first = f.engine().claim(in);
        QCOMPARE(first.outcome, ClaimOutcome::Claimed);

        f.advanceMs(4'999);
        in.owner = "worker-b";
        QCOMPARE(f.engine().claim(in).outcome, ClaimOutcome::InProgress);

        f.advanceMs(2);
        const ClaimResult second = f.engine().claim(in);
        QCOMPARE(second.outcome, ClaimOutcome::Claimed);
        QVERIFY(second.operation.fencingToken > first.operation.fencingToken);
        QCOMPARE(second.operation.attempt, 2);
        QCOMPARE(second.operation.leaseOwner, std::string("worker-b"));

        const QByteArray before = f.snapshot();
        const auto stale = first.operation.fencingToken;
        QCOMPARE(errorOf([&] { f.engine().complete(kNs, in.key, stale, R"({"late":true})", ""); }),
                 ErrorCode::StaleLease);
        QCOMPARE(errorOf([&] { f.engine().fail(kNs, in.key, stale, ErrorClass::Transient, "x"); }),
                 ErrorCode::StaleLease);
        QCOMPARE(errorOf([&] { f.engine().heartbeat(kNs, in.key, stale); }), ErrorCode::StaleLease);
        QCOMPARE(f.snapshot(), before);

        const Operation done =
            f.engine().complete(kNs, in.key, second.operation.fencingToken, R"({"v":2})", "");
        QCOMPARE(done.state, OperationState::Succeeded);
        QCOMPARE(done.result, std::string(R"({"v":2})"));
    }

    void protectedWriteLapseNeedsReconciliation()
    {
        LedgerFixture f;
        ClaimInput in = claimInput("run-8:send_email");
        in.leaseMs = 1'000;
        const ClaimResult first = f.engine().claim(in);
        f.advanceMs(1'000);
        in.owner = "worker-b";
        const ClaimResult second = f.engine().claim(in);
        QCOMPARE(second.outcome, ClaimOutcome::ReconcileRequired);
        QCOMPARE(second.operation.state, OperationState::UnknownOutcome);
        QVERIFY(second.operation.errorClass == ErrorClass::UnknownOutcome);
        QCOMPARE(second.operation.attempt, 1);
        // The lapsed holder is fenced off even though nobody took the lease.
        QCOMPARE(errorOf([&] {
                     f.engine().complete(kNs, in.key, first.operation.fencingToken, "{}", "");
                 }),
                 ErrorCode::StaleLease);
        QCOMPARE(f.engine().claim(in).outcome, ClaimOutcome::ReconcileRequired);
        QCOMPARE(f.store().find(kNs, in.key)->state, OperationState::UnknownOutcome);
    }

    void replayAfterRestart()
    {
        LedgerFixture f;
        const ClaimInput in = claimInput("run-9:refund", R"({"amount":1250,"currency":"EUR"})");
        const ClaimResult first = f.engine().claim(in);
        f.engine().complete(kNs, in.key, first.operation.fencingToken, R"({"refund_id":"re_1"})",
                            R"({"ref":"PSP-77"})");
        f.reopen();
        ClaimInput again = in;
        again.payloadJson = R"({"currency":"EUR","amount":1250})"; // key order never matters
        const ClaimResult replay = f.engine().claim(again);
        QCOMPARE(replay.outcome, ClaimOutcome::Replayed);
        QCOMPARE(replay.operation.result, std::string(R"({"refund_id":"re_1"})"));
        QCOMPARE(replay.operation.receipt, std::string(R"({"ref":"PSP-77"})"));
        QCOMPARE(replay.operation.fencingToken, first.operation.fencingToken);
        QCOMPARE(f.store().history(kNs, in.key).size(), std::size_t(2));
    }

    void terminalFailureReplaysError()
    {
        LedgerFixture f;
        const Operation failed = reach(f, "run-10:kyc", OperationState::FailedTerminal);
        const ClaimResult replay = f.engine().claim(claimInput("run-10:kyc"));
        QCOMPARE(replay.outcome, ClaimOutcome::Replayed);
        QVERIFY(replay.operation.errorClass == ErrorClass::Validation);
        QCOMPARE(replay.operation.errorDetail, std::string("bad account"));
        QCOMPARE(replay.operation.version, failed.version);
    }

    void mismatchWinsOverEveryState_data()
    {
        QTest::addColumn<int>("state");
        for (int s = 0; s < OperationStateCount; ++s)
            QTest::newRow(stateName(OperationState(s)).data()) << s;
    }

    void mismatchWinsOverEveryState()
    {
        QFETCH(int, state);
        LedgerFixture f;
        reach(f, "run-11:pay", OperationState(state));
        const Operation before = *f.store().find(kNs, "run-11:pay");
        f.advanceMs(3600'000); // lapsed leases and elapsed backoff must not matter either
        const ClaimResult r = f.engine().claim(claimInput("run-11:pay", R"({"amount":999})"));
        QCOMPARE(r.outcome, ClaimOutcome::PayloadMismatch);
        const Operation after = *f.store().find(kNs, "run-11:pay");
        QCOMPARE(after.version, before.version);
        QCOMPARE(after.state, before.state);
        QCOMPARE(after.payload, std::string(R"({"amount":100})"));
        const auto sup = f.store().suppressions(kNs, 0, 10);
        QCOMPARE(sup.back().outcome, ClaimOutcome::PayloadMismatch);
    }

    void projectionIgnoresVolatileFields()
    {
        LedgerFixture f;
        ClaimInput in =
            claimInput("run-12:book", R"({"flight":"LH400","seat":"12A","requested_at":"10:00"})");
        in.fingerprintFields = {"/flight", "/seat"};
        const ClaimResult first = f.engine().claim(in);
        in.payloadJson = R"({"seat":"12A","flight":"LH400","requested_at":"10:05"})";
        QCOMPARE(f.engine().claim(in).outcome, ClaimOutcome::InProgress);
        in.payloadJson = R"({"seat":"14C","flight":"LH400","requested_at":"10:05"})";
        QCOMPARE(f.engine().claim(in).outcome, ClaimOutcome::PayloadMismatch);
        QCOMPARE(f.store().find(kNs, in.key)->fencingToken, first.operation.fencingToken);
    }

    void retryScheduleAndExhaustion()
    {
        LedgerFixture f;
        const ClaimInput in = claimInput("run-13:provision");
        const std::int64_t expected[] = {1'000, 4'000};
        for (int attempt = 1; attempt <= 2; ++attempt) {
            const ClaimResult r = f.engine().claim(in);
            QCOMPARE(r.outcome, ClaimOutcome::Claimed);
            QCOMPARE(r.operation.attempt, attempt);
            const std::int64_t failedAt = f.store().nowMs();
            const Operation op = f.engine().fail(kNs, in.key, r.operation.fencingToken,
                                                 ErrorClass::Transient, "503");
            QCOMPARE(op.state, OperationState::FailedRetryable);
            QCOMPARE(*op.nextAttemptAtMs - failedAt, expected[attempt - 1]);
            f.advanceMs(expected[attempt - 1] - 1);
            const ClaimResult early = f.engine().claim(in);
            QCOMPARE(early.outcome, ClaimOutcome::RetryLater);
            QVERIFY(early.operation.nextAttemptAtMs == op.nextAttemptAtMs);
            f.advanceMs(1);
        }
        const ClaimResult last = f.engine().claim(in);
        QCOMPARE(last.operation.attempt, 3);
        const Operation exhausted =
            f.engine().fail(kNs, in.key, last.operation.fencingToken, ErrorClass::Transient, "503");
        QCOMPARE(exhausted.state, OperationState::ConfirmationRequired);
        QCOMPARE(f.engine().claim(in).outcome, ClaimOutcome::InProgress);
    }

    void rateLimitHonoursRetryAfter()
    {
        LedgerFixture f;
        const ClaimInput in = claimInput("run-14:email");
        const ClaimResult r = f.engine().claim(in);
        const std::int64_t at = f.store().nowMs();
        const Operation op = f.engine().fail(kNs, in.key, r.operation.fencingToken,
                                             ErrorClass::RateLimited, "429", 30'000);
        QCOMPARE(*op.nextAttemptAtMs - at, std::int64_t(30'000));
    }

    void nonRetryableClassesStopAtOnce_data()
    {
        QTest::addColumn<int>("errorClass");
        QTest::newRow("validation") << int(ErrorClass::Validation);
        QTest::newRow("auth") << int(ErrorClass::Auth);
        QTest::newRow("policy_denied") << int(ErrorClass::PolicyDenied);
    }

    void nonRetryableClassesStopAtOnce()
    {
        QFETCH(int, errorClass);
        LedgerFixture f;
        const ClaimResult r = f.engine().claim(claimInput("run-15:x"));
        const Operation op = f.engine().fail(kNs, "run-15:x", r.operation.fencingToken,
                                             ErrorClass(errorClass), "no");
        QCOMPARE(op.state, OperationState::FailedTerminal);
        QCOMPARE(op.attempt, 1);
    }

    void heartbeatExtendsLease()
    {
        LedgerFixture f;
        ClaimInput in = claimInput("run-16:long");
        in.leaseMs = 2'000;
        const ClaimResult r = f.engine().claim(in);
        f.advanceMs(1'500);
        const Operation op = f.engine().heartbeat(kNs, in.key, r.operation.fencingToken, 2'000);
        QCOMPARE(*op.leaseExpiresAtMs, f.store().nowMs() + 2'000);
        f.advanceMs(1'500);
        in.owner = "worker-b";
        QCOMPARE(f.engine().claim(in).outcome, ClaimOutcome::InProgress);
    }

    void retentionExpiryMakesANewOperation()
    {
        LedgerFixture f;
        const ClaimInput in = claimInput("run-17:notify");
        const ClaimResult r = f.engine().claim(in);
        const Operation done = f.engine().complete(kNs, in.key, r.operation.fencingToken, "{}", "");
        QCOMPARE(*done.retentionExpiresAtMs - done.updatedAtMs, f.engine().settings().retentionMs);
        f.advanceMs(f.engine().settings().retentionMs - 1);
        QCOMPARE(f.store().purgeExpired({}), std::int64_t(0));
        QCOMPARE(f.engine().claim(in).outcome, ClaimOutcome::Replayed);
        f.advanceMs(1);
        const ClaimResult fresh = f.engine().claim(in);
        QCOMPARE(fresh.outcome, ClaimOutcome::Claimed);
        QCOMPARE(fresh.operation.attempt, 1);
        QVERIFY(fresh.operation.fencingToken > r.operation.fencingToken);
        QCOMPARE(f.store().history(kNs, in.key).size(), std::size_t(1));

        // purge removes only what expired
        reach(f, "run-18:other", OperationState::Succeeded);
        f.engine().complete(kNs, in.key, fresh.operation.fencingToken, "{}", "");
        f.advanceMs(f.engine().settings().retentionMs);
        QCOMPARE(f.store().purgeExpired({}), std::int64_t(2));
        QVERIFY(!f.store().find(kNs, in.key));
        QVERIFY(f.store().history(kNs, in.key).empty());
    }

    void badInputsChangeNothing_data()
    {
        QTest::addColumn<QByteArray>("key");
        QTest::addColumn<QByteArray>("payload");
        QTest::addColumn<QByteArray>("ns");
        QTest::addColumn<int>("code");
        const QByteArray ok = R"({"a":1})";
        QTest::newRow("empty key")
            << QByteArray() << ok << QByteArray("default") << int(ErrorCode::InvalidKey);
        QTest::newRow("256-byte key")
            << QByteArray(256, 'k') << ok << QByteArray("default") << int(ErrorCode::InvalidKey);
        QTest::newRow("non-UTF-8 key") << QByteArray("run-1:\xff\xfe") << ok
                                       << QByteArray("default") << int(ErrorCode::InvalidKey);
        QTest::newRow("overlong UTF-8 key") << QByteArray("run-1:\xc0\xaf") << ok
                                            << QByteArray("default") << int(ErrorCode::InvalidKey);
        QTest::newRow("control char key")
            << QByteArray("run-1:\n") << ok << QByteArray("default") << int(ErrorCode::InvalidKey);
        QTest::newRow("NUL in key") << QByteArray("run-1:\0x", 8) << ok << QByteArray("default")
                                    << int(ErrorCode::InvalidKey);
        QTest::newRow("bidi override key") << QByteArray("run-1:\xe2\x80\xae") << ok
                                           << QByteArray("default") << int(ErrorCode::InvalidKey);
        QTest::newRow("padded key")
            << QByteArray(" run-1:x") << ok << QByteArray("default") << int(ErrorCode::InvalidKey);
        QTest::newRow("bad namespace")
            << QByteArray("run-1:x") << ok << QByteArray("a b") << int(ErrorCode::InvalidKey);
        QTest::newRow("invalid JSON") << QByteArray("run-1:x") << QByteArray("{\"a\":")
                                      << QByteArray("default") << int(ErrorCode::InvalidJson);
        QTest::newRow("empty payload") << QByteArray("run-1:x") << QByteArray()
                                       << QByteArray("default") << int(ErrorCode::InvalidJson);
        QTest::newRow("duplicate member") << QByteArray("run-1:x") << QByteArray(R"({"a":1,"a":2})")
                                          << QByteArray("default") << int(ErrorCode::InvalidJson);
        QTest::newRow("10 MB payload")
            << QByteArray("run-1:x")
            << (QByteArray("[\"") + QByteArray(10 * 1024 * 1024, 'x') + "\"]")
            << QByteArray("default") << int(ErrorCode::PayloadTooLarge);
    }

    void badInputsChangeNothing()
    {
        QFETCH(QByteArray, key);
        QFETCH(QByteArray, payload);
        QFETCH(QByteArray, ns);
        QFETCH(int, code);
        LedgerFixture f;
        reach(f, "existing:op", OperationState::Succeeded);
        const QByteArray before = f.snapshot();
        ClaimInput in = claimInput(key.toStdString(), payload.toStdString());
        in.ns = ns.toStdString();
        try {
            f.engine().claim(in);
            QFAIL("bad input was accepted");
        } catch (const Error &e) {
            QCOMPARE(int(e.code()), code);
            QVERIFY(std::string(e.what()).size() > 10);
        }
        QCOMPARE(f.snapshot(), before);
    }

    void everySuppressionIsRecorded()
    {
        LedgerFixture f;
        reach(f, "a:1", OperationState::Succeeded);
        reach(f, "b:1", OperationState::Dispatching);
        reach(f, "c:1", OperationState::FailedRetryable);
        reach(f, "d:1", OperationState::UnknownOutcome);
        QCOMPARE(f.engine().claim(claimInput("a:1")).outcome, ClaimOutcome::Replayed);
        QCOMPARE(f.engine().claim(claimInput("b:1")).outcome, ClaimOutcome::InProgress);
        QCOMPARE(f.engine().claim(claimInput("c:1")).outcome, ClaimOutcome::RetryLater);
        QCOMPARE(f.engine().claim(claimInput("d:1")).outcome, ClaimOutcome::ReconcileRequired);
        QCOMPARE(f.engine().claim(claimInput("d:1", "[]")).outcome, ClaimOutcome::PayloadMismatch);
        const auto rows = f.store().suppressions(kNs, 0, 100);
        QCOMPARE(rows.size(), std::size_t(5));
        const ClaimOutcome expected[] = {ClaimOutcome::Replayed, ClaimOutcome::InProgress,
                                         ClaimOutcome::RetryLater, ClaimOutcome::ReconcileRequired,
                                         ClaimOutcome::PayloadMismatch};
        for (std::size_t i = 0; i < rows.size(); ++i)
            QCOMPARE(rows[i].outcome, expected[i]);
    }

    void repeatedCompleteIsTheSameWrite()
    {
        LedgerFixture f;
        const ClaimResult r = f.engine().claim(claimInput("run-20:capture"));
        const auto token = r.operation.fencingToken;
        const Operation first =
            f.engine().complete(kNs, "run-20:capture", token, R"({"charge":"ch_1"})", "");
        const QByteArray after = f.snapshot();
        const Operation again =
            f.engine().complete(kNs, "run-20:capture", token, R"({ "charge" : "ch_1" })", "");
        QCOMPARE(again.version, first.version);
        QCOMPARE(f.snapshot(), after);
        QCOMPARE(errorOf([&] {
                     f.engine().complete(kNs, "run-20:capture", token, R"({"charge":"ch_2"})", "");
                 }),
                 ErrorCode::StaleLease);
        QCOMPARE(f.snapshot(), after);
    }

    void retentionHasAFloor()
    {
        LedgerFixture f;
        Engine::Settings settings;
        settings.retentionMs = Engine::MinRetentionMs - 1;
        QCOMPARE(errorOf([&] {
                     Engine(std::shared_ptr<LedgerStore>(&f.store(), [](LedgerStore *) {}),
                            settings, RetryPolicy{});
                 }),
                 ErrorCode::InvalidArgument);
    }

    /// Ten years is the longest duration: beyond it, now + the duration could overflow.
    void durationsHaveACeiling()
    {
        LedgerFixture f;
        Engine::Settings settings;
        settings.retentionMs = MaxDurationMs + 1;
        QCOMPARE(errorOf([&] {
                     Engine(std::shared_ptr<LedgerStore>(&f.store(), [](LedgerStore *) {}),
                            settings, RetryPolicy{});
                 }),
                 ErrorCode::InvalidArgument);
        const ClaimResult claimed = f.engine().claim(claimInput("ceiling:1"));
        const QByteArray before = f.snapshot();
        QCOMPARE(errorOf([&] {
                     f.engine().fail(claimed.operation.ns, claimed.operation.key,
                                     claimed.operation.fencingToken, ErrorClass::RateLimited, "429",
                                     MaxDurationMs + 1);
                 }),
                 ErrorCode::InvalidArgument);
        QCOMPARE(f.snapshot(), before);
        const Operation waiting = f.engine().fail(claimed.operation.ns, claimed.operation.key,
                                                  claimed.operation.fencingToken,
                                                  ErrorClass::RateLimited, "429", MaxDurationMs);
        QCOMPARE(waiting.state, OperationState::FailedRetryable);
    }

    void callerIdentifiersArePrintable_data()
    {
        QTest::addColumn<int>("field");
        QTest::addColumn<QByteArray>("value");
        QTest::newRow("run id newline") << 0 << QByteArray("run-1\nclaimed other");
        QTest::newRow("step id ESC") << 1 << QByteArray("step\x1b[2J");
        QTest::newRow("target invalid UTF-8") << 2 << QByteArray("t\xff");
        QTest::newRow("owner too long") << 3 << QByteArray(256, 'o');
    }

    void callerIdentifiersArePrintable()
    {
        QFETCH(int, field);
        QFETCH(QByteArray, value);
        LedgerFixture f;
        const QByteArray before = f.snapshot();
        ClaimInput in = claimInput("run-21:x");
        std::string *fields[] = {&in.runId, &in.stepId, &in.target, &in.owner};
        *fields[field] = value.toStdString();
        QCOMPARE(errorOf([&] { f.engine().claim(in); }), ErrorCode::InvalidKey);
        QCOMPARE(f.snapshot(), before);
    }

    /// A provider's detail is kept as written (outputs escape it), but for what no text column
    /// holds (bytes that are not UTF-8, NUL), and cut to 4096 bytes: the write never fails.
    void errorDetailIsKeptAsWrittenWithinLimits()
    {
        LedgerFixture f;
        const ClaimResult r = f.engine().claim(claimInput("run-22:x"));
        const std::string hostile =
            std::string("boom\x1b[2J\nclaimed  other  token=999\xff\0!", 37) +
            std::string(10'000, 'x');
        const Operation op = f.engine().fail(kNs, "run-22:x", r.operation.fencingToken,
                                             ErrorClass::Transient, hostile);
        QCOMPARE(op.errorDetail.substr(0, 41),
                 std::string("boom\x1b[2J\nclaimed  other  token=999\uFFFD\uFFFD!"));
        QVERIFY(op.errorDetail.size() <= 4096);
        QCOMPARE(f.store().find(kNs, "run-22:x")->errorDetail, op.errorDetail);
    }

    void staleLeaseIsNotAFailureClass()
    {
        LedgerFixture f;
        const ClaimResult r = f.engine().claim(claimInput("run-23:x"));
        const QByteArray before = f.snapshot();
        QCOMPARE(errorOf([&] {
                     f.engine().fail(kNs, "run-23:x", r.operation.fencingToken,
                                     ErrorClass::StaleLease, "");
                 }),
                 ErrorCode::InvalidArgument);
        QCOMPARE(f.snapshot(), before);
    }

    void projectionSelectingNothingIsRefused()
    {
        LedgerFixture f;
        ClaimInput in = claimInput("run-24:x", R"({"amount":5})");
        in.fingerprintFields = {"/amuont"};
        QCOMPARE(errorOf([&] { f.engine().claim(in); }), ErrorCode::InvalidArgument);
        QVERIFY(!f.store().find(kNs, in.key));
    }
};

QTEST_GUILESS_MAIN(TestLedgerContract)
#include "tst_ledgercontract.moc"
