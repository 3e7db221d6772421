// SPDX-License-Identifier: Apache-2.0
// The ledger's functions called as a worker or an operator login, each behind a lock barrier held
// by another session: whatever the call waited for (a table lock, the row, a claim of the same
// key that rolled back, the run, the audit chain, the events table), every expiry it stored counts
// from the clock once the lock was released, and a second worker finds the lease it granted live.
// The functions themselves are tested, not the C++ store. Runs under tests/pg/with-postgres.sh.
//
// Each barrier is held for a real half second: the rule is about the server's real clock, which
// no test clock can stand in for.
#include <thread>

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include "pgconnection.h"
#include "postgresledgerstore.h"

using namespace idempo;

namespace {

constexpr std::int64_t kDurationMs = 200; ///< every lease, delay and visibility timeout asked for
constexpr int kHoldMs = 500;              ///< how long a barrier stays after the call waits on it
constexpr std::int64_t kFirstBackoffMs =
    800; ///< the shortest first retry delay: 1 s less its jitter

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

std::string urlFor(const std::string &user)
{
    QUrl url(QString::fromStdString(testUrl()));
    url.setUserName(QString::fromStdString(user));
    return url.toString().toStdString();
}

std::string claimSql(const std::string &key, const std::string &owner, const std::string &extra)
{
    const std::string hash =
        QCryptographicHash::hash("{}", QCryptographicHash::Sha256).toHex().toStdString();
    return "idempo.claim('default', '" + key + "', '{}', '" + hash + "', '" + owner + "'" + extra +
           ")";
}

/// One case: what the owner sets up, the barrier another session holds in an open transaction
/// (and how it ends), the call under test and the expiry it stores.
struct BarrierCase
{
    std::string setup;   ///< run by the owner first
    std::string resolve; ///< read by the owner after the setup: `{id}` in the call (a token, an id)
    std::string barrier; ///< run by the owner in the barrier's transaction
    std::string release = "COMMIT";   ///< how the barrier's transaction ends
    std::string login = "clk_worker"; ///< who makes the call; the owner when empty
    std::string session;              ///< run by the caller's session before the call
    std::string call;   ///< one row; its first column, when not NULL, is the expiry it answered
    std::string stored; ///< the expiry the ledger holds afterwards
    std::int64_t minimum = 0; ///< how far past the release that expiry must lie
    std::string again;    ///< a second call by another worker (`{release}`: when the barrier went)
    std::string expected; ///< and the answer it must give
    std::string againAs;  ///< who makes it; the owner when empty
};

} // namespace

Q_DECLARE_METATYPE(BarrierCase)

class TestSqlClockAfterLocks final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        QVERIFY(m_passwords.isValid());
        PostgresLedgerStore(testUrl()).migrate();
        PgConnection owner(testUrl());
        QFile file(m_passwords.filePath(QStringLiteral("pgpass")));
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        std::string logins;
        for (const auto &[login, group] :
             {std::pair{"clk_worker", "idempo_worker"}, std::pair{"clk_worker2", "idempo_worker"},
              std::pair{"clk_operator", "idempo_operator"}}) {
            logins += std::string("DROP ROLE IF EXISTS ") + login + ";\nCREATE ROLE " + login +
                      " LOGIN PASSWORD '" + login + "-secret' IN ROLE " + group + ";\n";
            file.write(QByteArray("*:*:*:") + login + ':' + login + "-secret\n");
        }
        file.close();
        QVERIFY(file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        qputenv("PGPASSFILE", file.fileName().toLocal8Bit());
        owner.execScript("create logins", logins + "SELECT idempo.queue_create('clk_jobs');\n"
                                                   "SELECT idempo.queue_create('clk_out');\n");
    }

    void cleanupTestCase() { qunsetenv("PGPASSFILE"); }

    void expiriesCountFromTheRelease_data()
    {
        QTest::addColumn<BarrierCase>("c");
        const std::string operationsLock = "LOCK TABLE idempo.operations IN SHARE MODE";
        const std::string queueLock = "LOCK TABLE pgmq.q_clk_jobs IN SHARE MODE";
        const std::string ms = std::to_string(kDurationMs);
        const std::string lease = ", p_lease_ms => " + ms;
        const std::string readKind = ", p_tool_kind => 'read'";
        const auto column = [](const char *name, const std::string &key) {
            return std::string("SELECT ") + name +
                   " FROM idempo.operations WHERE operation_key = '" + key + "'";
        };
        const auto tokenOf = [&column](const std::string &key) {
            return column("fencing_token", key);
        };
        const auto vtOf = [](const char *n) {
            return std::string("SELECT floor(extract(epoch FROM vt) * 1000)::bigint FROM "
                               "pgmq.q_clk_jobs WHERE message->>'n' = '") +
                   n + "'";
        };
        const auto claimAgain = [&lease](const std::string &key, const std::string &extra) {
            return "SELECT outcome FROM " + claimSql(key, "w2", extra + lease);
        };
        const std::string lapsed = "; SELECT pg_sleep(0.01)";
        const std::string emptyQueue = "DELETE FROM pgmq.q_clk_jobs; ";
        const std::string readAgain = "SELECT count(*) FROM idempo.queue_read('clk_jobs', 1000)";

        QTest::newRow("claim of a new key, behind a table lock") << BarrierCase{
            .barrier = operationsLock,
            .call = "SELECT lease_expires_at_ms FROM " + claimSql("clk:new", "w1", lease),
            .stored = column("lease_expires_at_ms", "clk:new"),
            .minimum = kDurationMs,
            .again = claimAgain("clk:new", ""),
            .expected = "in_progress",
            .againAs = "clk_worker2"};
        QTest::newRow("claim of a new key, behind a claim of it that rolls back")
            << BarrierCase{.barrier = "SELECT * FROM " + claimSql("clk:rolled", "w0", lease),
                           .release = "ROLLBACK",
                           .call = "SELECT NULL FROM " + claimSql("clk:rolled", "w1", lease),
                           .stored = column("lease_expires_at_ms", "clk:rolled"),
                           .minimum = kDurationMs,
                           .again = claimAgain("clk:rolled", ""),
                           .expected = "in_progress",
                           .againAs = "clk_worker2"};
        QTest::newRow("claim that takes over a lapsed lease, behind a table lock") << BarrierCase{
            .setup = "SELECT * FROM " + claimSql("clk:over", "w0", readKind + ", p_lease_ms => 1") +
                     lapsed,
            .barrier = operationsLock,
            .call =
                "SELECT lease_expires_at_ms FROM " + claimSql("clk:over", "w1", readKind + lease),
            .stored = column("lease_expires_at_ms", "clk:over"),
            .minimum = kDurationMs,
            .again = claimAgain("clk:over", readKind),
            .expected = "in_progress",
            .againAs = "clk_worker2"};
        QTest::newRow("claim that takes over, its history event behind a lock") << BarrierCase{
            .setup = "SELECT * FROM " +
                     claimSql("clk:over2", "w0", readKind + ", p_lease_ms => 1") + lapsed,
            .barrier = "LOCK TABLE idempo.operation_events IN SHARE MODE",
            .call = "SELECT NULL FROM " + claimSql("clk:over2", "w1", readKind + lease),
            .stored = column("lease_expires_at_ms", "clk:over2"),
            .minimum = kDurationMs,
            .again = claimAgain("clk:over2", readKind),
            .expected = "in_progress",
            .againAs = "clk_worker2"};
        const std::string charged = ", p_run_id => 'clk-charged', p_tokens => 5";
        QTest::newRow("claim that charges its run, behind a lock on the runs table")
            << BarrierCase{.barrier = "LOCK TABLE idempo.runs IN SHARE ROW EXCLUSIVE MODE",
                           .call = "SELECT lease_expires_at_ms FROM " +
                                   claimSql("clk:charged", "w1", charged + lease),
                           .stored = column("lease_expires_at_ms", "clk:charged"),
                           .minimum = kDurationMs,
                           .again = claimAgain("clk:charged", charged),
                           .expected = "in_progress",
                           .againAs = "clk_worker2"};
        QTest::newRow("claim by a worker that marks its session as a test clock") << BarrierCase{
            .barrier = operationsLock,
            .session = "SET idempo.test_clock = 'on'",
            .call = "SELECT lease_expires_at_ms FROM " + claimSql("clk:marked", "w1", lease),
            .stored = column("lease_expires_at_ms", "clk:marked"),
            .minimum = kDurationMs,
            .again = claimAgain("clk:marked", ""),
            .expected = "in_progress",
            .againAs = "clk_worker2"};
        QTest::newRow("heartbeat, behind a table lock") << BarrierCase{
            .setup = "SELECT * FROM " + claimSql("clk:beat", "w1", ""),
            .resolve = tokenOf("clk:beat"),
            .barrier = operationsLock,
            .call =
                "SELECT lease_expires_at_ms FROM idempo.heartbeat('default', 'clk:beat', {id}, " +
                ms + ")",
            .stored = column("lease_expires_at_ms", "clk:beat"),
            .minimum = kDurationMs};
        QTest::newRow("heartbeat, behind the row's lock") << BarrierCase{
            .setup = "SELECT * FROM " + claimSql("clk:beat2", "w1", ""),
            .resolve = tokenOf("clk:beat2"),
            .barrier = column("1", "clk:beat2") + " FOR UPDATE",
            .call =
                "SELECT lease_expires_at_ms FROM idempo.heartbeat('default', 'clk:beat2', {id}, " +
                ms + ")",
            .stored = column("lease_expires_at_ms", "clk:beat2"),
            .minimum = kDurationMs};
        // A retention of a second, which only the owner may give: a worker's hour has a tolerance
        // (1 %) longer than the barrier.
        QTest::newRow("complete, its retention behind a table lock") << BarrierCase{
            .setup = "SELECT * FROM " + claimSql("clk:done", "w1", ""),
            .resolve = tokenOf("clk:done"),
            .barrier = operationsLock,
            .login = "",
            .call =
                "SELECT retention_expires_at_ms FROM idempo.complete('default', 'clk:done', {id}, "
                "'{}', '', '', 1000)",
            .stored = column("retention_expires_at_ms", "clk:done"),
            .minimum = 1000};
        QTest::newRow("fail with a retry-after, behind a table lock") << BarrierCase{
            .setup = "SELECT * FROM " + claimSql("clk:fail", "w1", ""),
            .resolve = tokenOf("clk:fail"),
            .barrier = operationsLock,
            .call = "SELECT next_attempt_at_ms FROM idempo.fail('default', 'clk:fail', {id}, "
                    "'rate_limited', 'slow down', 5000)",
            .stored = column("next_attempt_at_ms", "clk:fail"),
            .minimum = 5000,
            .again = claimAgain("clk:fail", ""),
            .expected = "retry_later",
            .againAs = "clk_worker2"};
        QTest::newRow("fail in a run, behind the run's lock") << BarrierCase{
            .setup = "SELECT * FROM " +
                     claimSql("clk:runfail", "w1",
                              ", p_run_id => 'clk-run', p_cost_minor => 1, "
                              "p_cost_currency => 'EUR'") +
                     "; UPDATE idempo.runs SET no_progress_ms = 10000 WHERE run_id = 'clk-run'",
            .resolve = tokenOf("clk:runfail"),
            .barrier = "SELECT FROM idempo.runs WHERE run_id = 'clk-run' FOR UPDATE",
            .call = "SELECT NULL FROM idempo.fail('default', 'clk:runfail', {id}, 'transient', "
                    "'reset')",
            .stored = column("next_attempt_at_ms", "clk:runfail"),
            .minimum = kFirstBackoffMs,
            .again = "SELECT updated_at_ms >= {release} FROM idempo.runs WHERE run_id = 'clk-run'",
            .expected = "t"};
        QTest::newRow("reconcile, behind a lock on the audit log") << BarrierCase{
            .setup = "SELECT * FROM " + claimSql("clk:rec", "w1", ", p_lease_ms => 1") + lapsed,
            .barrier = "LOCK TABLE idempo.audit_log IN SHARE MODE",
            .login = "clk_operator",
            .call = "SELECT NULL FROM idempo.reconcile('default', 'clk:rec', "
                    "'{\"status\":\"found\",\"reference\":\"R-1\"}', 'found at the provider', "
                    "NULL, 1000)",
            .stored = column("retention_expires_at_ms", "clk:rec"),
            .minimum = 1000};
        QTest::newRow("reconcile, behind another guarded action's hold on the chain")
            << BarrierCase{
                   .setup =
                       "SELECT * FROM " + claimSql("clk:rec2", "w1", ", p_lease_ms => 1") + lapsed,
                   .barrier = "SELECT FROM idempo.audit_head WHERE singleton FOR UPDATE",
                   .login = "clk_operator",
                   .call =
                       "SELECT NULL FROM idempo.reconcile('default', 'clk:rec2', "
                       "'{\"status\":\"found\",\"reference\":\"R-1\"}', 'found at the provider', "
                       "NULL, 1000)",
                   .stored = column("retention_expires_at_ms", "clk:rec2"),
                   .minimum = 1000};
        QTest::newRow("transition and send, the send behind the queue's lock") << BarrierCase{
            .setup = "SELECT * FROM " + claimSql("clk:outbox", "w1", ""),
            .resolve = tokenOf("clk:outbox"),
            .barrier = "LOCK TABLE pgmq.q_clk_out IN SHARE MODE",
            .call = "SELECT (operation).next_attempt_at_ms FROM idempo.transition_and_send("
                    "'default', 'clk:outbox', 'dispatching', {id}, 'failed_retryable', 'clk_out', "
                    "'{}', p_error_class => 'transient', p_retry_delay_ms => " +
                    ms + ")",
            .stored = column("next_attempt_at_ms", "clk:outbox"),
            .minimum = kDurationMs};
        QTest::newRow("queue read, behind the queue's lock") << BarrierCase{
            .setup = emptyQueue + "SELECT idempo.queue_send('clk_jobs', '{\"n\":\"read\"}')",
            .barrier = queueLock,
            .call = "SELECT vt_ms FROM idempo.queue_read('clk_jobs', " + ms + ")",
            .stored = vtOf("read"),
            .minimum = kDurationMs,
            // Hidden from the next reader, and still read p_vt_ms before its timeout.
            .again = "SELECT (" + readAgain +
                     ") || ':' || (SELECT (extract(epoch FROM vt - "
                     "last_read_at) * 1000)::bigint FROM pgmq.q_clk_jobs)",
            .expected = "0:" + ms};
        QTest::newRow("queue send with a delay, behind the queue's lock") << BarrierCase{
            .setup = emptyQueue,
            .barrier = queueLock,
            .call = "SELECT NULL FROM idempo.queue_send('clk_jobs', '{\"n\":\"send\"}', NULL, " +
                    ms + ")",
            .stored = vtOf("send"),
            .minimum = kDurationMs,
            .again = readAgain,
            .expected = "0",
            .againAs = "clk_worker2"};
        QTest::newRow("queue nack with a delay, behind the queue's lock") << BarrierCase{
            .setup = emptyQueue + "SELECT idempo.queue_send('clk_jobs', '{\"n\":\"nack\"}'); "
                                  "SELECT idempo.queue_read('clk_jobs', 60000)",
            .resolve = "SELECT msg_id FROM pgmq.q_clk_jobs WHERE message->>'n' = 'nack'",
            .barrier = queueLock,
            .call = "SELECT vt_ms FROM idempo.queue_nack('clk_jobs', {id}, 'transient', '', " + ms +
                    ", 1)",
            .stored = vtOf("nack"),
            .minimum = kDurationMs,
            .again = readAgain,
            .expected = "0",
            .againAs = "clk_worker2"};
    }

    void expiriesCountFromTheRelease()
    {
        QFETCH(BarrierCase, c);
        PgConnection owner(testUrl());
        if (!c.setup.empty())
            owner.execScript("setup", c.setup);
        std::string call = c.call;
        if (!c.resolve.empty())
            call.replace(call.find("{id}"), 4, owner.exec("resolve", c.resolve).text(0, 0));

        PgConnection barrier(testUrl());
        barrier.exec("begin", "BEGIN");
        barrier.execScript("barrier", c.barrier);

        PgConnection caller(c.login.empty() ? testUrl() : urlFor(c.login));
        if (!c.session.empty())
            caller.exec("session", c.session);
        const std::string callerPid = caller.exec("pid", "SELECT pg_backend_pid()").text(0, 0);
        std::string answered;
        std::string failure;
        std::thread worker([&] {
            try {
                const PgResult r = caller.exec("call", call);
                answered = r.isNull(0, 0) ? std::string() : r.text(0, 0);
            } catch (const std::exception &e) {
                failure = e.what();
            }
        });
        QElapsedTimer waiting;
        waiting.start();
        bool blocked = false;
        while (!blocked && waiting.elapsed() < 10000)
            blocked = owner
                          .exec("waits",
                                "SELECT count(*) FROM pg_stat_activity WHERE pid = $1 "
                                "AND wait_event_type = 'Lock'",
                                PgParams().text(callerPid))
                          .integer(0, 0) == 1;
        if (blocked)
            QThread::msleep(kHoldMs);
        const std::int64_t release = barrier.exec("clock", "SELECT idempo.now_ms()").integer(0, 0);
        barrier.exec("release", c.release);
        worker.join();
        QVERIFY2(blocked, "the call never waited for the barrier");
        QVERIFY2(failure.empty(), failure.c_str());

        const std::int64_t floor = release + c.minimum - 1;
        if (!answered.empty())
            QVERIFY2(std::stoll(answered) >= floor,
                     ("answered " + answered + ", at least " + std::to_string(floor)).c_str());
        const std::int64_t stored = owner.exec("stored", c.stored).integer(0, 0);
        QVERIFY2(
            stored >= floor,
            ("stored " + std::to_string(stored) + ", at least " + std::to_string(floor)).c_str());
        // Every record's stamp is its newest event's time, and its creation its first event's.
        QCOMPARE(owner
                     .exec("history", "SELECT count(*) FROM idempo.operations AS o WHERE "
                                      "o.updated_at_ms <> (SELECT e.at_ms FROM "
                                      "idempo.operation_events AS e WHERE e.operation_id = o.id "
                                      "ORDER BY e.id DESC LIMIT 1) OR o.created_at_ms <> (SELECT "
                                      "e.at_ms FROM idempo.operation_events AS e WHERE "
                                      "e.operation_id = o.id ORDER BY e.id LIMIT 1)")
                     .integer(0, 0),
                 std::int64_t(0));
        if (c.again.empty())
            return;
        std::string again = c.again;
        if (const auto at = again.find("{release}"); at != std::string::npos)
            again.replace(at, 9, std::to_string(release));
        PgConnection second(c.againAs.empty() ? testUrl() : urlFor(c.againAs));
        QCOMPARE(second.exec("again", again).text(0, 0), c.expected);
    }

private:
    QTemporaryDir m_passwords;
};

QTEST_GUILESS_MAIN(TestSqlClockAfterLocks)
#include "tst_sqlclockafterlocks.moc"
