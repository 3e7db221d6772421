// SPDX-License-Identifier: Apache-2.0
// The MessageQueue contract, on every store that has queues: how messages are delivered. Reads
// and visibility timeouts, concurrent readers, browse, delete, archive, nack and dead letters.
#include <atomic>
#include <barrier>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include <QtTest>

#include "error.h"
#include "queuecontracthelpers.h"
#include "queuefixture.h"

using namespace idempo;
using namespace idempo::test;

class TestQueueDelivery final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", QueueFixture::storeName()); }

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
};

QTEST_GUILESS_MAIN(TestQueueDelivery)
#include "tst_queuedelivery.moc"
