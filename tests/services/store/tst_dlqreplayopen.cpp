// SPDX-License-Identifier: Apache-2.0
// One open replay per dead letter, at the SQL API as operators at a psql prompt meet it
// (functions/queue/dlq_replay_begin.sql): a second begin of a held set is refused with ID009 naming
// the holder, an abandoned replay is taken over with an audit record, and its runner is fenced off.
// Runs under tests/pg/with-postgres.sh.
#include <thread>

#include <QFile>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

#include "auditverify.h"
#include "error.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"

using namespace idempo;

namespace {

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

/// The error `f` throws; Internal "no error" when it throws none.
Error errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorCode::Internal, "no error");
}

const char *kBegin = "SELECT idempo.dlq_replay_begin('rq', $1, $2::bigint[], 'provider fixed', "
                     "'{}', $3::bigint)";
const char *kRequeue = "SELECT idempo.queue_requeue_dead_letter('rq', $1::bigint, "
                       "'{\"replay\":{}}', $2, $3::bigint)";
const char *kFinish =
    "SELECT idempo.dlq_replay_finish('rq', $1, 'provider fixed', '{}', $2::bigint)";

} // namespace

class TestDlqReplayOpen final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        QVERIFY(m_passwords.isValid());
        PostgresLedgerStore(testUrl()).migrate();
        std::string logins;
        QFile file(m_passwords.filePath(QStringLiteral("pgpass")));
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        for (const std::string login : {"dlq_ann", "dlq_bob"}) {
            logins += "DROP ROLE IF EXISTS " + login + ";\nCREATE ROLE " + login +
                      " LOGIN PASSWORD '" + login + "-secret' IN ROLE idempo_operator;\n";
            file.write(QByteArray::fromStdString("*:*:*:" + login + ":" + login + "-secret\n"));
        }
        file.close();
        QVERIFY(file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        qputenv("PGPASSFILE", file.fileName().toLocal8Bit());
        PgConnection owner(testUrl());
        owner.execScript("create logins", logins);
        owner.exec("queue", "SELECT * FROM idempo.queue_create('rq', 1)");
        for (int i = 1; i <= 4; ++i)
            owner.exec("send", "SELECT idempo.queue_send('rq', $1)",
                       PgParams().text("{\"n\":" + std::to_string(i) + "}"));
        for (int read = 0; read < 2; ++read) // the second read dead-letters all four
            owner.exec("read", "SELECT * FROM idempo.queue_read('rq', 0, 10)");
        const PgResult ids = owner.exec("ids", "SELECT msg_id FROM pgmq.q_rq_dlq ORDER BY msg_id");
        QCOMPARE(ids.rows(), 4);
        for (int row = 0; row < ids.rows(); ++row)
            m_ids.push_back(ids.integer(row, 0));
    }

    void cleanupTestCase() { qunsetenv("PGPASSFILE"); }

    /// Ann's replay is open: Bob's begin of an overlapping set, and Ann's own second begin of
    /// the same replay id, are refused with ID009 naming the replay, Ann and since when, and
    /// write nothing; a set that meets it nowhere begins.
    void secondBeginIsRefusedNamingTheHolder()
    {
        PgConnection ann(urlFor("dlq_ann"));
        PgConnection bob(urlFor("dlq_bob"));
        PgConnection owner(testUrl());
        const std::string set =
            "{" + std::to_string(m_ids[0]) + "," + std::to_string(m_ids[1]) + "}";
        const std::int64_t begun =
            ann.exec("begin", kBegin, PgParams().text("rp-ann").text(set).integer(300000))
                .integer(0, 0);
        const std::int64_t audited = auditCount(owner);
        for (auto [who, replayId, ids] :
             {std::tuple{&bob, "rp-bob", "{" + std::to_string(m_ids[1]) + "}"},
              std::tuple{&ann, "rp-ann", set}}) {
            const Error e = errorOf([&, &c = *who, &r = replayId, &i = ids] {
                c.exec("begin", kBegin, PgParams().text(r).text(i).integer(300000));
            });
            QCOMPARE(e.code(), ErrorCode::InProgress);
            const QString message = QString::fromUtf8(e.what());
            QVERIFY2(message.contains(QStringLiteral("replay rp-ann of queue 'rq' is open: "
                                                     "login dlq_ann has run it since 20")),
                     e.what());
            QVERIFY2(message.contains(QRegularExpression(QStringLiteral(
                         "since \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z"))),
                     e.what());
            QVERIFY2(message.contains(QStringLiteral("Nothing was written")), e.what());
        }
        QCOMPARE(auditCount(owner), audited);
        // Ann's run goes on: a requeue under its own run, then its finish.
        QVERIFY(!ann.exec("requeue", kRequeue,
                          PgParams().integer(m_ids[0]).text("rp-ann").integer(begun))
                     .isNull(0, 0));
        ann.exec("finish", kFinish, PgParams().text("rp-ann").integer(begun));
        // Finished, it holds nothing: Bob's replay of the rest begins.
        bob.exec(
            "begin", kBegin,
            PgParams().text("rp-bob").text("{" + std::to_string(m_ids[1]) + "}").integer(300000));
        PostgresLedgerStore store(testUrl());
        QVERIFY(AuditVerify(store).run().ok);
    }

    /// Ann's replay falls silent for longer than its idle limit (1 s here): Bob's begin takes
    /// it over, its `dlq_replay` record names Ann's run, and Ann's requeue and finish under her
    /// old run are refused (ID008) and move nothing.
    void abandonedReplayIsTakenOverAndFencedOff()
    {
        PgConnection ann(urlFor("dlq_ann"));
        PgConnection bob(urlFor("dlq_bob"));
        PgConnection owner(testUrl());
        const std::string set =
            "{" + std::to_string(m_ids[2]) + "," + std::to_string(m_ids[3]) + "}";
        const std::int64_t annRun =
            ann.exec("begin", kBegin, PgParams().text("rp-ann-2").text(set).integer(1000))
                .integer(0, 0);
        QCOMPARE(errorOf([&] {
                     bob.exec("begin", kBegin,
                              PgParams().text("rp-bob-2").text(set).integer(300000));
                 }).code(),
                 ErrorCode::InProgress);
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));
        const std::int64_t bobRun =
            bob.exec("begin", kBegin, PgParams().text("rp-bob-2").text(set).integer(300000))
                .integer(0, 0);
        const std::string detail =
            owner
                .exec("detail", "SELECT detail FROM idempo.audit_log WHERE seq = $1::bigint",
                      PgParams().integer(bobRun))
                .text(0, 0);
        QVERIFY2(QString::fromStdString(detail).contains(
                     QStringLiteral("\"took_over\":[{\"begun_at_ms\":")),
                 detail.c_str());
        QVERIFY2(detail.find("\"begun_seq\":" + std::to_string(annRun)) != std::string::npos &&
                     detail.find("\"login\":\"dlq_ann\"") != std::string::npos,
                 detail.c_str());
        const std::string before =
            owner.exec("dlq", "SELECT count(*) FROM pgmq.q_rq_dlq").text(0, 0);
        for (const auto &attempt : std::vector<std::function<void()>>{
                 [&] {
                     ann.exec("requeue", kRequeue,
                              PgParams().integer(m_ids[2]).text("rp-ann-2").integer(annRun));
                 },
                 [&] {
                     ann.exec("finish", kFinish, PgParams().text("rp-ann-2").integer(annRun));
                 }}) {
            const Error e = errorOf(attempt);
            QCOMPARE(e.code(), ErrorCode::Refused);
            QVERIFY2(QString::fromUtf8(e.what()).contains(
                         QStringLiteral("was taken over as abandoned by the replay begun at "
                                        "audit seq %1")
                             .arg(bobRun)),
                     e.what());
        }
        QCOMPARE(owner.exec("dlq", "SELECT count(*) FROM pgmq.q_rq_dlq").text(0, 0), before);
        // Bob's run requeues and finishes.
        QVERIFY(!bob.exec("requeue", kRequeue,
                          PgParams().integer(m_ids[2]).text("rp-bob-2").integer(bobRun))
                     .isNull(0, 0));
        bob.exec("finish", kFinish, PgParams().text("rp-bob-2").integer(bobRun));
    }

    /// The new argument is checked by name.
    void idleLimitIsChecked()
    {
        PgConnection ann(urlFor("dlq_ann"));
        for (const std::int64_t limit : {std::int64_t{999}, std::int64_t{604'800'001}}) {
            const Error e = errorOf([&] {
                ann.exec("begin", kBegin, PgParams().text("rp-limit").text("{1}").integer(limit));
            });
            QCOMPARE(e.code(), ErrorCode::InvalidArgument);
            QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("p_idle_limit_ms")),
                     e.what());
        }
    }

private:
    static std::int64_t auditCount(PgConnection &owner)
    {
        return owner.exec("audit", "SELECT count(*) FROM idempo.audit_log").integer(0, 0);
    }

    QTemporaryDir m_passwords;
    std::vector<std::int64_t> m_ids;
};

QTEST_GUILESS_MAIN(TestDlqReplayOpen)
#include "tst_dlqreplayopen.moc"
