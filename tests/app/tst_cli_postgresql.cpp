// SPDX-License-Identifier: Apache-2.0
// The real `idempo` binary on a PostgreSQL ledger: separate processes racing for one key and
// for one queue's messages. Runs under tests/pg/with-postgres.sh.
#include <map>
#include <set>
#include <vector>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>

namespace {

struct Run
{
    int exitCode = -1;
    QJsonObject json;
    QByteArray out;
    QByteArray err;
};

QString ledgerUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
}

} // namespace

class TestCliPostgresql final : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_home;

    QProcessEnvironment environment() const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("IDEMPO_LEDGER"));
        env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
        env.insert(QStringLiteral("HOME"), m_home.path()); // never the user's files
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_home.filePath(QStringLiteral("xdg")));
        return env;
    }

    /// Starts `idempo --ledger URL ARGS…`.
    QProcess *start(const QStringList &args)
    {
        auto *p = new QProcess(this);
        p->setProcessEnvironment(environment());
        p->start(QStringLiteral(IDEMPO_CLI_PATH),
                 QStringList{QStringLiteral("--ledger"), ledgerUrl()} + args);
        return p;
    }

    Run finish(QProcess *p)
    {
        Run r;
        if (!p->waitForFinished(60'000))
            qWarning("process did not finish");
        r.exitCode = p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -1;
        r.out = p->readAllStandardOutput();
        r.err = p->readAllStandardError();
        r.json = QJsonDocument::fromJson(r.out).object();
        p->deleteLater();
        return r;
    }

    Run idempo(const QStringList &args) { return finish(start(args)); }

    /// A consumer process: `rounds` × `idempo --json queue read QUEUE --vt 600 --qty 2` in a shell
    /// loop, one JSON line per read.
    QProcess *startConsumer(const QString &queue, int rounds)
    {
        auto *p = new QProcess(this);
        QProcessEnvironment env = environment();
        env.insert(QStringLiteral("IDEMPO"), QStringLiteral(IDEMPO_CLI_PATH));
        env.insert(QStringLiteral("LEDGER"), ledgerUrl());
        env.insert(QStringLiteral("QUEUE"), queue);
        p->setProcessEnvironment(env);
        p->start(
            QStringLiteral("/bin/sh"),
            {QStringLiteral("-c"),
             QStringLiteral(
                 "i=0; while [ $i -lt %1 ]; do \"$IDEMPO\" --ledger \"$LEDGER\" --json queue read "
                 "\"$QUEUE\" --vt 600 --qty 2 || exit 1; i=$((i + 1)); done")
                 .arg(rounds)});
        return p;
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (ledgerUrl().isEmpty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        QVERIFY(m_home.isValid());
        const Run init = idempo({QStringLiteral("--json"), QStringLiteral("init")});
        QVERIFY2(init.exitCode == 0, init.err.constData());
        QVERIFY(init.json[QStringLiteral("schema_version")].toInt() >= 2);
    }

    /// 8 processes claim one key at once, 5 times over: exactly one is `claimed` each time.
    void processesRaceForOneKey()
    {
        for (int round = 0; round < 5; ++round) {
            const QString key = QStringLiteral("race:%1").arg(round);
            std::vector<QProcess *> procs;
            for (int i = 0; i < 8; ++i)
                procs.push_back(start({QStringLiteral("--json"), QStringLiteral("claim"), key,
                                       QStringLiteral("--payload"), QStringLiteral("{}"),
                                       QStringLiteral("--owner"), QStringLiteral("p%1").arg(i)}));
            int claimed = 0;
            int inProgress = 0;
            for (QProcess *p : procs) {
                const Run r = finish(p);
                const QString outcome = r.json[QStringLiteral("outcome")].toString();
                QVERIFY2(r.exitCode == 0 || r.exitCode == 75, r.err.constData());
                claimed += outcome == QLatin1String("claimed");
                inProgress += outcome == QLatin1String("in_progress");
            }
            QCOMPARE(claimed, 1);
            QCOMPARE(inProgress, 7);
        }
    }

    /// 6 processes submit the same approval at once: one applies it, the others get the first
    /// decision back; one audit record names the database login and its role; the chain
    /// verifies. The approver is a login of its own: the login that requested an operation
    /// cannot approve it.
    void processesRaceForOneApproval()
    {
        const auto S = [](const char *s) { return QString::fromLatin1(s); };
        QProcess psql;
        psql.start(S("psql"),
                   {S("-X"), S("-q"), S("-v"), S("ON_ERROR_STOP=1"), S("-d"), ledgerUrl(), S("-c"),
                    S("DROP ROLE IF EXISTS cli_approver; "
                      "CREATE ROLE cli_approver LOGIN PASSWORD 'approver-secret' IN ROLE "
                      "idempo_approver")});
        QVERIFY(psql.waitForFinished(30'000));
        QCOMPARE(psql.exitCode(), 0);
        QFile pgpass(m_home.filePath(S(".pgpass"))); // HOME is m_home: libpq reads it
        QVERIFY(pgpass.open(QIODevice::WriteOnly | QIODevice::Truncate));
        pgpass.write("*:*:*:cli_approver:approver-secret\n");
        pgpass.close();
        QVERIFY(pgpass.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        QUrl approver(ledgerUrl());
        approver.setUserName(S("cli_approver"));
        const Run claimed =
            idempo({S("--json"), S("claim"), S("approve:1"), S("--payload"), S("{}"),
                    S("--max-attempts"), S("1"), S("--owner"), S("worker-1")});
        QCOMPARE(claimed.exitCode, 0);
        const QString token = QString::number(claimed.json[S("fencing_token")].toInteger());
        QCOMPARE(
            idempo({S("fail"), S("approve:1"), S("--token"), token, S("--class"), S("transient")})
                .exitCode,
            0);
        std::vector<QProcess *> procs;
        for (int i = 0; i < 6; ++i)
            procs.push_back(start({S("--ledger"), approver.toString(), S("--json"), S("approve"),
                                   S("approve:1"), S("--decision"), S("redispatch"), S("--reason"),
                                   S("checked"), S("--approval-id"), S("ap-race")}));
        int applied = 0;
        int replayed = 0;
        for (QProcess *p : procs) {
            const Run r = finish(p);
            QVERIFY2(r.exitCode == 0, r.err.constData());
            const QString status = r.json[S("result")].toObject()[S("status")].toString();
            applied += status == QLatin1String("applied");
            replayed += status == QLatin1String("replayed");
        }
        QCOMPARE(applied, 1);
        QCOMPARE(replayed, 5);
        const Run history = idempo({S("--json"), S("history"), S("approve:1")});
        QCOMPARE(history.json[S("events")].toArray().size(), 3); // created, failed, approved
        const Run audit = idempo({S("--json"), S("audit"), S("list")});
        const QJsonArray records = audit.json[S("records")].toArray();
        QCOMPARE(records.size(), 1);
        QCOMPARE(records.at(0).toObject()[S("who")].toString(), S("cli_approver"));
        QCOMPARE(records.at(0).toObject()[S("role")].toString(), S("approver"));
        QCOMPARE(idempo({S("audit"), S("verify")}).exitCode, 0);
    }

    /// Two consumer processes read one queue at once with a 600 s visibility timeout: no message
    /// reaches both, none reaches either twice, and all are delivered.
    void consumersNeverShareAMessage()
    {
        QCOMPARE(
            idempo({QStringLiteral("queue"), QStringLiteral("create"), QStringLiteral("steps")})
                .exitCode,
            0);
        constexpr int kMessages = 40;
        std::set<qint64> sent;
        for (int first = 0; first < kMessages; first += 8) {
            std::vector<QProcess *> senders;
            for (int i = first; i < first + 8; ++i)
                senders.push_back(start(
                    {QStringLiteral("--json"), QStringLiteral("queue"), QStringLiteral("send"),
                     QStringLiteral("steps"), QStringLiteral("--message"),
                     QStringLiteral(R"({"run_id":"run-%1","step_id":"provision"})").arg(i)}));
            for (QProcess *p : senders) {
                const Run r = finish(p);
                QVERIFY2(r.exitCode == 0, r.err.constData());
                sent.insert(r.json[QStringLiteral("msg_id")].toInteger());
            }
        }
        QCOMPARE(sent.size(), std::size_t(kMessages));

        // 2 × 30 reads of up to 2 messages: room for every message, with both consumers active
        // until the queue runs dry.
        QProcess *a = startConsumer(QStringLiteral("steps"), 30);
        QProcess *b = startConsumer(QStringLiteral("steps"), 30);
        std::map<qint64, int> deliveries;
        int readsWithMessages[2] = {0, 0};
        int consumer = 0;
        for (QProcess *p : {a, b}) {
            const Run r = finish(p);
            QVERIFY2(r.exitCode == 0, r.err.constData());
            for (const QByteArray &line : r.out.split('\n')) {
                if (line.trimmed().isEmpty())
                    continue;
                const QJsonArray messages =
                    QJsonDocument::fromJson(line).object()[QStringLiteral("messages")].toArray();
                readsWithMessages[consumer] += messages.isEmpty() ? 0 : 1;
                for (const QJsonValue &m : messages) {
                    QCOMPARE(m.toObject()[QStringLiteral("read_ct")].toInt(), 1);
                    deliveries[m.toObject()[QStringLiteral("msg_id")].toInteger()]++;
                }
            }
            ++consumer;
        }
        for (const auto &[id, count] : deliveries)
            QVERIFY2(
                count == 1,
                qPrintable(QStringLiteral("message %1 delivered %2 times").arg(id).arg(count)));
        std::set<qint64> received;
        for (const auto &[id, count] : deliveries)
            received.insert(id);
        QCOMPARE(received, sent);
        QVERIFY2(readsWithMessages[0] > 0 && readsWithMessages[1] > 0,
                 "both consumers took messages");
        const Run metrics = idempo({QStringLiteral("--json"), QStringLiteral("queue"),
                                    QStringLiteral("metrics"), QStringLiteral("steps")});
        QCOMPARE(metrics.json[QStringLiteral("queue_length")].toInteger(), qint64(kMessages));
        QCOMPARE(metrics.json[QStringLiteral("queue_visible_length")].toInteger(), qint64(0));
    }

    /// The queue commands on PostgreSQL, through to the dead-letter queue and its last error.
    void queueRoundTripAndDeadLetter()
    {
        QCOMPARE(idempo({QStringLiteral("queue"), QStringLiteral("create"), QStringLiteral("once"),
                         QStringLiteral("--max-reads"), QStringLiteral("1")})
                     .exitCode,
                 0);
        const Run sent =
            idempo({QStringLiteral("--json"), QStringLiteral("queue"), QStringLiteral("send"),
                    QStringLiteral("once"), QStringLiteral("--message"),
                    QStringLiteral(R"({"b":2,"a":1})"), QStringLiteral("--headers"),
                    QStringLiteral(R"({"trace":"t-7"})")});
        QCOMPARE(sent.exitCode, 0);
        const QString id = QString::number(sent.json[QStringLiteral("msg_id")].toInteger());
        const Run read =
            idempo({QStringLiteral("--json"), QStringLiteral("queue"), QStringLiteral("read"),
                    QStringLiteral("once"), QStringLiteral("--vt"), QStringLiteral("0")});
        QCOMPARE(read.json[QStringLiteral("messages")].toArray().size(), 1);
        QCOMPARE(QJsonDocument(
                     read.json[QStringLiteral("messages")][0][QStringLiteral("message")].toObject())
                     .toJson(QJsonDocument::Compact),
                 QByteArray(R"({"a":1,"b":2})"));
        QCOMPARE(idempo({QStringLiteral("queue"), QStringLiteral("nack"), QStringLiteral("once"),
                         id, QStringLiteral("--class"), QStringLiteral("transient"),
                         QStringLiteral("--detail"), QStringLiteral("503 from provider")})
                     .exitCode,
                 0);
        const Run again = idempo({QStringLiteral("--json"), QStringLiteral("queue"),
                                  QStringLiteral("read"), QStringLiteral("once")});
        QCOMPARE(again.json[QStringLiteral("messages")].toArray().size(),
                 0); // moved instead of delivered
        const Run dlq = idempo({QStringLiteral("--json"), QStringLiteral("dlq"),
                                QStringLiteral("list"), QStringLiteral("once")});
        QCOMPARE(dlq.exitCode, 0);
        const QJsonArray dead = dlq.json[QStringLiteral("messages")].toArray();
        QCOMPARE(dead.size(), 1);
        QVERIFY2(QJsonDocument(dead[0].toObject()).toJson().contains("503 from provider"),
                 dlq.out.constData());
        QVERIFY2(QJsonDocument(dead[0].toObject()).toJson().contains("t-7"), dlq.out.constData());
        QCOMPARE(
            idempo({QStringLiteral("--json"), QStringLiteral("queue"), QStringLiteral("ack"),
                    QStringLiteral("once"), id, QStringLiteral("--read-ct"), QStringLiteral("1")})
                .exitCode,
            65); // already moved
    }

    /// The engine's word on the shared ledger: reconcile of an operation no lookup covers hands
    /// it to a person; the record's projection decides a claim that names none and another one is
    /// refused as such; unknown dead-letter ids are named and refused with nothing audited;
    /// --envelope holds a message to the envelope's rules.
    void trustedAnswers()
    {
        const auto S = [](const char *s) { return QString::fromUtf8(s); };
        const Run claimed =
            idempo({S("--json"), S("claim"), S("trust-1:book"), S("--payload"), S("{}")});
        QCOMPARE(claimed.exitCode, 0);
        QCOMPARE(idempo({S("fail"), S("trust-1:book"), S("--token"),
                         QString::number(claimed.json[S("fencing_token")].toInteger()),
                         S("--class"), S("unknown_outcome")})
                     .exitCode,
                 0);
        const Run reconciled =
            idempo({S("--json"), S("reconcile"), S("trust-1:book"), S("--reason"), S("outage")});
        QVERIFY2(reconciled.exitCode == 0, reconciled.out.constData());
        const QJsonObject row = reconciled.json[S("result")][S("reconciled")][0].toObject();
        QCOMPARE(row[S("evidence")][S("status")].toString(), S("unsupported"));
        QCOMPARE(row[S("to")].toString(), S("confirmation_required"));
        QCOMPARE(
            idempo({S("--json"), S("claim"), S("trust-1:book"), S("--payload"), S("{}")}).exitCode,
            75);

        QCOMPARE(
            idempo({S("claim"), S("trust-2:refund"), S("--payload"),
                    S(R"({"amount":10,"at":"09:00"})"), S("--fingerprint-fields"), S("/amount")})
                .exitCode,
            0);
        QCOMPARE(idempo({S("--json"), S("claim"), S("trust-2:refund"), S("--payload"),
                         S(R"({"amount":10,"at":"09:05"})")})
                     .json[S("outcome")]
                     .toString(),
                 S("in_progress"));
        const Run other =
            idempo({S("--json"), S("claim"), S("trust-2:refund"), S("--payload"),
                    S(R"({"amount":10,"at":"09:05"})"), S("--fingerprint-fields"), S("/at")});
        QCOMPARE(other.exitCode, 65);
        QCOMPARE(other.json[S("error")].toString(), S("projection_mismatch"));

        const int audited = idempo({S("--json"), S("audit"), S("list"), S("--limit"), S("1000")})
                                .json[S("records")]
                                .toArray()
                                .size();
        QCOMPARE(idempo({S("queue"), S("create"), S("trust_steps")}).exitCode, 0);
        const Run dry = idempo(
            {S("dlq"), S("replay"), S("trust_steps"), S("--ids"), S("987654"), S("--dry-run")});
        QCOMPARE(dry.exitCode, 65);
        QVERIFY2(dry.out.contains("987654 is not in the dead-letter queue of trust_steps"),
                 dry.out.constData());
        QCOMPARE(idempo({S("dlq"), S("replay"), S("trust_steps"), S("--ids"), S("987654"),
                         S("--confirm"), S("0"), S("--reason"), S("retry")})
                     .exitCode,
                 65);
        QCOMPARE(idempo({S("--json"), S("audit"), S("list"), S("--limit"), S("1000")})
                     .json[S("records")]
                     .toArray()
                     .size(),
                 audited);

        const Run partial = idempo({S("--json"), S("queue"), S("send"), S("trust_steps"),
                                    S("--envelope"), S("--message"), S(R"({"run_id":"trust-3"})")});
        QCOMPARE(partial.exitCode, 65);
        QCOMPARE(partial.json[S("error")].toString(), S("invalid_json"));
        QCOMPARE(
            idempo(
                {S("queue"), S("send"), S("trust_steps"), S("--envelope"), S("--message"),
                 S(R"({"run_id":"trust-3","step_id":"s","source_agent":"","target_agent":"","payload":null,)"
                   R"("produced_at":0,"idempotency_key":"trust-3:s"})")})
                .exitCode,
            0);
    }
};

QTEST_GUILESS_MAIN(TestCliPostgresql)
#include "tst_cli_postgresql.moc"
