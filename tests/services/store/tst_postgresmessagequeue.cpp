// SPDX-License-Identifier: Apache-2.0
// What only the PostgreSQL queue has: a queue made by pgmq's own DDL used as it is, visibility
// judged on the server's clock, readers on separate connections, dead-lettering raced by several
// readers, and least-privilege roles. Runs under tests/pg/with-postgres.sh.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <QFile>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

#include "error.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "queuefixture.h"

using namespace idempo;
using idempo::test::QueueFixture;

namespace {

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

/// The test server's URL with another user.
std::string urlFor(const std::string &user)
{
    QUrl url(QString::fromStdString(testUrl()));
    url.setUserName(QString::fromStdString(user));
    return url.toString().toStdString();
}

ErrorCode errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.code();
    }
    return ErrorCode::Internal;
}

/// Queues on the server's running clock (the fixture's are pinned), shifted by `offsetMs`.
std::shared_ptr<PostgresMessageQueue> runningClockQueue(std::int64_t offsetMs = 0)
{
    return std::make_shared<PostgresMessageQueue>(std::make_shared<PostgresLedgerStore>(
        testUrl(), PostgresLedgerStore::Options{.clockOffsetMs = offsetMs}));
}

/// One delivery as a reader saw it.
struct Delivery
{
    std::int64_t readAtMs;
    std::int64_t vtMs;
};

} // namespace

class TestPostgresMessageQueue final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        QVERIFY(m_passwords.isValid());
    }

    /// A queue made by pgmq 1.5's create_non_partitioned() (no last_read_at yet) and written
    /// by pgmq's send(): createQueue() adopts it, and both sides then see the same messages.
    void adoptsAQueueMadeByPgmq()
    {
        QueueFixture f; // empties the ledger and drops the queue schema
        PgConnection admin(testUrl());
        admin.execScript("pgmq.create('legacy')", R"SQL(
            CREATE SCHEMA pgmq;
            CREATE TABLE pgmq.q_legacy (
                msg_id BIGINT PRIMARY KEY GENERATED ALWAYS AS IDENTITY,
                read_ct INT DEFAULT 0 NOT NULL,
                enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
                vt TIMESTAMP WITH TIME ZONE NOT NULL,
                message JSONB,
                headers JSONB
            );
            CREATE TABLE pgmq.a_legacy (
                msg_id BIGINT PRIMARY KEY,
                read_ct INT DEFAULT 0 NOT NULL,
                enqueued_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
                archived_at TIMESTAMP WITH TIME ZONE DEFAULT now() NOT NULL,
                vt TIMESTAMP WITH TIME ZONE NOT NULL,
                message JSONB,
                headers JSONB
            );
            CREATE INDEX q_legacy_vt_idx ON pgmq.q_legacy (vt ASC);
            CREATE INDEX archived_at_idx_legacy ON pgmq.a_legacy (archived_at);
            INSERT INTO pgmq.q_legacy (vt, message, headers)
                VALUES (clock_timestamp(), '{"step": "charge", "amount": 12.5}', '{"trace": "t-1"}');
            INSERT INTO pgmq.q_legacy (vt, message, headers) VALUES (clock_timestamp(), '[1, 2]', NULL);
        )SQL");

        auto queue = runningClockQueue();
        QCOMPARE(errorOf([&] { queue->browse("legacy", 0, 10); }),
                 ErrorCode::NotFound); // not registered yet
        queue->createQueue("legacy", {.maxReads = 2});
        QCOMPARE(f.queueTables(),
                 QStringList({QStringLiteral("a_legacy"), QStringLiteral("a_legacy_dlq"),
                              QStringLiteral("q_legacy"), QStringLiteral("q_legacy_dlq")}));

        const auto before = queue->browse("legacy", 0, 10);
        QCOMPARE(before.size(), std::size_t(2));
        QCOMPARE(before[0].message, std::string(R"({"amount":12.5,"step":"charge"})"));
        QCOMPARE(before[0].headers, std::string(R"({"trace":"t-1"})"));
        QCOMPARE(before[0].readCount, 0);
        QVERIFY(!before[0].lastReadAtMs);
        QCOMPARE(before[1].message, std::string("[1,2]"));
        QVERIFY(before[1].headers.empty());
        QCOMPARE(queue->metrics("legacy").totalMessages, std::int64_t(2));

        const auto read = queue->read("legacy", 60'000, 1);
        QCOMPARE(read.size(), std::size_t(1));
        QCOMPARE(read[0].msgId, before[0].msgId);
        QCOMPARE(read[0].readCount, 1);
        QCOMPARE(queue->browse("legacy", 0, 10)[0].readCount, 1); // browsing is not a read

        // pgmq's own read (its statement, on the same tables) skips the message Idempo hid …
        const PgResult pgmqRead = admin.exec("pgmq.read", R"SQL(
            WITH cte AS (SELECT msg_id FROM pgmq.q_legacy WHERE vt <= clock_timestamp()
                         ORDER BY msg_id ASC LIMIT 5 FOR UPDATE SKIP LOCKED)
            UPDATE pgmq.q_legacy m SET last_read_at = clock_timestamp(), vt = clock_timestamp() + interval '60 s',
                read_ct = read_ct + 1
            FROM cte WHERE m.msg_id = cte.msg_id RETURNING m.msg_id
        )SQL");
        QCOMPARE(pgmqRead.rows(), 1);
        QCOMPARE(pgmqRead.integer(0, 0), before[1].msgId);
        // … and Idempo's archive lands in pgmq's archive table, columns by name.
        QVERIFY(queue->archive("legacy", before[0].msgId));
        const PgResult archived =
            admin.exec("read archive", "SELECT msg_id, read_ct, message ->> 'step', archived_at IS "
                                       "NOT NULL FROM pgmq.a_legacy");
        QCOMPARE(archived.rows(), 1);
        QCOMPARE(archived.integer(0, 0), before[0].msgId);
        QCOMPARE(archived.integer(0, 1), std::int64_t(1));
        QCOMPARE(archived.text(0, 2), std::string("charge"));
        QCOMPARE(archived.text(0, 3), std::string("t"));
        QCOMPARE(queue->browseArchive("legacy", 0, 10).front().message.lastReadAtMs,
                 read[0].lastReadAtMs);
    }

    /// vt and last_read_at are written from the server's clock_timestamp() plus the store's
    /// offset, never from this process's clock.
    void visibilityIsJudgedOnTheServerClock()
    {
        QueueFixture f;
        constexpr std::int64_t kSkewMs = 3'600'000;
        auto skewed = runningClockQueue(kSkewMs);
        skewed->createQueue("clock", {});
        skewed->send("clock", "{}", "", 0);
        const QueueMessage m = skewed->read("clock", 30'000, 1).front();
        PgConnection admin(testUrl());
        const PgResult r = admin.exec(
            "read vt", "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint, "
                       "floor(extract(epoch FROM vt) * 1000)::bigint, floor(extract(epoch FROM "
                       "last_read_at) * 1000)::bigint "
                       "FROM pgmq.q_clock");
        const std::int64_t server = r.integer(0, 0);
        QCOMPARE(r.integer(0, 1), m.vtMs);
        QCOMPARE(r.integer(0, 2), *m.lastReadAtMs);
        QVERIFY2(std::abs(*m.lastReadAtMs - (server + kSkewMs)) < 5'000,
                 qPrintable(QString::number(server)));
        QCOMPARE(m.vtMs - *m.lastReadAtMs, std::int64_t(30'000));
        // Hidden for readers with and without the skew: vt is an hour and 30 s past the server's
        // clock.
        QCOMPARE(runningClockQueue()->read("clock", 30'000, 1).size(), std::size_t(0));
        QCOMPARE(skewed->read("clock", 30'000, 1).size(), std::size_t(0));
    }

    /// Readers on their own connections, each hiding messages for a short timeout and acking
    /// some: no message is ever delivered again before the visibility timeout of its previous
    /// delivery has passed, and every message is delivered.
    void readersNeverOverlapInsideTheTimeout()
    {
        QueueFixture f;
        auto setup = runningClockQueue();
        setup->createQueue("race", {.maxReads = 1000});
        constexpr int kMessages = 400;
        for (int i = 0; i < kMessages; ++i)
            setup->send("race", std::to_string(i), "", 0);

        constexpr int kReaders = 4;
        std::barrier start(kReaders);
        std::mutex mutex;
        std::map<std::int64_t, std::vector<Delivery>> deliveries;
        std::atomic<int> failures{0};
        std::vector<std::thread> readers;
        for (int t = 0; t < kReaders; ++t) {
            readers.emplace_back([&, t] {
                auto queue =
                    runningClockQueue(); // a store of its own: another worker process's view
                start.arrive_and_wait();
                try {
                    const auto deadline =
                        std::chrono::steady_clock::now() + std::chrono::seconds(60);
                    for (int round = 0; std::chrono::steady_clock::now() < deadline; ++round) {
                        const auto batch = queue->read("race", 150, 1 + (round + t) % 4);
                        if (batch.empty()) {
                            if (queue->metrics("race").length == 0)
                                break;
                            std::this_thread::sleep_for(std::chrono::milliseconds(20));
                            continue;
                        }
                        {
                            std::lock_guard lock(mutex);
                            for (const QueueMessage &m : batch)
                                deliveries[m.msgId].push_back({*m.lastReadAtMs, m.vtMs});
                        }
                        // Every third message is left to time out and be delivered again.
                        for (const QueueMessage &m : batch)
                            if ((m.msgId + m.readCount) % 3 != 0)
                                queue->deleteMessage("race", m.msgId);
                    }
                } catch (...) {
                    failures++;
                }
            });
        }
        for (auto &r : readers)
            r.join();
        QCOMPARE(failures.load(), 0);
        QCOMPARE(deliveries.size(), std::size_t(kMessages));
        int redelivered = 0;
        for (auto &[id, seen] : deliveries) {
            std::sort(seen.begin(), seen.end(),
                      [](const Delivery &a, const Delivery &b) { return a.readAtMs < b.readAtMs; });
            for (std::size_t i = 1; i < seen.size(); ++i) {
                QVERIFY2(seen[i].readAtMs >= seen[i - 1].vtMs, qPrintable(QString::number(id)));
                ++redelivered;
            }
        }
        QVERIFY(redelivered > 0); // the timeouts did expire and messages came back
        QCOMPARE(setup->metrics("race").length, std::int64_t(0));
    }

    /// Exhausted messages found by several readers at once go to the dead-letter queue once each.
    void concurrentReadersDeadLetterOnce()
    {
        QueueFixture f;
        f.queue().createQueue("spent", {.maxReads = 1});
        constexpr int kMessages = 120;
        std::set<std::int64_t> sent;
        for (int i = 0; i < kMessages; ++i)
            sent.insert(f.queue().send("spent", std::to_string(i), "", 0));
        QCOMPARE(f.queue().read("spent", 0, kMessages).size(),
                 std::size_t(kMessages)); // visible again at once

        constexpr int kReaders = 4;
        std::barrier start(kReaders);
        std::atomic<int> delivered{0};
        std::atomic<int> failures{0};
        std::vector<std::thread> readers;
        for (int t = 0; t < kReaders; ++t) {
            readers.emplace_back([&, t] {
                start.arrive_and_wait();
                try {
                    while (f.queue().metrics("spent").length > 0)
                        delivered += static_cast<int>(f.queue().read("spent", 0, 1 + t).size());
                } catch (...) {
                    failures++;
                }
            });
        }
        for (auto &r : readers)
            r.join();
        QCOMPARE(failures.load(), 0);
        QCOMPARE(delivered.load(), 0);
        std::multiset<std::int64_t> sources;
        for (const DeadLetter &letter : f.queue().deadLetters("spent", 0, 1'000))
            sources.insert(letter.provenance.sourceMsgId);
        QCOMPARE(sources.size(), std::size_t(kMessages));
        QCOMPARE(std::set<std::int64_t>(sources.begin(), sources.end()), sent);
    }

    /// Workers use queues the schema owner created; viewers browse them but never take a message.
    void rolesGrantLeastPrivilege()
    {
        QueueFixture f;
        f.queue().createQueue("jobs", {.maxReads = 1});
        f.queue().send("jobs", R"({"n":1})", "", 0);
        PgConnection(testUrl()).execScript("create login roles", R"SQL(
            DROP ROLE IF EXISTS idempo_queue_worker, idempo_queue_viewer;
            CREATE ROLE idempo_queue_worker LOGIN PASSWORD 'worker-secret' IN ROLE idempo_worker;
            CREATE ROLE idempo_queue_viewer LOGIN PASSWORD 'viewer-secret' IN ROLE idempo_viewer;
        )SQL");
        QFile file(m_passwords.filePath(QStringLiteral("pgpass")));
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        file.write(
            "*:*:*:idempo_queue_worker:worker-secret\n*:*:*:idempo_queue_viewer:viewer-secret\n");
        file.close();
        QVERIFY(file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        qputenv("PGPASSFILE", file.fileName().toLocal8Bit());

        PostgresMessageQueue worker(
            std::make_shared<PostgresLedgerStore>(urlFor("idempo_queue_worker")));
        const std::int64_t second = worker.send("jobs", R"({"n":2})", "", 0);
        const auto batch = worker.read("jobs", 0, 2);
        QCOMPARE(batch.size(), std::size_t(2));
        worker.nack("jobs", batch[0].msgId, ErrorClass::Transient, "503", 0);
        QVERIFY(worker.archive("jobs", second));
        QVERIFY(worker.read("jobs", 0, 2).empty()); // the first is dead-lettered by the worker
        QCOMPARE(worker.deadLetters("jobs", 0, 10).size(), std::size_t(1));
        QCOMPARE(worker.metrics("jobs").totalMessages, std::int64_t(2));
        QCOMPARE(errorOf([&] { worker.createQueue("other", {}); }), ErrorCode::LedgerUnavailable);

        PostgresMessageQueue viewer(
            std::make_shared<PostgresLedgerStore>(urlFor("idempo_queue_viewer")));
        QCOMPARE(viewer.listQueues().size(), std::size_t(2));
        QCOMPARE(viewer.deadLetters("jobs", 0, 10).front().provenance.lastErrorDetail,
                 std::string("503"));
        QCOMPARE(viewer.metrics("jobs_dlq").length, std::int64_t(1));
        QCOMPARE(errorOf([&] { viewer.read("jobs_dlq", 0, 1); }), ErrorCode::LedgerUnavailable);
        QCOMPARE(errorOf([&] { viewer.send("jobs", "{}", "", 0); }), ErrorCode::LedgerUnavailable);
        qunsetenv("PGPASSFILE");
    }

    /// The hot calls (send, a read carrying an ack, ack, claim, complete) reach no SQL-language
    /// function the planner left un-inlined: such a call runs the SQL function machinery each
    /// time (idempo.ms_at, declared IMMUTABLE over a STABLE body, cost about 17 µs a call).
    void hotCallsRunEverySqlHelperInlined()
    {
        QueueFixture f;
        f.queue().createQueue("hot", {.maxReads = 3});
        PgConnection c(testUrl());
        c.exec("begin", "BEGIN");
        c.exec("track", "SET LOCAL track_functions = 'all'");
        c.exec("send", R"SQL(SELECT idempo.queue_send('hot', '{"n":1}'))SQL");
        c.exec("send", R"SQL(SELECT idempo.queue_send('hot', '{"n":2}'))SQL");
        const PgResult first =
            c.exec("read", "SELECT msg_id, read_ct FROM idempo.queue_read('hot', 30000, 1)");
        QCOMPARE(first.rows(), 1);
        const PgResult second = c.exec(
            "read and ack",
            "SELECT msg_id, read_ct FROM idempo.queue_read('hot', 30000, 1, '[[' || $1 || ',' || "
            "$2 || ']]')",
            PgParams().integer(first.integer(0, 0)).integer(first.integer(0, 1)));
        QCOMPARE(second.rows(), 1);
        QCOMPARE(c.exec("ack", "SELECT idempo.queue_ack('hot', $1, $2::integer)",
                        PgParams().integer(second.integer(0, 0)).integer(second.integer(0, 1)))
                     .text(0, 0),
                 std::string("done"));
        const std::string payload = R"({"amount":1250,"currency":"EUR","to":"acct-0"})";
        const PgResult claimed =
            c.exec("claim",
                   "SELECT outcome, fencing_token FROM idempo.claim('default', 'hot-1', $1, "
                   "encode(sha256(convert_to($1, 'UTF8')), 'hex'), 'worker-a', 'protected_write', "
                   "30000, 3, false, 'run-1', 'provision', 'core-banking')",
                   PgParams().text(payload));
        QCOMPARE(claimed.text(0, 0), std::string("claimed"));
        c.exec("complete",
               "SELECT 1 FROM idempo.transition('default', 'hot-1', 'dispatching', $1, "
               "'succeeded', 'worker-a', 'completed', '{\"account\":\"A-1\"}')",
               PgParams().integer(claimed.integer(0, 1)));
        QCOMPARE(c.exec("replay",
                        "SELECT outcome FROM idempo.claim('default', 'hot-1', $1, "
                        "encode(sha256(convert_to($1, 'UTF8')), 'hex'), 'worker-a')",
                        PgParams().text(payload))
                     .text(0, 0),
                 std::string("replayed"));
        const PgResult called = c.exec("called", R"SQL(
            SELECT f.schemaname || '.' || f.funcname || ' (' || f.calls || ' calls)'
            FROM pg_stat_xact_user_functions AS f
            JOIN pg_proc AS p ON p.oid = f.funcid JOIN pg_language AS l ON l.oid = p.prolang
            WHERE l.lanname = 'sql' ORDER BY 1)SQL");
        QStringList names;
        for (int row = 0; row < called.rows(); ++row)
            names << QString::fromStdString(called.text(row, 0));
        c.exec("rollback", "ROLLBACK");
        QVERIFY2(names.isEmpty(), qPrintable(names.join(QStringLiteral(", "))));
    }

private:
    QTemporaryDir m_passwords;
};

QTEST_GUILESS_MAIN(TestPostgresMessageQueue)
#include "tst_postgresmessagequeue.moc"
