// SPDX-License-Identifier: Apache-2.0
// The set a DLQ replay names, on the store the suite runs against (SQLite, or PostgreSQL under
// tests/pg/with-postgres.sh): an id that is not a dead letter of the queue is named and refuses
// the replay, dry run and confirmation alike, with nothing written; a replay with nothing to
// requeue requeues and audits nothing; ids a cancelled replay already took are left out when it
// runs again, not refused.
#include <QtTest>

#include "dlqreplaycommand.h"
#include "error.h"
#include "ledgerfixture.h"
#include "queueenvelope.h"

using namespace idempo;
using idempo::test::LedgerFixture;

namespace {

const std::string kNs = "default";
const ActorIdentity kOliver{"oliver", "operator"};

std::string envelope(const std::string &key, std::int64_t producedAtMs)
{
    QueueEnvelope e;
    e.runId = key.substr(0, key.find(':'));
    e.stepId = "refund";
    e.sourceAgent = "planner";
    e.targetAgent = "payments";
    e.payload = {{"amount", 10}, {"currency", "EUR"}};
    e.producedAtMs = producedAtMs;
    e.idempotencyKey = key;
    return e.toJson().dump();
}

/// A queue (named per store, since PostgreSQL queues outlive a test) holding `letters` dead
/// letters: the messages are read past their limit of one read.
struct DeadLetters
{
    std::shared_ptr<MessageQueue> queue;
    std::string name;
    std::vector<std::int64_t> ids;
};

DeadLetters deadLetters(LedgerFixture &f, const std::string &name,
                        const std::vector<std::string> &messages)
{
    DeadLetters d{
        LedgerFixture::openQueue(f.sharedStore()), name + "_" + LedgerFixture::storeName(), {}};
    d.queue->createQueue(d.name, {.maxReads = 1});
    for (const std::string &m : messages)
        d.queue->send(d.name, m, "", 0);
    for (int round = 0; round < 2; ++round)
        d.queue->read(d.name, 0, 100);
    d.ids = DlqReplayCommand::resolveFilter(*d.queue, d.name, "all");
    return d;
}

DlqReplayCommand::Request replayOf(const DeadLetters &d, std::vector<std::int64_t> ids,
                                   std::optional<std::int64_t> confirm = std::nullopt)
{
    DlqReplayCommand::Request r;
    r.ns = kNs;
    r.queue = d.name;
    r.ids = std::move(ids);
    r.reason = "provider fixed";
    r.confirmCount = confirm;
    return r;
}

DlqReplayCommand::Options quick()
{
    DlqReplayCommand::Options o;
    o.sleep = [](std::chrono::milliseconds) {};
    return o;
}

} // namespace

class TestDlqReplaySet final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void unknownIdsAreNamedAndRefused_data()
    {
        QTest::addColumn<bool>("withRealLetter");
        QTest::newRow("only an unknown id") << false;
        QTest::newRow("a dead letter and an unknown id") << true;
    }
    void unknownIdsAreNamedAndRefused()
    {
        QFETCH(bool, withRealLetter);
        LedgerFixture f;
        DeadLetters d = deadLetters(f, withRealLetter ? "steps_mixed" : "steps_unknown",
                                    {envelope("run-1:refund", f.store().nowMs())});
        QCOMPARE(d.ids.size(), std::size_t(1));
        std::vector<std::int64_t> ids{987654};
        if (withRealLetter)
            ids.push_back(d.ids.front());
        const QByteArray before = f.snapshot();

        DlqReplayCommand dry(f.store(), *d.queue, kOliver, replayOf(d, ids), quick());
        const std::vector<std::string> problems = dry.validate();
        QCOMPARE(problems.size(), std::size_t(1));
        QVERIFY2(problems.front().find("987654") != std::string::npos, problems.front().c_str());
        QVERIFY2(problems.front().find(d.name) != std::string::npos, problems.front().c_str());
        if (withRealLetter) // only the unknown one is named
            QVERIFY(problems.front().find(std::to_string(d.ids.front())) == std::string::npos);
        QCOMPARE(dry.describe().details.at("unknown_ids"), nlohmann::json::array({987654}));

        // Confirming whatever count the dry run showed changes nothing: the set is refused.
        const std::int64_t count = dry.describe().details.at("count").get<std::int64_t>();
        DlqReplayCommand confirmed(f.store(), *d.queue, kOliver, replayOf(d, ids, count), quick());
        try {
            confirmed.execute();
            QFAIL("a replay of an unknown id was executed");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::Refused);
            QVERIFY2(std::string(e.what()).find("987654") != std::string::npos, e.what());
        }
        QCOMPARE(f.snapshot(), before);
        QVERIFY(f.store().auditLog(0, 10).empty());
        QCOMPARE(d.queue->deadLetters(d.name, 0, 10).size(), std::size_t(1));
    }

    /// Nothing to requeue (every message of the set stays, here unreadable): the replay with
    /// --confirm 0 answers with zero counts and writes no audit record.
    void anEmptyReplayRequeuesAndAuditsNothing()
    {
        LedgerFixture f;
        DeadLetters d = deadLetters(f, "steps_empty", {R"({"not":"an envelope"})"});
        DlqReplayCommand replay(f.store(), *d.queue, kOliver, replayOf(d, d.ids, 0), quick());
        QVERIFY(replay.validate().empty());
        QCOMPARE(replay.describe().details.at("count").get<int>(), 0);
        const nlohmann::json done = replay.execute().toJson();
        QCOMPARE(done.at("requeued").get<int>(), 0);
        QCOMPARE(done.at("not_replayed").get<int>(), 1);
        QVERIFY(done.at("audit_seq").empty());
        QVERIFY(f.store().auditLog(0, 10).empty());
        QCOMPARE(d.queue->deadLetters(d.name, 0, 10).size(), std::size_t(1));
        QCOMPARE(d.queue->metrics(d.name).length, std::int64_t(0));
    }

    /// The same replay run again after it took its letters: the ids it took are left out (its
    /// audit record froze them), named as replayed before, and nothing more is written.
    void idsTakenByAnEarlierReplayAreLeftOut()
    {
        LedgerFixture f;
        DeadLetters d =
            deadLetters(f, "steps_again", {envelope("run-2:refund", f.store().nowMs())});
        const nlohmann::json first =
            DlqReplayCommand(f.store(), *d.queue, kOliver, replayOf(d, d.ids, 1), quick())
                .execute()
                .toJson();
        QCOMPARE(first.at("requeued").get<int>(), 1);
        QCOMPARE(f.store().auditLog(0, 10).size(), std::size_t(2));

        DlqReplayCommand again(f.store(), *d.queue, kOliver, replayOf(d, d.ids, 0), quick());
        QVERIFY(again.validate().empty());
        const ActionPreview preview = again.describe();
        QCOMPARE(preview.details.at("replayed_before"), nlohmann::json(d.ids));
        QVERIFY(preview.details.at("unknown_ids").empty());
        QCOMPARE(again.execute().toJson().at("requeued").get<int>(), 0);
        QCOMPARE(f.store().auditLog(0, 10).size(), std::size_t(2));
    }
};

QTEST_GUILESS_MAIN(TestDlqReplaySet)
#include "tst_dlqreplayset.moc"
