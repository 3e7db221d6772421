// SPDX-License-Identifier: Apache-2.0
// The MessageQueue contract: one suite, run against every store that has queues. Queues and
// their names, what a send accepts, metrics and the transactional outbox; reading, visibility
// and dead letters are in tst_queuedelivery.cpp.
#include <limits>

#include <QtTest>

#include "error.h"
#include "queuecontracthelpers.h"
#include "queuefixture.h"
#include "queuerules.h"

using namespace idempo;
using namespace idempo::test;

namespace {

std::string errorMessage(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    return {};
}

} // namespace

class TestQueueContract final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", QueueFixture::storeName()); }

    void createMakesQueueAndDeadLetterQueue()
    {
        QueueFixture f;
        const QueueInfo info = create(f, 3);
        QCOMPARE(info.name, kQueue);
        QCOMPARE(info.maxReads, std::optional<int>(3));
        QCOMPARE(info.deadLetterQueue, kDlq);
        QCOMPARE(info.createdAtMs, f.queue().nowMs());
        QCOMPARE(f.queueTables(),
                 QStringList({QStringLiteral("a_orders"), QStringLiteral("a_orders_dlq"),
                              QStringLiteral("q_orders"), QStringLiteral("q_orders_dlq")}));
        const auto queues = f.queue().listQueues();
        QCOMPARE(queues.size(), std::size_t(2));
        QCOMPARE(queues[0].name, kQueue);
        QCOMPARE(queues[1].name, kDlq);
        QVERIFY(!queues[1].maxReads);
        QVERIFY(queues[1].deadLetterQueue.empty());
    }

    void createIsIdempotent()
    {
        QueueFixture f;
        const QueueInfo first = create(f, 3);
        f.queue().send(kQueue, R"({"n":1})", "", 0);
        f.advanceMs(1'000);
        const QueueInfo again = create(f, 3);
        QCOMPARE(again.createdAtMs, first.createdAtMs);
        QCOMPARE(again.maxReads, first.maxReads);
        QCOMPARE(f.queue().listQueues().size(), std::size_t(2));
        QCOMPARE(f.queue().browse(kQueue, 0, 10).size(), std::size_t(1)); // the message survived

        QCOMPARE(errorOf([&] { create(f, 4); }), ErrorCode::InvalidArgument);
        QCOMPARE(f.queue().listQueues().front().maxReads, std::optional<int>(3));
    }

    void invalidNamesAreRefused_data()
    {
        QTest::addColumn<QByteArray>("name");
        QTest::addColumn<QByteArray>("problem");
        QTest::newRow("uppercase")
            << QByteArray("Q") << QByteArray("start with a lowercase letter");
        QTest::newRow("hyphen") << QByteArray("a-b") << QByteArray("'-' at position 1");
        QTest::newRow("sql") << QByteArray("x; drop table") << QByteArray("';' at position 1");
        QTest::newRow("48 characters") << QByteArray(48, 'a') << QByteArray("48 characters long");
        QTest::newRow("empty") << QByteArray("") << QByteArray("empty");
        QTest::newRow("digit first")
            << QByteArray("1abc") << QByteArray("start with a lowercase letter");
        QTest::newRow("underscore first")
            << QByteArray("_abc") << QByteArray("start with a lowercase letter");
        QTest::newRow("nul byte") << QByteArray("ab\0c", 4) << QByteArray("\\x00 at position 2");
        QTest::newRow("non-ascii")
            << QByteArray("caf\xc3\xa9") << QByteArray("\\xc3 at position 3");
    }

    void invalidNamesAreRefused()
    {
        QFETCH(QByteArray, name);
        QFETCH(QByteArray, problem);
        QueueFixture f;
        const std::string queue = name.toStdString();
        const std::string message = errorMessage([&] { f.queue().createQueue(queue, {}); });
        QVERIFY2(message.find(problem.toStdString()) != std::string::npos, message.c_str());
        QCOMPARE(errorOf([&] { f.queue().createQueue(queue, {}); }), ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().send(queue, "{}", "", 0); }), ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().read(queue, 1'000, 1); }), ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().browse(queue, 0, 1); }), ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().metrics(queue); }), ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().deleteMessage(queue, 1); }), ErrorCode::InvalidArgument);
        QVERIFY(f.queue().listQueues().empty());
        QVERIFY(f.queueTables().isEmpty());
    }

    void namesReservedOrTooLongForDeadLetters_data()
    {
        QTest::addColumn<QByteArray>("name");
        QTest::newRow("dlq suffix") << QByteArray("orders_dlq");
        QTest::newRow("44 characters") << QByteArray(44, 'b');
        QTest::newRow("47 characters") << QByteArray(47, 'c');
    }

    void namesReservedOrTooLongForDeadLetters()
    {
        QFETCH(QByteArray, name);
        QueueFixture f;
        QCOMPARE(errorOf([&] { f.queue().createQueue(name.toStdString(), {}); }),
                 ErrorCode::InvalidArgument);
        QVERIFY(f.queue().listQueues().empty());
        QVERIFY(f.queueTables().isEmpty());
    }

    void longestNameIsAccepted()
    {
        QueueFixture f;
        const std::string name = "q" + std::string(42, '0');
        f.queue().createQueue(name, {});
        QCOMPARE(f.queue().listQueues().back().name, name + "_dlq");
        QCOMPARE(f.queueTables().size(), 4);
    }

    void unknownQueueIsNotFound()
    {
        QueueFixture f;
        QCOMPARE(errorOf([&] { f.queue().send("missing", "{}", "", 0); }), ErrorCode::NotFound);
        QCOMPARE(errorOf([&] { f.queue().read("missing", 1'000, 1); }), ErrorCode::NotFound);
        QCOMPARE(errorOf([&] { f.queue().metrics("missing"); }), ErrorCode::NotFound);
        QCOMPARE(errorOf([&] { f.queue().deadLetters("missing", 0, 10); }), ErrorCode::NotFound);
        QVERIFY(f.queue().listQueues().empty());
        QVERIFY(f.queueTables().isEmpty());
    }

    void sendStoresCanonicalJson()
    {
        QueueFixture f;
        create(f);
        const std::int64_t now = f.queue().nowMs();
        const std::int64_t first =
            f.queue().send(kQueue, R"({ "b": 2, "a": [1, 2] })", R"({"trace":"t-1"})", 0);
        const std::int64_t second = f.queue().send(kQueue, "42", "", 0);
        QVERIFY(second > first);
        const auto all = f.queue().browse(kQueue, 0, 10);
        QCOMPARE(ids(all), std::vector<std::int64_t>({first, second}));
        QCOMPARE(all[0].message, std::string(R"({"a":[1,2],"b":2})"));
        QCOMPARE(all[0].headers, std::string(R"({"trace":"t-1"})"));
        QCOMPARE(all[0].readCount, 0);
        QCOMPARE(all[0].enqueuedAtMs, now);
        QCOMPARE(all[0].vtMs, now);
        QVERIFY(!all[0].lastReadAtMs);
        QCOMPARE(all[1].message, std::string("42"));
        QVERIFY(all[1].headers.empty());
    }

    void invalidJsonIsRefused_data()
    {
        QTest::addColumn<QByteArray>("message");
        QTest::addColumn<QByteArray>("headers");
        QTest::addColumn<int>("code");
        const int invalidJson = int(ErrorCode::InvalidJson);
        QTest::newRow("truncated") << QByteArray("{") << QByteArray() << invalidJson;
        QTest::newRow("empty message") << QByteArray("") << QByteArray() << invalidJson;
        QTest::newRow("trailing comma") << QByteArray("[1,]") << QByteArray() << invalidJson;
        QTest::newRow("duplicate member")
            << QByteArray(R"({"a":1,"a":2})") << QByteArray() << invalidJson;
        QTest::newRow("integer beyond 2^53")
            << QByteArray("9007199254740993") << QByteArray() << invalidJson;
        QTest::newRow("headers not json")
            << QByteArray("{}") << QByteArray("{trace}") << invalidJson;
        QTest::newRow("headers an array") << QByteArray("{}") << QByteArray("[1]") << invalidJson;
        QTest::newRow("message too large")
            << (QByteArray("\"") + QByteArray(int(MaxQueueMessageBytes), 'x') + QByteArray("\""))
            << QByteArray() << int(ErrorCode::PayloadTooLarge);
    }

    void invalidJsonIsRefused()
    {
        QFETCH(QByteArray, message);
        QFETCH(QByteArray, headers);
        QFETCH(int, code);
        QueueFixture f;
        create(f);
        QCOMPARE(errorOf([&] {
                     f.queue().send(kQueue, message.toStdString(), headers.toStdString(), 0);
                 }),
                 ErrorCode(code));
        QVERIFY(f.queue().browse(kQueue, 0, 10).empty());
        QCOMPARE(f.queue().metrics(kQueue).totalMessages, std::int64_t(0));
    }

    void badArgumentsAreRefused()
    {
        QueueFixture f;
        create(f);
        QCOMPARE(errorOf([&] { f.queue().createQueue("other", {.maxReads = 0}); }),
                 ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().send(kQueue, "{}", "", -1); }),
                 ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().read(kQueue, -1, 1); }), ErrorCode::InvalidArgument);
        // Ten years is the longest duration; beyond it, now + the duration could overflow.
        QCOMPARE(errorOf([&] { f.queue().send(kQueue, "{}", "", MaxDurationMs + 1); }),
                 ErrorCode::InvalidArgument);
        QCOMPARE(
            errorOf([&] { f.queue().read(kQueue, std::numeric_limits<std::int64_t>::max(), 1); }),
            ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().read(kQueue, 1'000, 0); }), ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().read(kQueue, 1'000, MaxQueueBatch + 1); }),
                 ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().browse(kQueue, 0, 0); }), ErrorCode::InvalidArgument);
        QCOMPARE(f.queue().listQueues().size(), std::size_t(2));
        QVERIFY(f.queue().browse(kQueue, 0, 10).empty());
        // The longest duration itself is taken.
        f.queue().send(kQueue, "{}", "", MaxDurationMs);
        QVERIFY(f.queue().read(kQueue, MaxDurationMs, 1).empty());
        QCOMPARE(f.queue().metrics(kQueue).totalMessages, std::int64_t(1));
    }

    void metricsCountMessages()
    {
        QueueFixture f;
        create(f);
        QueueMetrics empty = f.queue().metrics(kQueue);
        QCOMPARE(empty.queue, kQueue);
        QCOMPARE(empty.length, std::int64_t(0));
        QCOMPARE(empty.totalMessages, std::int64_t(0));
        QVERIFY(!empty.oldestMessageAgeMs);
        QVERIFY(!empty.newestMessageAgeMs);

        const std::int64_t first = f.queue().send(kQueue, "1", "", 0);
        f.advanceMs(5'000);
        f.queue().send(kQueue, "2", "", 0);
        f.advanceMs(2'000);
        f.queue().send(kQueue, "3", "", 60'000);
        f.advanceMs(1'000);
        f.queue().read(kQueue, 30'000, 1);
        const QueueMetrics m = f.queue().metrics(kQueue);
        QCOMPARE(m.length, std::int64_t(3));
        QCOMPARE(m.visibleLength, std::int64_t(1)); // one read, one delayed
        QCOMPARE(m.oldestMessageAgeMs, std::optional<std::int64_t>(8'000));
        QCOMPARE(m.newestMessageAgeMs, std::optional<std::int64_t>(1'000));
        QCOMPARE(m.totalMessages, std::int64_t(3));
        QCOMPARE(m.scrapeTimeMs, f.queue().nowMs());

        f.queue().deleteMessage(kQueue, first);
        const QueueMetrics after = f.queue().metrics(kQueue);
        QCOMPARE(after.length, std::int64_t(2));
        QCOMPARE(after.totalMessages, std::int64_t(3)); // sent, not held
    }

    void outboxIsAtomic()
    {
        QueueFixture f;
        LedgerStore &ledger = f.ledger();
        create(f);

        // Worker A's lease lapses and worker B takes the (read) step over: A's token is stale.
        ClaimInput in;
        in.key = "run-1:extract";
        in.payloadJson = R"({"doc":7})";
        in.kind = ToolKind::Read;
        in.owner = "worker-a";
        in.leaseMs = 1'000;
        const Operation a = f.engine().claim(in).operation;
        f.advanceMs(1'001);
        in.owner = "worker-b";
        const ClaimResult b = f.engine().claim(in);
        QCOMPARE(b.outcome, ClaimOutcome::Claimed);

        const std::string next = R"({"run_id":"run-1","step_id":"check"})";
        TransitionRequest done{.ns = in.ns,
                               .key = in.key,
                               .from = OperationState::Dispatching,
                               .fencingToken = a.fencingToken,
                               .to = OperationState::Succeeded,
                               .actor = "worker-a",
                               .result = std::string(R"({"ok":true})"),
                               .retentionMs = 3'600'000};
        QCOMPARE(errorOf([&] { ledger.transitionAndSend(done, kQueue, next, ""); }),
                 ErrorCode::StaleLease);
        QVERIFY(f.queue().browse(kQueue, 0, 10).empty());
        QCOMPARE(f.queue().metrics(kQueue).totalMessages, std::int64_t(0));

        // A refused send undoes the transition too.
        done.fencingToken = b.operation.fencingToken;
        done.actor = "worker-b";
        QCOMPARE(errorOf([&] { ledger.transitionAndSend(done, "missing", next, ""); }),
                 ErrorCode::NotFound);
        QCOMPARE(errorOf([&] { ledger.transitionAndSend(done, kQueue, "{", ""); }),
                 ErrorCode::InvalidJson);
        const Operation unchanged = *ledger.find(in.ns, in.key);
        QCOMPARE(unchanged.state, OperationState::Dispatching);
        QCOMPARE(unchanged.version, b.operation.version);
        QCOMPARE(ledger.history(in.ns, in.key).size(), std::size_t(2));

        const OutboxWrite written =
            ledger.transitionAndSend(done, kQueue, next, R"({"from":"extract"})");
        QCOMPARE(written.operation.state, OperationState::Succeeded);
        QCOMPARE(ledger.find(in.ns, in.key)->state, OperationState::Succeeded);
        QCOMPARE(ledger.find(in.ns, in.key)->result, std::string(R"({"ok":true})"));
        const auto queued = f.queue().browse(kQueue, 0, 10);
        QCOMPARE(ids(queued), std::vector<std::int64_t>({written.msgId}));
        QCOMPARE(queued[0].message, std::string(R"({"run_id":"run-1","step_id":"check"})"));
        QCOMPARE(queued[0].headers, std::string(R"({"from":"extract"})"));
    }
};

QTEST_GUILESS_MAIN(TestQueueContract)
#include "tst_queuecontract.moc"
