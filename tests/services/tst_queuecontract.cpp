// SPDX-License-Identifier: Apache-2.0
// The MessageQueue contract: one suite, run against every store that has queues.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include <QtTest>

#include "error.h"
#include "queuefixture.h"
#include "queuerules.h"

using namespace idempo;
using idempo::test::QueueFixture;

namespace {

const std::string kQueue = "orders";
const std::string kDlq = "orders_dlq";

ErrorCode errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.code();
    }
    return ErrorCode::Internal;
}

std::string errorMessage(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    return {};
}

std::vector<std::int64_t> ids(const std::vector<QueueMessage> &messages)
{
    std::vector<std::int64_t> result;
    for (const QueueMessage &m : messages)
        result.push_back(m.msgId);
    return result;
}

QueueInfo create(QueueFixture &f, int maxReads = 5)
{
    return f.queue().createQueue(kQueue, {.maxReads = maxReads});
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
        QCOMPARE(errorOf([&] { f.queue().read(kQueue, 1'000, 0); }), ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().read(kQueue, 1'000, MaxQueueBatch + 1); }),
                 ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().browse(kQueue, 0, 0); }), ErrorCode::InvalidArgument);
        QCOMPARE(f.queue().listQueues().size(), std::size_t(2));
        QVERIFY(f.queue().browse(kQueue, 0, 10).empty());
    }

    void readHidesMessageForItsVisibilityTimeout()
    {
        QueueFixture f;
        create(f);
        const std::int64_t id = f.queue().send(kQueue, R"({"step":"provision"})", "", 0);
        const std::int64_t t0 = f.queue().nowMs();

        const auto first = f.queue().read(kQueue, 30'000, 1);
        QCOMPARE(ids(first), std::vector<std::int64_t>({id}));
        QCOMPARE(first[0].readCount, 1);
        QCOMPARE(first[0].vtMs, t0 + 30'000);
        QCOMPARE(first[0].lastReadAtMs, std::optional<std::int64_t>(t0));
        QCOMPARE(first[0].message, std::string(R"({"step":"provision"})"));

        QVERIFY(f.queue().read(kQueue, 30'000, 1).empty());
        f.advanceMs(29'999);
        QVERIFY(f.queue().read(kQueue, 30'000, 1).empty());
        f.advanceMs(1);
        const auto again = f.queue().read(kQueue, 30'000, 1);
        QCOMPARE(ids(again), std::vector<std::int64_t>({id}));
        QCOMPARE(again[0].readCount, 2);
        QCOMPARE(again[0].lastReadAtMs, std::optional<std::int64_t>(t0 + 30'000));
        QCOMPARE(again[0].enqueuedAtMs, t0);

        const auto stored = f.queue().browse(kQueue, 0, 10);
        QCOMPARE(stored[0].readCount, 2);
        QCOMPARE(stored[0].vtMs, t0 + 60'000);
    }

    void readTakesOldestFirstUpToQuantity()
    {
        QueueFixture f;
        create(f);
        std::vector<std::int64_t> sent;
        for (int i = 0; i < 5; ++i)
            sent.push_back(f.queue().send(kQueue, std::to_string(i), "", 0));
        QCOMPARE(ids(f.queue().read(kQueue, 10'000, 3)),
                 std::vector<std::int64_t>(sent.begin(), sent.begin() + 3));
        QCOMPARE(ids(f.queue().read(kQueue, 10'000, 3)),
                 std::vector<std::int64_t>(sent.begin() + 3, sent.end()));
        QVERIFY(f.queue().read(kQueue, 10'000, 3).empty());
    }

    void delayedMessageBecomesVisibleLater()
    {
        QueueFixture f;
        create(f);
        const std::int64_t id = f.queue().send(kQueue, "{}", "", 10'000);
        QCOMPARE(f.queue().browse(kQueue, 0, 1).front().vtMs, f.queue().nowMs() + 10'000);
        QVERIFY(f.queue().read(kQueue, 1'000, 1).empty());
        f.advanceMs(10'000);
        QCOMPARE(ids(f.queue().read(kQueue, 1'000, 1)), std::vector<std::int64_t>({id}));
    }

    void concurrentReadersNeverShareAMessage()
    {
        QueueFixture f;
        create(f);
        constexpr int kMessages = 300;
        std::set<std::int64_t> sent;
        for (int i = 0; i < kMessages; ++i)
            sent.insert(f.queue().send(kQueue, std::to_string(i), "", 0));

        constexpr int kThreads = 2;
        std::barrier start(kThreads);
        std::mutex mutex;
        std::vector<std::int64_t> received;
        std::atomic<int> failures{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([&, t] {
                start.arrive_and_wait();
                try {
                    // Quantities 1..3, so the readers' batches interleave unevenly.
                    for (int round = 0;; ++round) {
                        const auto batch = f.queue().read(kQueue, 60'000, 1 + (round + t) % 3);
                        if (batch.empty())
                            break;
                        std::lock_guard lock(mutex);
                        for (const QueueMessage &m : batch)
                            received.push_back(m.msgId);
                    }
                } catch (...) {
                    failures++;
                }
            });
        }
        for (auto &t : threads)
            t.join();
        QCOMPARE(failures.load(), 0);
        QCOMPARE(received.size(), std::size_t(kMessages)); // no message delivered twice …
        QCOMPARE(std::set<std::int64_t>(received.begin(), received.end()), sent); // … and none lost
        for (const QueueMessage &m : f.queue().browse(kQueue, 0, kMessages))
            QCOMPARE(m.readCount, 1);
    }

    void browseNeverCountsAsRead()
    {
        QueueFixture f;
        create(f);
        for (int i = 0; i < 5; ++i)
            f.queue().send(kQueue, std::to_string(i), "", 0);
        const auto read = f.queue().read(kQueue, 30'000, 1);
        const auto before = f.queue().browse(kQueue, 0, 10);
        QCOMPARE(before.size(), std::size_t(5));
        QCOMPARE(before[0].readCount, 1);
        QCOMPARE(before[1].readCount, 0);

        // Keyset pages of two, twice over: nothing about the messages changes.
        for (int pass = 0; pass < 2; ++pass) {
            std::vector<QueueMessage> pages;
            std::int64_t after = 0;
            for (;;) {
                const auto page = f.queue().browse(kQueue, after, 2);
                pages.insert(pages.end(), page.begin(), page.end());
                if (page.size() < 2)
                    break;
                after = page.back().msgId;
            }
            QCOMPARE(ids(pages), ids(before));
            for (std::size_t i = 0; i < pages.size(); ++i) {
                QCOMPARE(pages[i].readCount, before[i].readCount);
                QCOMPARE(pages[i].vtMs, before[i].vtMs);
                QCOMPARE(pages[i].lastReadAtMs, before[i].lastReadAtMs);
            }
        }
        // Browsing did not hide anything either: the four unread messages are still readable.
        QCOMPARE(f.queue().read(kQueue, 30'000, 10).size(), std::size_t(4));
    }

    void deleteRemovesTheMessage()
    {
        QueueFixture f;
        create(f);
        const std::int64_t a = f.queue().send(kQueue, "1", "", 0);
        const std::int64_t b = f.queue().send(kQueue, "2", "", 0);
        f.queue().read(kQueue, 30'000, 1);
        QVERIFY(f.queue().deleteMessage(kQueue, a));
        QVERIFY(!f.queue().deleteMessage(kQueue, a));
        QVERIFY(!f.queue().deleteMessage(kQueue, 999));
        QCOMPARE(ids(f.queue().browse(kQueue, 0, 10)), std::vector<std::int64_t>({b}));
        QVERIFY(f.queue().browseArchive(kQueue, 0, 10).empty());
        // A new message never reuses a deleted id.
        QVERIFY(f.queue().send(kQueue, "3", "", 0) > b);
    }

    void archiveMovesTheMessage()
    {
        QueueFixture f;
        create(f);
        const std::int64_t a = f.queue().send(kQueue, R"({"x":1})", R"({"h":true})", 0);
        const std::int64_t b = f.queue().send(kQueue, "2", "", 0);
        const QueueMessage read = f.queue().read(kQueue, 30'000, 1).front();
        f.advanceMs(500);
        QVERIFY(f.queue().archive(kQueue, a));
        QVERIFY(!f.queue().archive(kQueue, a));
        QCOMPARE(ids(f.queue().browse(kQueue, 0, 10)), std::vector<std::int64_t>({b}));
        const auto archived = f.queue().browseArchive(kQueue, 0, 10);
        QCOMPARE(archived.size(), std::size_t(1));
        QCOMPARE(archived[0].message.msgId, a);
        QCOMPARE(archived[0].message.readCount, 1);
        QCOMPARE(archived[0].message.message, std::string(R"({"x":1})"));
        QCOMPARE(archived[0].message.headers, std::string(R"({"h":true})"));
        QCOMPARE(archived[0].message.enqueuedAtMs, read.enqueuedAtMs);
        QCOMPARE(archived[0].message.lastReadAtMs, read.lastReadAtMs);
        QCOMPARE(archived[0].archivedAtMs, f.queue().nowMs());
        QCOMPARE(f.queue().metrics(kQueue).length, std::int64_t(1));
    }

    void setVtMovesVisibility()
    {
        QueueFixture f;
        create(f);
        const std::int64_t id = f.queue().send(kQueue, "{}", "", 0);
        f.queue().read(kQueue, 30'000, 1);
        // Released early: readable at once, and the second delivery counts.
        const QueueMessage released = f.queue().setVt(kQueue, id, 0);
        QCOMPARE(released.vtMs, f.queue().nowMs());
        QCOMPARE(released.readCount, 1);
        QCOMPARE(f.queue().read(kQueue, 30'000, 1).front().readCount, 2);
        // Postponed: hidden for exactly the new offset, whatever the old vt was.
        f.queue().setVt(kQueue, id, 5'000);
        f.advanceMs(4'999);
        QVERIFY(f.queue().read(kQueue, 30'000, 1).empty());
        f.advanceMs(1);
        QCOMPARE(f.queue().read(kQueue, 30'000, 1).front().readCount, 3);

        QCOMPARE(errorOf([&] { f.queue().setVt(kQueue, 999, 0); }), ErrorCode::NotFound);
        QCOMPARE(errorOf([&] { f.queue().setVt(kQueue, id, -1); }), ErrorCode::InvalidArgument);
    }

    void nackDelaysRedelivery()
    {
        QueueFixture f;
        create(f);
        const std::int64_t id = f.queue().send(kQueue, "{}", "", 0);
        f.queue().read(kQueue, 30'000, 1);
        const QueueMessage nacked =
            f.queue().nack(kQueue, id, ErrorClass::RateLimited, "429", 2'000);
        QCOMPARE(nacked.vtMs, f.queue().nowMs() + 2'000);
        QCOMPARE(nacked.readCount, 1);
        f.advanceMs(1'999);
        QVERIFY(f.queue().read(kQueue, 30'000, 1).empty());
        f.advanceMs(1);
        QCOMPARE(f.queue().read(kQueue, 30'000, 1).front().readCount, 2);
        QCOMPARE(errorOf([&] { f.queue().nack(kQueue, 999, ErrorClass::Transient, "x", 0); }),
                 ErrorCode::NotFound);
    }

    void deadLetterAfterMaxReads_data()
    {
        QTest::addColumn<int>("maxReads");
        QTest::addColumn<bool>("nacked");
        QTest::newRow("1 read, nacked") << 1 << true;
        QTest::newRow("2 reads, nacked") << 2 << true;
        QTest::newRow("5 reads, nacked") << 5 << true;
        QTest::newRow("3 reads, timeouts only") << 3 << false;
    }

    void deadLetterAfterMaxReads()
    {
        QFETCH(int, maxReads);
        QFETCH(bool, nacked);
        QueueFixture f;
        create(f, maxReads);
        const std::int64_t id =
            f.queue().send(kQueue, R"({"step":"charge"})", R"({"trace":"t-9"})", 0);
        const std::int64_t next = f.queue().send(kQueue, R"({"step":"email"})", "", 0);

        for (int delivery = 1; delivery <= maxReads; ++delivery) {
            const auto batch = f.queue().read(kQueue, 10'000, 1);
            QCOMPARE(ids(batch), std::vector<std::int64_t>({id}));
            QCOMPARE(batch[0].readCount, delivery);
            if (nacked)
                f.queue().nack(kQueue, id,
                               delivery % 2 ? ErrorClass::Transient : ErrorClass::RateLimited,
                               "attempt " + std::to_string(delivery), 0);
            else
                f.advanceMs(10'000);
        }
        f.advanceMs(1);
        // The read that finds it again moves it, and fills its slot with the next message.
        const auto batch = f.queue().read(kQueue, 10'000, 1);
        QCOMPARE(ids(batch), std::vector<std::int64_t>({next}));
        QCOMPARE(ids(f.queue().browse(kQueue, 0, 10)), std::vector<std::int64_t>({next}));

        const auto letters = f.queue().deadLetters(kQueue, 0, 10);
        QCOMPARE(letters.size(), std::size_t(1));
        const DeadLetter &letter = letters[0];
        QCOMPARE(letter.message.message, std::string(R"({"step":"charge"})"));
        QCOMPARE(letter.message.readCount, 0);
        QCOMPARE(letter.provenance.sourceQueue, kQueue);
        QCOMPARE(letter.provenance.sourceMsgId, id);
        QCOMPARE(letter.provenance.readCount, maxReads);
        QCOMPARE(letter.provenance.deadLetteredAtMs, f.queue().nowMs());
        const nlohmann::json headers = nlohmann::json::parse(letter.message.headers);
        QCOMPARE(headers["trace"], nlohmann::json("t-9"));
        QCOMPARE(headers["dlq"]["source_queue"], nlohmann::json(kQueue));
        QCOMPARE(headers["dlq"]["source_msg_id"], nlohmann::json(id));
        QCOMPARE(headers["dlq"]["read_ct"], nlohmann::json(maxReads));
        QCOMPARE(headers["dlq"]["dead_lettered_at"], nlohmann::json(f.queue().nowMs()));
        if (nacked) {
            const ErrorClass last = maxReads % 2 ? ErrorClass::Transient : ErrorClass::RateLimited;
            QCOMPARE(letter.provenance.lastErrorClass, std::optional<ErrorClass>(last));
            QCOMPARE(letter.provenance.lastErrorDetail, "attempt " + std::to_string(maxReads));
            QCOMPARE(headers["dlq"]["last_error_class"], nlohmann::json(errorClassName(last)));
            QCOMPARE(headers["dlq"]["last_error_detail"],
                     nlohmann::json("attempt " + std::to_string(maxReads)));
        } else {
            QVERIFY(!letter.provenance.lastErrorClass);
            QVERIFY(headers["dlq"]["last_error_class"].is_null());
            QVERIFY(headers["dlq"]["last_error_detail"].is_null());
        }
        // The dead-letter queue is a queue like any other: browsable, with its own metrics.
        QCOMPARE(f.queue().browse(kDlq, 0, 10).front().msgId, letter.message.msgId);
        QCOMPARE(f.queue().metrics(kDlq).length, std::int64_t(1));
        QCOMPARE(f.queue().metrics(kQueue).length, std::int64_t(1));
    }

    void readSkipsSeveralDeadLettersInOneCall()
    {
        QueueFixture f;
        create(f, 1);
        std::vector<std::int64_t> sent;
        for (int i = 0; i < 4; ++i)
            sent.push_back(f.queue().send(kQueue, std::to_string(i), "", 0));
        QCOMPARE(ids(f.queue().read(kQueue, 1'000, 3)),
                 std::vector<std::int64_t>(sent.begin(), sent.begin() + 3));
        const std::int64_t late = f.queue().send(kQueue, "4", "", 0);
        f.advanceMs(1'000);
        // Three exhausted messages go to the dead-letter queue; the two fresh ones are delivered.
        QCOMPARE(ids(f.queue().read(kQueue, 1'000, 3)), std::vector<std::int64_t>({sent[3], late}));
        std::vector<std::int64_t> sources;
        for (const DeadLetter &letter : f.queue().deadLetters(kQueue, 0, 10))
            sources.push_back(letter.provenance.sourceMsgId);
        QCOMPARE(sources, std::vector<std::int64_t>(sent.begin(), sent.begin() + 3));
    }

    void deadLetterQueueKeepsItsMessages()
    {
        QueueFixture f;
        create(f, 1);
        f.queue().send(kQueue, "{}", "", 0);
        f.queue().read(kQueue, 0, 1);
        QVERIFY(f.queue().read(kQueue, 0, 1).empty()); // moved
        for (int i = 1; i <= 8; ++i)
            QCOMPARE(f.queue().read(kDlq, 0, 1).front().readCount, i);
        QCOMPARE(f.queue().deadLetters(kQueue, 0, 10).size(), std::size_t(1));
        QCOMPARE(errorOf([&] { f.queue().deadLetters(kDlq, 0, 10); }), ErrorCode::InvalidArgument);
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
