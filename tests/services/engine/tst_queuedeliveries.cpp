// SPDX-License-Identifier: Apache-2.0
// The MessageQueue contract for one delivery (ReadReceipt: msg_id and the read_ct its read
// answered), on every store that has queues: an ack, archive or nack repeated after a lost answer
// is done again; one by a consumer whose visibility timeout lapsed and whose message was read
// again is refused as stale and changes nothing; and the read past the max reads moves the
// message to the dead-letter queue in its own transaction, so no failure leaves it half moved.
#include <functional>

#include <QtTest>

#include "error.h"
#include "queuefixture.h"

using namespace idempo;
using idempo::test::QueueFixture;

namespace {

const std::string kQueue = "orders";

/// The error `f` throws: its code and message; Internal and "" when it throws none.
std::pair<ErrorCode, std::string> errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return {e.code(), e.what()};
    }
    return {ErrorCode::Internal, {}};
}

/// The one message of `kQueue`, as browse() (never a read) sees it.
QueueMessage onlyMessage(QueueFixture &f)
{
    const auto messages = f.queue().browse(kQueue, 0, 10);
    if (messages.size() != 1)
        qFatal("expected one message in %s, found %zu", kQueue.c_str(), messages.size());
    return messages.front();
}

/// A message read by consumer A (hidden 1 s), whose timeout lapsed, then read by consumer B
/// (hidden 60 s): returns A's and B's receipts.
std::pair<ReadReceipt, ReadReceipt> readTwice(QueueFixture &f)
{
    f.queue().createQueue(kQueue, {.maxReads = 5});
    f.queue().send(kQueue, R"({"step":"charge"})", "", 0);
    const ReadReceipt a = ReadReceipt::of(f.queue().read(kQueue, 1'000, 1).front());
    f.advanceMs(1'000);
    const ReadReceipt b = ReadReceipt::of(f.queue().read(kQueue, 60'000, 1).front());
    return {a, b};
}

/// Checks that `e` refuses `action` of A's read as stale, naming the message and the later read.
void verifyStale(const std::pair<ErrorCode, std::string> &e, const ReadReceipt &a,
                 const char *action)
{
    QCOMPARE(e.first, ErrorCode::StaleLease);
    const std::string expected = "message " + std::to_string(a.msgId) + " of queue '" + kQueue +
                                 "' was read again (read 2) after read 1";
    QVERIFY2(e.second.find(expected) != std::string::npos, e.second.c_str());
    QVERIFY2(e.second.find(std::string("the ") + action + " is refused") != std::string::npos,
             e.second.c_str());
}

} // namespace

class TestQueueDeliveries final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", QueueFixture::storeName()); }

    void ackRetriedAfterALostAnswerIsDone()
    {
        QueueFixture f;
        f.queue().createQueue(kQueue, {});
        f.queue().send(kQueue, "{}", "", 0);
        const QueueMessage m = f.queue().read(kQueue, 30'000, 1).front();
        f.queue().ack(kQueue, ReadReceipt::of(m));
        QVERIFY(f.queue().browse(kQueue, 0, 10).empty());
        // The answer was lost; the consumer asks again: done, not not_found.
        f.queue().ack(kQueue, ReadReceipt::of(m));
        f.queue().ack(kQueue, ReadReceipt::of(m));
        QCOMPARE(f.queue().metrics(kQueue).length, std::int64_t(0));
    }

    void ackOfAReadAgainMessageIsStale()
    {
        QueueFixture f;
        const auto reads = readTwice(f);
        const ReadReceipt a = reads.first;
        const ReadReceipt b = reads.second;
        QCOMPARE(b.readCount, 2);
        verifyStale(errorOf([&] { f.queue().ack(kQueue, a); }), a, "ack");
        // B's delivery is untouched: still there, still hidden for B.
        const QueueMessage held = onlyMessage(f);
        QCOMPARE(held.readCount, 2);
        QCOMPARE(held.vtMs, f.queue().nowMs() + 60'000);
        QVERIFY(f.queue().read(kQueue, 1'000, 1).empty());
        // B acknowledges; A's late ack is still stale, not done and not not_found.
        f.queue().ack(kQueue, b);
        verifyStale(errorOf([&] { f.queue().ack(kQueue, a); }), a, "ack");
        f.queue().ack(kQueue, b);
    }

    void ackOfNoDeliveryIsRefused()
    {
        QueueFixture f;
        f.queue().createQueue(kQueue, {});
        const std::int64_t id = f.queue().send(kQueue, "{}", "", 0);
        QCOMPARE(errorOf([&] {
                     f.queue().ack(kQueue, {id, 1});
                 }).first,
                 ErrorCode::InvalidArgument); // never read
        f.queue().read(kQueue, 30'000, 1);
        QCOMPARE(errorOf([&] {
                     f.queue().ack(kQueue, {id, 2});
                 }).first,
                 ErrorCode::InvalidArgument); // read once, not twice
        QCOMPARE(errorOf([&] {
                     f.queue().ack(kQueue, {id, 0});
                 }).first,
                 ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] { f.queue().ack(kQueue, {id + 1, 1}); }).first, ErrorCode::NotFound);
        QCOMPARE(errorOf([&] { f.queue().ack("nosuch", {id, 1}); }).first, ErrorCode::NotFound);
        QCOMPARE(onlyMessage(f).readCount, 1); // nothing changed
        f.queue().ack(kQueue, {id, 1});
    }

    void ackOfADeadLetteredMessageIsNotFound()
    {
        QueueFixture f;
        f.queue().createQueue(kQueue, {.maxReads = 1});
        f.queue().send(kQueue, "{}", "", 0);
        const ReadReceipt last = ReadReceipt::of(f.queue().read(kQueue, 1'000, 1).front());
        f.advanceMs(1'000);
        QVERIFY(f.queue().read(kQueue, 1'000, 1).empty()); // moved
        QCOMPARE(errorOf([&] { f.queue().ack(kQueue, last); }).first, ErrorCode::NotFound);
        QCOMPARE(f.queue().deadLetters(kQueue, 0, 10).size(), std::size_t(1));
    }

    /// A read acknowledges the previous delivery in its own transaction; a refused ack refuses
    /// the read with it.
    void readAcknowledgesInItsTransaction()
    {
        QueueFixture f;
        f.queue().createQueue(kQueue, {});
        const std::int64_t first = f.queue().send(kQueue, R"({"n":1})", "", 0);
        const std::int64_t second = f.queue().send(kQueue, R"({"n":2})", "", 0);
        const QueueMessage a = f.queue().read(kQueue, 30'000, 1).front();
        QCOMPARE(a.msgId, first);
        QCOMPARE(errorOf([&] {
                     f.queue().readAndAck(kQueue, 30'000, 1, {{a.msgId, 2}});
                 }).first,
                 ErrorCode::InvalidArgument);
        QCOMPARE(f.queue().browse(kQueue, 0, 10).back().readCount, 0); // the read did not happen
        const QueueMessage b =
            f.queue().readAndAck(kQueue, 30'000, 1, {ReadReceipt::of(a)}).front();
        QCOMPARE(b.msgId, second);
        QCOMPARE(onlyMessage(f).msgId, second);
        // Retried after a lost answer, its ack is done again; the read finds nothing new.
        QVERIFY(f.queue().readAndAck(kQueue, 30'000, 1, {ReadReceipt::of(a)}).empty());
        QVERIFY(f.queue().readAndAck(kQueue, 30'000, 1, {ReadReceipt::of(b)}).empty());
        QVERIFY(f.queue().browse(kQueue, 0, 10).empty());
    }

    void archiveOfADelivery()
    {
        QueueFixture f;
        const auto reads = readTwice(f);
        const ReadReceipt a = reads.first;
        const ReadReceipt b = reads.second;
        verifyStale(errorOf([&] { f.queue().archive(kQueue, a); }), a, "archive");
        QCOMPARE(onlyMessage(f).readCount, 2);
        QVERIFY(f.queue().browseArchive(kQueue, 0, 10).empty());
        f.queue().archive(kQueue, b);
        f.queue().archive(kQueue, b); // retried: done again
        const auto archived = f.queue().browseArchive(kQueue, 0, 10);
        QCOMPARE(archived.size(), std::size_t(1));
        QCOMPARE(archived.front().message.readCount, 2);
        QVERIFY(f.queue().browse(kQueue, 0, 10).empty());
        // Archived under read 2: A's archive of read 1 is still stale.
        verifyStale(errorOf([&] { f.queue().archive(kQueue, a); }), a, "archive");
        QCOMPARE(errorOf([&] {
                     f.queue().archive(kQueue, {b.msgId + 1, 1});
                 }).first,
                 ErrorCode::NotFound);
    }

    void nackOfADelivery()
    {
        QueueFixture f;
        const auto reads = readTwice(f);
        const ReadReceipt a = reads.first;
        const ReadReceipt b = reads.second;
        verifyStale(
            errorOf([&] { f.queue().nack(kQueue, a, ErrorClass::Transient, "503 for A", 0); }), a,
            "nack");
        // B's timeout stands: A's nack did not make the message visible again.
        QCOMPARE(onlyMessage(f).vtMs, f.queue().nowMs() + 60'000);
        const QueueMessage nacked =
            f.queue().nack(kQueue, b, ErrorClass::RateLimited, "429 for B", 2'000);
        QCOMPARE(nacked.vtMs, f.queue().nowMs() + 2'000);
        QCOMPARE(f.queue().nack(kQueue, b, ErrorClass::RateLimited, "429 for B", 2'000).vtMs,
                 nacked.vtMs); // retried: the same again
        QCOMPARE(errorOf([&] {
                     f.queue().nack(kQueue, {b.msgId, 3}, ErrorClass::Transient, "x", 0);
                 }).first,
                 ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([&] {
                     f.queue().nack(kQueue, {b.msgId + 1, 1}, ErrorClass::Transient, "x", 0);
                 }).first,
                 ErrorCode::NotFound);
    }

    /// The read that finds a message past its max reads moves it in the read's transaction:
    /// afterwards it is in the dead-letter queue and not in the queue; when any part of the move
    /// fails, the whole read is undone and the message waits in its queue as it was.
    void deadLetteringIsPartOfTheRead()
    {
        QueueFixture f;
        f.queue().createQueue(kQueue, {.maxReads = 2});
        // `fresh` comes first but is hidden until the other has had its two reads.
        const std::int64_t fresh = f.queue().send(kQueue, R"({"step":"email"})", "", 5'000);
        const std::int64_t id = f.queue().send(kQueue, R"({"step":"charge"})", "", 0);
        for (int delivery = 1; delivery <= 2; ++delivery) {
            QCOMPARE(f.queue().read(kQueue, 1'000, 1).front().msgId, id);
            f.advanceMs(1'000);
        }
        f.advanceMs(3'000);
        // The dead-letter queue refuses the copy: the read fails and leaves everything as it was.
        if (std::string(QueueFixture::storeName()) == "postgresql") {
            f.execAsOwner(
                "CREATE OR REPLACE FUNCTION public.refuse_insert() RETURNS trigger LANGUAGE "
                "plpgsql AS $$BEGIN RAISE EXCEPTION 'injected failure'; END$$; "
                "CREATE TRIGGER refuse BEFORE INSERT ON pgmq.q_orders_dlq FOR EACH ROW "
                "EXECUTE FUNCTION public.refuse_insert()");
        } else {
            f.execAsOwner("CREATE TRIGGER refuse BEFORE INSERT ON q_orders_dlq BEGIN "
                          "SELECT RAISE(ABORT, 'injected failure'); END");
        }
        const auto failed = errorOf([&] { f.queue().read(kQueue, 1'000, 2); });
        QVERIFY2(failed.second.find("injected failure") != std::string::npos,
                 failed.second.c_str());
        const auto left = f.queue().browse(kQueue, 0, 10);
        QCOMPARE(left.size(), std::size_t(2));
        QCOMPARE(left[0].msgId, fresh);
        QCOMPARE(left[0].readCount, 0); // the read's delivery was undone with the move
        QCOMPARE(left[1].msgId, id);
        QCOMPARE(left[1].readCount, 2);
        QVERIFY(f.queue().deadLetters(kQueue, 0, 10).empty());

        f.execAsOwner(std::string(QueueFixture::storeName()) == "postgresql"
                          ? "DROP TRIGGER refuse ON pgmq.q_orders_dlq"
                          : "DROP TRIGGER refuse");
        const auto delivered = f.queue().read(kQueue, 1'000, 2);
        QCOMPARE(delivered.size(), std::size_t(1));
        QCOMPARE(delivered.front().msgId, fresh);
        QCOMPARE(onlyMessage(f).msgId, fresh);
        const auto letters = f.queue().deadLetters(kQueue, 0, 10);
        QCOMPARE(letters.size(), std::size_t(1));
        QCOMPARE(letters.front().provenance.sourceMsgId, id);
        QCOMPARE(letters.front().provenance.readCount, 2);
    }
};

QTEST_GUILESS_MAIN(TestQueueDeliveries)
#include "tst_queuedeliveries.moc"
