// SPDX-License-Identifier: Apache-2.0
// The DLQ replay action through its command object, on every store: dead letters requeued with
// their keys, replays at once, generations, cancellation.
#include <algorithm>
#include <barrier>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <QtTest>

#include "auditverify.h"
#include "dlqreplaycommand.h"
#include "error.h"
#include "guardedactionhelpers.h"
#include "ledgerfixture.h"
#include "queueenvelope.h"

using namespace idempo;
using namespace idempo::test;

namespace {

std::string envelope(const std::string &key, std::int64_t producedAtMs)
{
    QueueEnvelope e;
    e.runId = key.substr(0, key.find(':'));
    e.stepId = "refund";
    e.sourceAgent = "planner";
    e.targetAgent = "payments";
    e.payload = {{"amount", 10}, {"currency", "EUR"}, {"key", key}};
    e.producedAtMs = producedAtMs;
    e.idempotencyKey = key;
    return e.toJson().dump();
}

} // namespace

class TestDlqReplayCommand final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    /// 1,000 dead letters of which 900 are already completed: the replay requeues them with
    /// their keys, the consumer's claims execute exactly 100 and suppress 900, and no provider
    /// effect happens twice. Two replays of the same set start at once: one requeues every
    /// message, the other is refused up front (InProgress) and writes nothing.
    void replayOfAThousandDeadLettersExecutesOnlyTheMissingHundred()
    {
        LedgerFixture f;
        auto queue = LedgerFixture::openQueue(f.sharedStore());
        const std::string q = "refunds_" + std::string(LedgerFixture::storeName());
        queue->createQueue(q, {.maxReads = 1});
        const std::int64_t now = f.store().nowMs();
        std::map<std::string, int> effects; // the provider's journal: effects per key
        for (int i = 0; i < 1000; ++i) {
            const std::string key = "run-r" + std::to_string(i) + ":refund";
            if (i < 900) {
                ClaimInput in;
                in.ns = kNs;
                in.key = key;
                in.payloadJson = QueueEnvelope::fromJson(nlohmann::json::parse(envelope(key, now)))
                                     .payload.dump();
                in.owner = "worker-a";
                const ClaimResult r = f.engine().claim(in);
                ++effects[key];
                f.engine().complete(kNs, key, r.operation.fencingToken, R"({"ok":true})", "");
            }
            queue->send(q, envelope(key, now), "", 0);
        }
        // Delivered once, then moved to the dead-letter queue by the read after.
        for (int round = 0; round < 2; ++round)
            for (std::vector<QueueMessage> got; !(got = queue->read(q, 0, 1000)).empty();) {
            }
        const std::vector<std::int64_t> ids = DlqReplayCommand::resolveFilter(*queue, q, "all");
        QCOMPARE(ids.size(), std::size_t(1000));

        std::vector<std::chrono::milliseconds> sleeps;
        std::mutex sleepsMutex;
        const auto request = [&] {
            DlqReplayCommand::Request r;
            r.ns = kNs;
            r.queue = q;
            r.ids = ids;
            r.reason = "provider outage fixed";
            r.ratePerSecond = 500;
            r.confirmCount = 1000;
            return r;
        };
        DlqReplayCommand::Options options;
        options.sleep = [&](std::chrono::milliseconds ms) {
            std::lock_guard lock(sleepsMutex);
            sleeps.push_back(ms);
        };
        DlqReplayCommand dry(f.store(), *queue, kOliver, request(), options);
        QVERIFY(dry.validate().empty());
        const ActionPreview preview = dry.describe();
        QCOMPARE(preview.details.at("by_class").at("already_completed").get<int>(), 900);
        QCOMPARE(preview.details.at("by_class").at("will_execute").get<int>(), 100);
        QCOMPARE(preview.details.at("count").get<int>(), 1000);
        auto wrongCount = request();
        wrongCount.confirmCount = 999;
        QCOMPARE(errorOf([&] {
                     DlqReplayCommand(f.store(), *queue, kOliver, wrongCount, options).execute();
                 }),
                 ErrorCode::Refused);
        QCOMPARE(queue->metrics(q).length, std::int64_t(0));

        std::shared_ptr<LedgerStore> stores[] = {f.openAnother(), f.openAnother()};
        std::shared_ptr<MessageQueue> queues[] = {LedgerFixture::openQueue(stores[0]),
                                                  LedgerFixture::openQueue(stores[1])};
        std::barrier start(2);
        std::int64_t requeued[2] = {0, 0};
        std::optional<Error> refusals[2];
        std::vector<std::thread> replays;
        for (int i = 0; i < 2; ++i)
            replays.emplace_back([&, i] {
                DlqReplayCommand replay(*stores[i], *queues[i],
                                        i == 0 ? kOliver : ActorIdentity{"otto", "operator"},
                                        request(), options);
                replay.describe();
                start.arrive_and_wait();
                try {
                    requeued[i] = replay.execute().requeued;
                } catch (const Error &e) {
                    refusals[i] = e;
                }
            });
        for (auto &t : replays)
            t.join();
        QCOMPARE(requeued[0] + requeued[1], std::int64_t(1000));
        QCOMPARE(int(bool(refusals[0])) + int(bool(refusals[1])), 1);
        const Error &refused = refusals[0] ? *refusals[0] : *refusals[1];
        QCOMPARE(refused.code(), ErrorCode::InProgress);
        // Named: the holder, the one that was not refused.
        QVERIFY2(std::string(refused.what()).find(refusals[0] ? "otto" : "oliver") !=
                     std::string::npos,
                 refused.what());
        QCOMPARE(queue->metrics(q).length, std::int64_t(1000));
        QVERIFY(queue->deadLetters(q, 0, 10).empty());
        for (const auto &gap : sleeps)
            QCOMPARE(gap.count(), std::int64_t(2)); // 500 messages per second

        // The consumer: claim by the envelope's key, act only on claimed.
        int executed = 0;
        for (std::vector<QueueMessage> batch; !(batch = queue->read(q, 30'000, 500)).empty();) {
            for (const QueueMessage &m : batch) {
                const QueueEnvelope e = QueueEnvelope::fromJson(nlohmann::json::parse(m.message));
                const nlohmann::json headers = nlohmann::json::parse(m.headers);
                QCOMPARE(headers.at("replay").at("generation").get<int>(), 1);
                ClaimInput in;
                in.ns = kNs;
                in.key = e.idempotencyKey;
                in.payloadJson = e.payload.dump();
                in.owner = "worker-b";
                const ClaimResult r = f.engine().claim(in);
                if (r.outcome == ClaimOutcome::Claimed) {
                    ++effects[e.idempotencyKey];
                    ++executed;
                    f.engine().complete(kNs, in.key, r.operation.fencingToken, R"({"ok":true})",
                                        "");
                } else {
                    QCOMPARE(r.outcome, ClaimOutcome::Replayed);
                }
                queue->deleteMessage(q, m.msgId);
            }
        }
        QCOMPARE(executed, 100);
        QCOMPARE(effects.size(), std::size_t(1000));
        for (const auto &[key, count] : effects)
            QCOMPARE(count, 1);
        std::int64_t replayed = 0;
        for (const auto &[outcome, count] : f.store().metrics(kNs).suppressionsByOutcome)
            if (outcome == ClaimOutcome::Replayed)
                replayed += count;
        QCOMPARE(replayed, std::int64_t(900));
        const auto audit = f.store().auditLog(0, 100);
        QCOMPARE(audit.size(), std::size_t(2)); // start and finish of the one replay
        QVERIFY(AuditVerify(f.store()).run().ok);
    }

    void replayKeepsGenerationsApartAndCanBeCancelled()
    {
        LedgerFixture f;
        auto queue = LedgerFixture::openQueue(f.sharedStore());
        const std::string q = "mails_" + std::string(LedgerFixture::storeName());
        queue->createQueue(q, {.maxReads = 1});
        const std::int64_t now = f.store().nowMs();
        for (int i = 0; i < 4; ++i)
            queue->send(q, envelope("run-g" + std::to_string(i) + ":mail", now), "", 0);
        queue->send(q, R"({"not":"an envelope"})", "", 0);
        queue->send(q, envelope("run-old:mail", now - 25 * 3600'000), "", 0);
        for (int round = 0; round < 2; ++round)
            queue->read(q, 0, 100);
        const std::vector<std::int64_t> ids = DlqReplayCommand::resolveFilter(*queue, q, "all");
        QCOMPARE(ids.size(), std::size_t(6));

        DlqReplayCommand::Request request;
        request.ns = kNs;
        request.queue = q;
        request.ids = ids;
        request.reason = "retry after fix";
        request.confirmCount = 4;
        int progressCalls = 0;
        DlqReplayCommand::Options options;
        options.sleep = [](std::chrono::milliseconds) {};
        options.progress = [&](std::int64_t, std::int64_t total) {
            ++progressCalls;
            QCOMPARE(total, std::int64_t(4));
        };
        options.cancelled = [&] { return progressCalls == 2; };
        DlqReplayCommand replay(f.store(), *queue, kOliver, request, options);
        const nlohmann::json byClass = replay.describe().details.at("by_class");
        QCOMPARE(byClass.at("will_execute").get<int>(), 4);
        QCOMPARE(byClass.at("unreadable").get<int>(), 1);
        QCOMPARE(byClass.at("expired_by_retention").get<int>(), 1);
        const nlohmann::json done = replay.execute().toJson();
        QCOMPARE(done.at("requeued").get<int>(), 2);
        QVERIFY(done.at("cancelled").get<bool>());
        QCOMPARE(done.at("not_replayed").get<int>(), 2);
        QCOMPARE(queue->deadLetters(q, 0, 10).size(), std::size_t(4));

        // The two requeued fail again: a new generation, outside the frozen set.
        queue->read(q, 0, 10);
        queue->read(q, 0, 10);
        const auto letters = queue->deadLetters(q, 0, 10);
        QCOMPARE(letters.size(), std::size_t(6));
        int secondGeneration = 0;
        for (const DeadLetter &d : letters) {
            const nlohmann::json h = nlohmann::json::parse(d.message.headers);
            if (h.contains("replay")) {
                ++secondGeneration;
                QCOMPARE(h.at("replay").at("generation").get<int>(), 1);
                QVERIFY(std::find(ids.begin(), ids.end(), d.message.msgId) == ids.end());
            }
        }
        QCOMPARE(secondGeneration, 2);
        // The same replay again picks up only what is left of its own set.
        request.confirmCount = 2;
        options.cancelled = {};
        options.progress = {};
        const nlohmann::json rest =
            DlqReplayCommand(f.store(), *queue, kOliver, request, options).execute().toJson();
        QCOMPARE(rest.at("requeued").get<int>(), 2);
        QCOMPARE(queue->deadLetters(q, 0, 10).size(), std::size_t(4));
    }

    /// A replay whose runner died after its first requeue (no finish) holds the rest of its set
    /// until its idle limit has passed on the ledger's clock; then the next replay takes it over,
    /// its record names the abandoned run, and the dead run's late requeue is refused.
    void abandonedReplayIsTakenOver()
    {
        LedgerFixture f;
        auto queue = LedgerFixture::openQueue(f.sharedStore());
        const std::string q = "hooks_" + std::string(LedgerFixture::storeName());
        queue->createQueue(q, {.maxReads = 1});
        const std::int64_t now = f.store().nowMs();
        for (int i = 0; i < 3; ++i)
            queue->send(q, envelope("run-h" + std::to_string(i) + ":hook", now), "", 0);
        for (int round = 0; round < 2; ++round)
            queue->read(q, 0, 100);
        DlqReplayCommand::Request request;
        request.ns = kNs;
        request.queue = q;
        request.ids = DlqReplayCommand::resolveFilter(*queue, q, "all");
        request.reason = "hooks endpoint fixed";
        request.confirmCount = 3;
        request.ratePerSecond = 1;
        DlqReplayCommand::Options options;
        options.sleep = [](std::chrono::milliseconds) {};
        DlqReplayCommand::Options dies = options;
        dies.progress = [](std::int64_t, std::int64_t) { throw std::runtime_error("killed"); };
        QVERIFY_THROWS_EXCEPTION(
            std::runtime_error,
            DlqReplayCommand(f.store(), *queue, kOliver, request, dies).execute());
        QCOMPARE(queue->deadLetters(q, 0, 10).size(), std::size_t(2));
        const AuditRecord begun = f.store().auditLog(0, 10).at(0);
        QCOMPARE(begun.entry.action, std::string("dlq_replay"));

        const ActorIdentity otto{"otto", "operator"};
        request.confirmCount = 2;
        try {
            DlqReplayCommand(f.store(), *queue, otto, request, options).execute();
            QFAIL("a replay of a set another live replay holds began");
        } catch (const Error &held) {
            QCOMPARE(held.code(), ErrorCode::InProgress);
            QVERIFY2(std::string(held.what()).find("oliver") != std::string::npos, held.what());
        }
        QCOMPARE(f.store().auditLog(0, 10).size(), std::size_t(1));

        f.advanceMs(DlqReplayCommand::idleLimitMs(request.ratePerSecond) + 1);
        const ReplayOutcome taken =
            DlqReplayCommand(f.store(), *queue, otto, request, options).execute();
        QCOMPARE(taken.requeued, std::int64_t(2));
        const nlohmann::json tookOver =
            nlohmann::json::parse(f.store().auditLog(begun.seq, 10).at(0).entry.detail)
                .at("took_over");
        QCOMPARE(tookOver.size(), std::size_t(1));
        QCOMPARE(tookOver[0].at("begun_seq").get<std::int64_t>(), begun.seq);
        QCOMPARE(tookOver[0].at("who").get<std::string>(), std::string("oliver"));

        const nlohmann::json late = {
            {"replay",
             {{"replay_id", nlohmann::json::parse(begun.entry.detail).at("replay_id")},
              {"begun_seq", begun.seq}}}};
        QCOMPARE(errorOf([&] { queue->requeueDeadLetter(q, request.ids.back(), late.dump()); }),
                 ErrorCode::Refused);
        QVERIFY(AuditVerify(f.store()).run().ok);
    }
};

QTEST_GUILESS_MAIN(TestDlqReplayCommand)
#include "tst_dlqreplaycommand.moc"
