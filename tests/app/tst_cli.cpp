// SPDX-License-Identifier: Apache-2.0
// Drives the real `idempo` binary: outputs, exit codes and what lands in the ledger. Claims and
// their outcomes, payloads, refusals and usage mistakes, queues, processes racing; ledger
// addresses and guarded actions are in tst_cli_ledgeraddress.cpp and tst_cli_guardedactions.cpp.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include "clitestcase.h"

class TestCli final : public CliTestCase
{
    Q_OBJECT

private Q_SLOTS:
    void claimCompleteReplay()
    {
        const Run claimed = idempo(
            {QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("run-1:provision"),
             QStringLiteral("--payload"), QStringLiteral(R"({"b":2,"a":1})"),
             QStringLiteral("--run"), QStringLiteral("run-1"), QStringLiteral("--step"),
             QStringLiteral("provision"), QStringLiteral("--value"), QStringLiteral("1250.5 EUR")});
        QCOMPARE(claimed.exitCode, 0);
        QCOMPARE(claimed.json[QStringLiteral("operation")]
                     .toObject()[QStringLiteral("value")]
                     .toString(),
                 QStringLiteral("1250.50 EUR"));
        QCOMPARE(claimed.json[QStringLiteral("outcome")].toString(), QStringLiteral("claimed"));
        QCOMPARE(claimed.json[QStringLiteral("key")].toString(), QStringLiteral("run-1:provision"));
        QCOMPARE(claimed.json[QStringLiteral("state")].toString(), QStringLiteral("dispatching"));
        QCOMPARE(claimed.json[QStringLiteral("attempt")].toInt(), 1);
        const qint64 token = claimed.json[QStringLiteral("fencing_token")].toInteger();
        QVERIFY(token > 0);

        const Run busy = idempo({QStringLiteral("--json"), QStringLiteral("claim"),
                                 QStringLiteral("run-1:provision"), QStringLiteral("--payload"),
                                 QStringLiteral(R"({"a":1,"b":2})")});
        QCOMPARE(busy.exitCode, 75);
        QCOMPARE(busy.json[QStringLiteral("outcome")].toString(), QStringLiteral("in_progress"));

        const Run done =
            idempo({QStringLiteral("complete"), QStringLiteral("run-1:provision"),
                    QStringLiteral("--token"), QString::number(token), QStringLiteral("--result"),
                    QStringLiteral(R"({"account":"A-1"})")});
        QCOMPARE(done.exitCode, 0);

        const Run replay = idempo({QStringLiteral("--json"), QStringLiteral("claim"),
                                   QStringLiteral("run-1:provision"), QStringLiteral("--payload"),
                                   QStringLiteral(R"({"a":1,"b":2})")});
        QCOMPARE(replay.exitCode, 0);
        QCOMPARE(replay.json[QStringLiteral("outcome")].toString(), QStringLiteral("replayed"));
        QCOMPARE(
            replay.json[QStringLiteral("result")].toObject()[QStringLiteral("account")].toString(),
            QStringLiteral("A-1"));

        const Run mismatch = idempo({QStringLiteral("--json"), QStringLiteral("claim"),
                                     QStringLiteral("run-1:provision"), QStringLiteral("--payload"),
                                     QStringLiteral(R"({"a":1,"b":3})")});
        QCOMPARE(mismatch.exitCode, 65);
        QCOMPARE(mismatch.json[QStringLiteral("outcome")].toString(),
                 QStringLiteral("payload_mismatch"));

        const Run history = idempo({QStringLiteral("--json"), QStringLiteral("history"),
                                    QStringLiteral("run-1:provision")});
        QCOMPARE(history.exitCode, 0);
        QCOMPARE(history.json[QStringLiteral("events")].toArray().size(), 2);

        const Run metrics = idempo({QStringLiteral("--json"), QStringLiteral("metrics")});
        QCOMPARE(metrics.json[QStringLiteral("suppressions_total")].toInt(), 3);
        QCOMPARE(metrics.json[QStringLiteral("operations_by_state")]
                     .toObject()[QStringLiteral("succeeded")]
                     .toInt(),
                 1);
    }

    void keyStartingWithDashAfterDoubleDash()
    {
        const Run claimed =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("--payload"),
                    QStringLiteral("{}"), QStringLiteral("--"), QStringLiteral("-17:refund")});
        QCOMPARE(claimed.exitCode, 0);
        QCOMPARE(claimed.json[QStringLiteral("key")].toString(), QStringLiteral("-17:refund"));
        const Run shown = idempo({QStringLiteral("--json"), QStringLiteral("show"),
                                  QStringLiteral("--"), QStringLiteral("-17:refund")});
        QCOMPARE(shown.exitCode, 0);
        QCOMPARE(shown.json[QStringLiteral("state")].toString(), QStringLiteral("dispatching"));
        const Run option = idempo(
            {QStringLiteral("--json"), QStringLiteral("show"), QStringLiteral("-17:refund")});
        QCOMPARE(option.exitCode, 64);
    }

    void staleTokenRefused()
    {
        const Run claimed =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:1"),
                    QStringLiteral("--payload"), QStringLiteral("{}"), QStringLiteral("--kind"),
                    QStringLiteral("idempotent_write")});
        const qint64 token = claimed.json[QStringLiteral("fencing_token")].toInteger();
        const Run stale =
            idempo({QStringLiteral("--json"), QStringLiteral("complete"), QStringLiteral("k:1"),
                    QStringLiteral("--token"), QString::number(token + 1)});
        QCOMPARE(stale.exitCode, 65);
        QCOMPARE(stale.json[QStringLiteral("error")].toString(), QStringLiteral("stale_lease"));
        const Run show =
            idempo({QStringLiteral("--json"), QStringLiteral("show"), QStringLiteral("k:1")});
        QCOMPARE(show.json[QStringLiteral("state")].toString(), QStringLiteral("dispatching"));
    }

    void failFollowsRetryPolicy()
    {
        const Run claimed =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:2"),
                    QStringLiteral("--payload"), QStringLiteral("{}")});
        const QString token =
            QString::number(claimed.json[QStringLiteral("fencing_token")].toInteger());
        const Run failed = idempo({QStringLiteral("--json"), QStringLiteral("fail"),
                                   QStringLiteral("k:2"), QStringLiteral("--token"), token,
                                   QStringLiteral("--class"), QStringLiteral("rate_limited"),
                                   QStringLiteral("--retry-after"), QStringLiteral("600")});
        QCOMPARE(failed.exitCode, 0);
        QCOMPARE(failed.json[QStringLiteral("state")].toString(),
                 QStringLiteral("failed_retryable"));
        const Run later =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:2"),
                    QStringLiteral("--payload"), QStringLiteral("{}")});
        QCOMPARE(later.exitCode, 75);
        QCOMPARE(later.json[QStringLiteral("outcome")].toString(), QStringLiteral("retry_later"));
        QVERIFY(!later.json[QStringLiteral("retry_at")].toString().isEmpty());
    }

    void payloadFromFileAndStdin()
    {
        const QString file = m_dir.filePath(QStringLiteral("payload.json"));
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"amount": 1250, "currency": "EUR"})");
        f.close();
        const Run fromFile =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:3"),
                    QStringLiteral("--payload"), QLatin1Char('@') + file});
        QCOMPARE(fromFile.exitCode, 0);
        const Run fromStdin =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:3"),
                    QStringLiteral("--payload"), QStringLiteral("@-")},
                   R"({"currency":"EUR","amount":1250})");
        QCOMPARE(fromStdin.json[QStringLiteral("outcome")].toString(),
                 QStringLiteral("in_progress"));
        const Run missing =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:4"),
                    QStringLiteral("--payload"), QStringLiteral("@/nonexistent/p.json")});
        QCOMPARE(missing.exitCode, 64);
    }

    void refusalsAreJsonAndWriteNothing_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("error");
        const QString claim = QStringLiteral("claim");
        const QString payload = QStringLiteral("--payload");
        QTest::newRow("empty key") << QStringList{claim, QString(), payload, QStringLiteral("{}")}
                                   << 65 << QStringLiteral("invalid_key");
        QTest::newRow("256-byte key")
            << QStringList{claim, QString(256, QLatin1Char('k')), payload, QStringLiteral("{}")}
            << 65 << QStringLiteral("invalid_key");
        QTest::newRow("invalid json")
            << QStringList{claim, QStringLiteral("k:5"), payload, QStringLiteral("{nope")} << 65
            << QStringLiteral("invalid_json");
        QTest::newRow("missing payload")
            << QStringList{claim, QStringLiteral("k:5")} << 64 << QStringLiteral("usage");
        QTest::newRow("bad kind") << QStringList{claim,
                                                 QStringLiteral("k:5"),
                                                 payload,
                                                 QStringLiteral("{}"),
                                                 QStringLiteral("--kind"),
                                                 QStringLiteral("write")}
                                  << 64 << QStringLiteral("usage");
        QTest::newRow("bad token") << QStringList{QStringLiteral("complete"), QStringLiteral("k:5"),
                                                  QStringLiteral("--token"), QStringLiteral("x")}
                                   << 64 << QStringLiteral("usage");
        QTest::newRow("unknown key") << QStringList{QStringLiteral("show"), QStringLiteral("k:404")}
                                     << 65 << QStringLiteral("not_found");
        QTest::newRow("unknown command")
            << QStringList{QStringLiteral("frobnicate")} << 64 << QStringLiteral("usage");
        QTest::newRow("grouped value") << QStringList{claim,
                                                      QStringLiteral("k:5"),
                                                      payload,
                                                      QStringLiteral("{}"),
                                                      QStringLiteral("--value"),
                                                      QStringLiteral("1,250.00 EUR")}
                                       << 64 << QStringLiteral("invalid_argument");
        QTest::newRow("value without currency") << QStringList{claim,
                                                               QStringLiteral("k:5"),
                                                               payload,
                                                               QStringLiteral("{}"),
                                                               QStringLiteral("--value"),
                                                               QStringLiteral("1250")}
                                                << 64 << QStringLiteral("invalid_argument");
        QTest::newRow("unknown option")
            << QStringList{claim, QStringLiteral("k:5"), QStringLiteral("--frob")} << 64
            << QStringLiteral("usage");
    }

    void refusalsAreJsonAndWriteNothing()
    {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, error);
        args.prepend(QStringLiteral("--json"));
        const Run r = idempo(args);
        QCOMPARE(r.exitCode, exitCode);
        QCOMPARE(r.json[QStringLiteral("error")].toString(), error);
        QVERIFY(!r.json[QStringLiteral("message")].toString().isEmpty());
        const Run list = idempo({QStringLiteral("--json"), QStringLiteral("list")});
        QCOMPARE(list.json[QStringLiteral("operations")].toArray().size(), 0);
    }

    void nonUtf8ArgumentsAreRefused()
    {
        // QProcess encodes arguments as UTF-8, so the raw bytes go through the shell.
        auto *p = new QProcess(this);
        p->start(
            QStringLiteral("/bin/sh"),
            {QStringLiteral("-c"),
             QStringLiteral(
                 "\"$0\" --ledger \"$1\" --json claim \"$(printf 'run-1:\\377')\" --payload '{}'"),
             QStringLiteral(IDEMPO_CLI_PATH), m_ledger});
        const Run r = finish(p);
        QCOMPARE(r.exitCode, 65);
        QCOMPARE(r.json[QStringLiteral("error")].toString(), QStringLiteral("invalid_argument"));
        const Run list = idempo({QStringLiteral("--json"), QStringLiteral("list")});
        QCOMPARE(list.json[QStringLiteral("operations")].toArray().size(), 0);
    }

    void endlessPayloadFileIsCutAtTheLimit()
    {
        const Run r =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:6"),
                    QStringLiteral("--payload"), QStringLiteral("@/dev/zero")});
        QCOMPARE(r.exitCode, 65);
        QCOMPARE(r.json[QStringLiteral("error")].toString(), QStringLiteral("payload_too_large"));
    }

    void usageMistakes_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("extra argument")
            << QStringList{QStringLiteral("metrics"), QStringLiteral("extra")};
        QTest::newRow("no command") << QStringList{};
        QTest::newRow("retention below the floor") << QStringList{
            QStringLiteral("--retention"), QStringLiteral("60"), QStringLiteral("metrics")};
        QTest::newRow("zero token")
            << QStringList{QStringLiteral("heartbeat"), QStringLiteral("k:1"),
                           QStringLiteral("--token"), QStringLiteral("0")};
        QTest::newRow("zero lease") << QStringList{
            QStringLiteral("claim"), QStringLiteral("k:1"),     QStringLiteral("--payload"),
            QStringLiteral("{}"),    QStringLiteral("--lease"), QStringLiteral("0")};
        QTest::newRow("stale_lease as class") << QStringList{
            QStringLiteral("fail"), QStringLiteral("k:1"),     QStringLiteral("--token"),
            QStringLiteral("1"),    QStringLiteral("--class"), QStringLiteral("stale_lease")};
    }

    void usageMistakes()
    {
        QFETCH(QStringList, args);
        args.prepend(QStringLiteral("--json"));
        const Run r = idempo(args);
        QCOMPARE(r.exitCode, 64);
        QVERIFY2(!r.json[QStringLiteral("error")].toString().isEmpty(), r.out.constData());
    }

    void queueRoundTripAndDeadLetter()
    {
        QCOMPARE(idempo({QStringLiteral("queue"), QStringLiteral("create"), QStringLiteral("steps"),
                         QStringLiteral("--max-reads"), QStringLiteral("2")})
                     .exitCode,
                 0);
        const Run sent =
            idempo({QStringLiteral("--json"), QStringLiteral("queue"), QStringLiteral("send"),
                    QStringLiteral("steps"), QStringLiteral("--message"),
                    QStringLiteral(R"({"run_id":"run-1","step_id":"provision"})")});
        QCOMPARE(sent.exitCode, 0);
        const QString id = QString::number(sent.json[QStringLiteral("msg_id")].toInteger());

        const auto read = [&](const QString &vt) {
            return idempo({QStringLiteral("--json"), QStringLiteral("queue"),
                           QStringLiteral("read"), QStringLiteral("steps"), QStringLiteral("--vt"),
                           vt})
                .json[QStringLiteral("messages")]
                .toArray();
        };
        const QJsonArray first = read(QStringLiteral("0"));
        QCOMPARE(first.size(), 1);
        QCOMPARE(first[0].toObject()[QStringLiteral("read_ct")].toInt(), 1);
        const QJsonArray browse = idempo({QStringLiteral("--json"), QStringLiteral("queue"),
                                          QStringLiteral("list"), QStringLiteral("steps")})
                                      .json[QStringLiteral("messages")]
                                      .toArray();
        QCOMPARE(browse[0].toObject()[QStringLiteral("read_ct")].toInt(),
                 1); // browsing is not a read
        QCOMPARE(read(QStringLiteral("600")).size(), 1);
        QCOMPARE(read(QStringLiteral("600")).size(), 0); // hidden inside its visibility timeout

        QCOMPARE(idempo({QStringLiteral("queue"), QStringLiteral("nack"), QStringLiteral("steps"),
                         id, QStringLiteral("--class"), QStringLiteral("transient"),
                         QStringLiteral("--detail"), QStringLiteral("503 from provider")})
                     .exitCode,
                 0);
        QCOMPARE(read(QStringLiteral("600")).size(),
                 0); // a third delivery would pass the limit of 2
        const Run dlq = idempo({QStringLiteral("--json"), QStringLiteral("dlq"),
                                QStringLiteral("list"), QStringLiteral("steps")});
        QCOMPARE(dlq.exitCode, 0);
        const QJsonArray dead = dlq.json[QStringLiteral("messages")].toArray();
        QCOMPARE(dead.size(), 1);
        QVERIFY2(QJsonDocument(dead[0].toObject()).toJson().contains("503 from provider"),
                 dlq.out.constData());

        const Run ack = idempo({QStringLiteral("--json"), QStringLiteral("queue"),
                                QStringLiteral("ack"), QStringLiteral("steps"), id});
        QCOMPARE(ack.exitCode, 65); // already moved to the dead-letter queue
        const Run badName =
            idempo({QStringLiteral("--json"), QStringLiteral("queue"), QStringLiteral("create"),
                    QStringLiteral("x; drop table operations")});
        QCOMPARE(badName.exitCode, 64);
    }

    void helpDocumentsExitCodes()
    {
        const Run r = idempo({QStringLiteral("--help")});
        QCOMPARE(r.exitCode, 0);
        for (const char *code : {"64", "65", "69", "75"})
            QVERIFY2(r.out.contains(QByteArray(QByteArray("\n  ") + code)), code);
    }

    void processesRaceForOneKey()
    {
        QVERIFY(idempo({QStringLiteral("init")}).exitCode == 0);
        for (int round = 0; round < 5; ++round) {
            const QString key = QStringLiteral("race:%1").arg(round);
            std::vector<QProcess *> procs;
            for (int i = 0; i < 8; ++i)
                procs.push_back(start({QStringLiteral("--ledger"), m_ledger,
                                       QStringLiteral("--json"), QStringLiteral("claim"), key,
                                       QStringLiteral("--payload"), QStringLiteral("{}"),
                                       QStringLiteral("--owner"), QStringLiteral("p%1").arg(i)}));
            int claimed = 0;
            int inProgress = 0;
            for (QProcess *p : procs) {
                const Run r = finish(p);
                const QString outcome = r.json[QStringLiteral("outcome")].toString();
                claimed += outcome == QLatin1String("claimed");
                inProgress += outcome == QLatin1String("in_progress");
            }
            QCOMPARE(claimed, 1);
            QCOMPARE(inProgress, 7);
        }
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
