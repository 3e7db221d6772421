// SPDX-License-Identifier: Apache-2.0
// Drives the real `idempo` binary: outputs, exit codes and what lands in the ledger.
#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {

struct Run
{
    int exitCode = -1;
    QJsonObject json;
    QByteArray out;
    QByteArray err;
};

} // namespace

class TestCli final : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_ledger;

    QProcess *start(const QStringList &args, const QByteArray &input = {})
    {
        auto *p = new QProcess(this);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("IDEMPO_LEDGER"));
        env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
        env.insert(QStringLiteral("HOME"),
                   m_dir.path()); // the default ledger must never be the user's
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("xdg")));
        p->setProcessEnvironment(env);
        p->start(QStringLiteral(IDEMPO_CLI_PATH), args);
        if (!input.isNull()) {
            p->write(input);
            p->closeWriteChannel();
        }
        return p;
    }

    Run finish(QProcess *p)
    {
        Run r;
        if (!p->waitForFinished(30'000))
            qWarning("idempo did not finish");
        r.exitCode = p->exitStatus() == QProcess::NormalExit ? p->exitCode() : -1;
        r.out = p->readAllStandardOutput();
        r.err = p->readAllStandardError();
        r.json = QJsonDocument::fromJson(r.out).object();
        p->deleteLater();
        return r;
    }

    Run idempo(QStringList args, const QByteArray &input = {})
    {
        args.prepend(m_ledger);
        args.prepend(QStringLiteral("--ledger"));
        return finish(start(args, input));
    }

private Q_SLOTS:
    void init()
    {
        QVERIFY(m_dir.isValid());
        m_ledger =
            QStringLiteral("sqlite:") +
            m_dir.filePath(
                QStringLiteral("ledger-%1.db").arg(QLatin1String(QTest::currentTestFunction())));
        const Run init = idempo({QStringLiteral("init")});
        QCOMPARE(init.exitCode, 0);
    }

    void namedLedgerMustExist()
    {
        m_ledger = QStringLiteral("sqlite:") + m_dir.filePath(QStringLiteral("typo/ledger.db"));
        const Run r =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:1"),
                    QStringLiteral("--payload"), QStringLiteral("{}")});
        QCOMPARE(r.exitCode, 69);
        QVERIFY(
            r.json[QStringLiteral("message")].toString().contains(QStringLiteral("idempo init")));
        QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("typo"))));
    }

    void ledgerUrlOptionsAreChecked_data()
    {
        QTest::addColumn<QString>("suffix");
        QTest::newRow("unknown option") << QStringLiteral("?sync=NORMAL");
        QTest::newRow("bad value") << QStringLiteral("?synchronous=OFF");
    }

    void ledgerUrlOptionsAreChecked()
    {
        QFETCH(QString, suffix);
        m_ledger += suffix;
        const Run r = idempo({QStringLiteral("--json"), QStringLiteral("list")});
        QCOMPARE(r.exitCode, 64);
        QCOMPARE(r.json[QStringLiteral("error")].toString(), QStringLiteral("invalid_argument"));
    }

    void readOnlyLedgerCanBeRead()
    {
        QVERIFY(idempo({QStringLiteral("claim"), QStringLiteral("k:ro"),
                        QStringLiteral("--payload"), QStringLiteral("{}")})
                    .exitCode == 0);
        const QString path = m_ledger.mid(7);
        QVERIFY(QFile::setPermissions(path, QFileDevice::ReadOwner));
        if (QFileInfo(path).isWritable())
            QSKIP("running as a user who can write read-only files (root)");
        const Run r =
            idempo({QStringLiteral("--json"), QStringLiteral("show"), QStringLiteral("k:ro")});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.json[QStringLiteral("state")].toString(), QStringLiteral("dispatching"));
    }

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

        const Run ack =
            idempo({QStringLiteral("--json"), QStringLiteral("queue"), QStringLiteral("ack"),
                    QStringLiteral("steps"), id, QStringLiteral("--read-ct"), QStringLiteral("2")});
        QCOMPARE(ack.exitCode, 65); // already moved to the dead-letter queue
        const Run badName =
            idempo({QStringLiteral("--json"), QStringLiteral("queue"), QStringLiteral("create"),
                    QStringLiteral("x; drop table operations")});
        QCOMPARE(badName.exitCode, 64);
    }

    void unreachableLedgerExits69()
    {
        m_ledger = QStringLiteral("sqlite:/proc/no-such-dir/ledger.db");
        const Run r = idempo({QStringLiteral("--json"), QStringLiteral("list")});
        QCOMPARE(r.exitCode, 69);
        QCOMPARE(r.json[QStringLiteral("error")].toString(), QStringLiteral("ledger_unavailable"));
    }

    /// Whatever the spelling of a password in the ledger address, the message names the ledger
    /// without it (libpq's parse, or only the scheme of what libpq cannot parse); so does the
    /// address taken from $IDEMPO_LEDGER.
    void ledgerAddressIsShownWithoutItsPassword_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("shown");
        const QString unparsable = QStringLiteral("(unparsable connection string)");
        QTest::newRow("query upper case")
            << QStringLiteral("postgresql://app@127.0.0.1:1/db?PASSWORD=s3cret") << 64
            << unparsable;
        QTest::newRow("scheme with one slash")
            << QStringLiteral("postgresql:/app:s3cret@127.0.0.1:1/db") << 64 << unparsable;
        QTest::newRow("unknown scheme")
            << QStringLiteral("mysql://app:s3cret@127.0.0.1/db") << 64 << unparsable;
        QTest::newRow("upper-case scheme")
            << QStringLiteral("POSTGRESQL://app:s3cret@127.0.0.1:1/db") << 69
            << QStringLiteral("postgresql://app@127.0.0.1:1/db");
        QTest::newRow("percent-encoded keyword")
            << QStringLiteral("postgresql://app@127.0.0.1:1/db?pass%77ord=s3cret") << 69
            << QStringLiteral("postgresql://app@127.0.0.1:1/db");
        QTest::newRow("keywords") << QStringLiteral("host=127.0.0.1 port=1 password=s3cret") << 69
                                  << QStringLiteral("host=127.0.0.1 port=1");
    }

    void ledgerAddressIsShownWithoutItsPassword()
    {
        QFETCH(QString, address);
        QFETCH(int, exitCode);
        QFETCH(QString, shown);
        for (const bool fromEnvironment : {false, true}) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("HOME"), m_dir.path());
            env.insert(QStringLiteral("PGCONNECT_TIMEOUT"), QStringLiteral("2"));
            QStringList args{QStringLiteral("list")};
            if (fromEnvironment)
                env.insert(QStringLiteral("IDEMPO_LEDGER"), address);
            else
                args = QStringList{QStringLiteral("--ledger"), address} + args;
            for (const bool json : {false, true}) {
                p.setProcessEnvironment(env);
                p.start(QStringLiteral(IDEMPO_CLI_PATH),
                        json ? QStringList{QStringLiteral("--json")} + args : args);
                QVERIFY(p.waitForFinished(30'000));
                const QByteArray output = p.readAllStandardOutput() + p.readAllStandardError();
                QCOMPARE(p.exitCode(), exitCode);
                QVERIFY2(!output.contains("s3cret"), output.constData());
                QVERIFY2(output.contains(shown.toUtf8()), output.constData());
            }
        }
    }

    void defaultLedgerInUserDataDir()
    {
        const Run r = finish(start({QStringLiteral("--json"), QStringLiteral("init")}));
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.json[QStringLiteral("ledger")].toString().startsWith(
                     QStringLiteral("sqlite:") + m_dir.filePath(QStringLiteral("xdg"))),
                 r.out.constData());
        QVERIFY(QFile::exists(m_dir.filePath(QStringLiteral("xdg/idempo/ledger.db"))));
    }

    /// approve / reject: dry run, four-eyes through the ledger's setting, the same submission
    /// twice, the audit log and its verification.
    void guardedApproval()
    {
        const auto S = [](const char *s) { return QString::fromLatin1(s); };
        QCOMPARE(idempo({S("claim"), S("run-1:refund"), S("--payload"),
                         S("{\"amount\":1250,\"currency\":\"EUR\"}"), S("--step"), S("refund"),
                         S("--max-attempts"), S("1"), S("--owner"), S("worker-1")})
                     .exitCode,
                 0);
        QCOMPARE(idempo({S("fail"), S("run-1:refund"), S("--token"), S("1"), S("--class"),
                         S("transient")})
                     .exitCode,
                 0);

        const Run noReason = idempo(
            {S("--json"), S("approve"), S("run-1:refund"), S("--decision"), S("redispatch")});
        QCOMPARE(noReason.exitCode, 65); // a rule of the action, as the exit-code table says
        const Run dry = idempo({S("--json"), S("approve"), S("run-1:refund"), S("--decision"),
                                S("redispatch"), S("--reason"), S("checked"), S("--dry-run")});
        QCOMPARE(dry.exitCode, 0);
        QVERIFY(dry.json.value(S("action")).toString().contains(S("1,250.00 EUR")));
        QCOMPARE(
            idempo({S("--json"), S("audit"), S("list")}).json.value(S("records")).toArray().size(),
            0);

        QCOMPARE(
            idempo({S("four-eyes"), S("--above"), S("1000"), S("--reason"), S("policy")}).exitCode,
            0);
        const QStringList approve = {S("--json"),     S("approve"),       S("run-1:refund"),
                                     S("--decision"), S("redispatch"),    S("--reason"),
                                     S("checked"),    S("--approval-id"), S("ap-7")};
        const Run first = idempo(approve);
        QCOMPARE(first.exitCode, 0);
        QCOMPARE(first.json.value(S("result")).toObject().value(S("status")).toString(),
                 S("pending"));
        const Run again = idempo(approve);
        QCOMPARE(again.json.value(S("result")).toObject().value(S("status")).toString(),
                 S("replayed"));
        // The same operator under another id: four-eyes refuses, exit 65, nothing written.
        QStringList other = approve;
        other.replace(other.indexOf(S("ap-7")), S("ap-8"));
        const Run sameOperator = idempo(other);
        QCOMPARE(sameOperator.exitCode, 65);
        QCOMPARE(sameOperator.json.value(S("error")).toString(), S("refused"));
        QCOMPARE(
            idempo({S("--json"), S("show"), S("run-1:refund")}).json.value(S("state")).toString(),
            S("confirmation_required"));

        const Run reject = idempo(
            {S("--json"), S("reject"), S("run-1:refund"), S("--reason"), S("fraud suspected")});
        QCOMPARE(reject.exitCode, 0);
        QCOMPARE(
            idempo({S("--json"), S("show"), S("run-1:refund")}).json.value(S("state")).toString(),
            S("failed_terminal"));

        const Run list = idempo({S("--json"), S("audit"), S("list")});
        const QJsonArray records = list.json.value(S("records")).toArray();
        QCOMPARE(records.size(), 3);
        QCOMPARE(records.at(2).toObject().value(S("action")).toString(), S("reject"));
        QCOMPARE(records.at(2).toObject().value(S("after")).toObject().value(S("state")).toString(),
                 S("failed_terminal"));
        const Run verify = idempo({S("--json"), S("audit"), S("verify")});
        QCOMPARE(verify.exitCode, 0);
        QCOMPARE(verify.json.value(S("records")).toInt(), 3);
        const Run csv = idempo({S("audit"), S("export"), S("--format"), S("csv")});
        QCOMPARE(csv.exitCode, 0);
        QCOMPARE(csv.out.count('\n'), 4);
        QVERIFY(csv.out.startsWith("seq,at,who,role,action"));
    }

    void reconcileCountsFirstThenActs()
    {
        const auto S = [](const char *s) { return QString::fromLatin1(s); };
        int token = 0;
        for (const char *key : {"run-2:a", "run-2:b"}) {
            QCOMPARE(idempo({S("claim"), S(key), S("--payload"), S("{}")}).exitCode, 0);
            QCOMPARE(idempo({S("fail"), S(key), S("--token"), QString::number(++token),
                             S("--class"), S("unknown_outcome")})
                         .exitCode,
                     0);
        }
        const Run counted = idempo({S("--json"), S("reconcile"), S("--state"), S("unknown_outcome"),
                                    S("--reason"), S("outage")});
        QCOMPARE(counted.exitCode, 0);
        QCOMPARE(counted.json.value(S("preview")).toObject().value(S("count")).toInt(), 2);
        QCOMPARE(idempo({S("--json"), S("show"), S("run-2:a")}).json.value(S("state")).toString(),
                 S("unknown_outcome"));
        const Run done = idempo({S("--json"), S("reconcile"), S("--state"), S("unknown_outcome"),
                                 S("--reason"), S("outage"), S("--yes")});
        QCOMPARE(done.exitCode, 0);
        // No sandbox run sent these to a provider the journals stand for: no lookup for them, so
        // a person decides; they are never dispatched again on the journals' silence.
        const QJsonArray reconciled =
            done.json.value(S("result")).toObject().value(S("reconciled")).toArray();
        QCOMPARE(reconciled.size(), 2);
        QCOMPARE(reconciled.at(0)
                     .toObject()
                     .value(S("evidence"))
                     .toObject()
                     .value(S("status"))
                     .toString(),
                 S("unsupported"));
        QCOMPARE(idempo({S("--json"), S("show"), S("run-2:a")}).json.value(S("state")).toString(),
                 S("confirmation_required"));
        QCOMPARE(idempo({S("--json"), S("claim"), S("run-2:a"), S("--payload"), S("{}")}).exitCode,
                 75);
        QCOMPARE(
            idempo({S("--json"), S("audit"), S("list")}).json.value(S("records")).toArray().size(),
            2);
    }

    void dlqReplayNeedsADryRunsCount()
    {
        const auto S = [](const char *s) { return QString::fromLatin1(s); };
        QCOMPARE(idempo({S("queue"), S("create"), S("steps"), S("--max-reads"), S("1")}).exitCode,
                 0);
        QCOMPARE(idempo({S("claim"), S("run-3:done"), S("--payload"), S("{\"n\":1}")}).exitCode, 0);
        QCOMPARE(idempo({S("complete"), S("run-3:done"), S("--token"), S("1")}).exitCode, 0);
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        for (const char *key : {"run-3:done", "run-3:open"}) {
            const QJsonObject envelope{{S("run_id"), S("run-3")},
                                       {S("step_id"), S("s")},
                                       {S("source_agent"), S("a")},
                                       {S("target_agent"), S("b")},
                                       {S("payload"), QJsonObject{{S("n"), 1}}},
                                       {S("produced_at"), now},
                                       {S("idempotency_key"), S(key)}};
            const QString message =
                QString::fromUtf8(QJsonDocument(envelope).toJson(QJsonDocument::Compact));
            QCOMPARE(idempo({S("queue"), S("send"), S("steps"), S("--message"), message}).exitCode,
                     0);
        }
        for (int i = 0; i < 3; ++i)
            idempo({S("queue"), S("read"), S("steps"), S("--vt"), S("0"), S("--qty"), S("10")});
        const Run dry = idempo({S("--json"), S("dlq"), S("replay"), S("steps"), S("--filter"),
                                S("all"), S("--dry-run")});
        QCOMPARE(dry.exitCode, 0);
        const QJsonObject byClass =
            dry.json.value(S("preview")).toObject().value(S("by_class")).toObject();
        QCOMPARE(byClass.value(S("already_completed")).toInt(), 1);
        QCOMPARE(byClass.value(S("will_execute")).toInt(), 1);
        const Run wrong = idempo({S("--json"), S("dlq"), S("replay"), S("steps"), S("--filter"),
                                  S("all"), S("--confirm"), S("3"), S("--reason"), S("retry")});
        QCOMPARE(wrong.exitCode, 65);
        const Run replay = idempo({S("--json"), S("dlq"), S("replay"), S("--queue"), S("steps"),
                                   S("--filter"), S("all"), S("--confirm"), S("2"), S("--reason"),
                                   S("retry"), S("--rate"), S("1000")});
        QCOMPARE(replay.exitCode, 0);
        QCOMPARE(replay.json.value(S("requeued")).toInt(), 2);
        QCOMPARE(idempo({S("--json"), S("dlq"), S("list"), S("steps")})
                     .json.value(S("messages"))
                     .toArray()
                     .size(),
                 0);
        QCOMPARE(idempo({S("--json"), S("queue"), S("list"), S("steps")})
                     .json.value(S("messages"))
                     .toArray()
                     .size(),
                 2);
        QCOMPARE(idempo({S("--json"), S("audit"), S("verify")}).json.value(S("records")).toInt(),
                 2);
    }

    /// At the shell: the record's projection decides a claim that names none, another one is
    /// refused as such; unknown dead-letter ids are named and refused with nothing audited;
    /// --envelope holds a message to the envelope's rules.
    void projectionsDeadLetterIdsAndEnvelopes()
    {
        const auto S = [](const char *s) { return QString::fromUtf8(s); };
        QCOMPARE(
            idempo({S("claim"), S("run-5:refund"), S("--payload"),
                    S(R"({"amount":10,"at":"09:00"})"), S("--fingerprint-fields"), S("/amount")})
                .exitCode,
            0);
        const Run same = idempo({S("--json"), S("claim"), S("run-5:refund"), S("--payload"),
                                 S(R"({"amount":10,"at":"09:05"})")});
        QCOMPARE(same.json.value(S("outcome")).toString(), S("in_progress"));
        const Run other =
            idempo({S("--json"), S("claim"), S("run-5:refund"), S("--payload"),
                    S(R"({"amount":10,"at":"09:05"})"), S("--fingerprint-fields"), S("/at")});
        QCOMPARE(other.exitCode, 65);
        QCOMPARE(other.json.value(S("error")).toString(), S("projection_mismatch"));
        QVERIFY2(other.json.value(S("message")).toString().contains(S("the projection differs")),
                 other.out.constData());

        QCOMPARE(idempo({S("queue"), S("create"), S("steps")}).exitCode, 0);
        const Run dry =
            idempo({S("dlq"), S("replay"), S("steps"), S("--ids"), S("987654"), S("--dry-run")});
        QCOMPARE(dry.exitCode, 65);
        QVERIFY2(dry.out.contains("987654 is not in the dead-letter queue of steps"),
                 dry.out.constData());
        const Run empty = idempo({S("--json"), S("dlq"), S("replay"), S("steps"), S("--ids"),
                                  S("987654"), S("--confirm"), S("0"), S("--reason"), S("retry")});
        QCOMPARE(empty.exitCode, 65);
        QVERIFY2(empty.json.value(S("message")).toString().contains(S("987654")),
                 empty.out.constData());
        QCOMPARE(
            idempo({S("--json"), S("audit"), S("list")}).json.value(S("records")).toArray().size(),
            0);

        const QString valid = S(
            R"({"run_id":"run-6","step_id":"refund","source_agent":"planner","target_agent":"payments",)"
            R"("payload":{"amount":10},"produced_at":1700000000000,"idempotency_key":"run-6:refund"})");
        QCOMPARE(idempo({S("queue"), S("send"), S("steps"), S("--envelope"), S("--message"), valid})
                     .exitCode,
                 0);
        const Run partial = idempo({S("--json"), S("queue"), S("send"), S("steps"), S("--envelope"),
                                    S("--message"), S(R"({"run_id":"run-6"})")});
        QCOMPARE(partial.exitCode, 65);
        QCOMPARE(partial.json.value(S("error")).toString(), S("invalid_json"));
        QVERIFY2(partial.json.value(S("message")).toString().contains(S("envelope has no step_id")),
                 partial.out.constData());
        QString badKey = valid;
        badKey.replace(S("\"idempotency_key\":\"run-6:refund\""),
                       S("\"idempotency_key\":\"run-6:refund \""));
        const Run key = idempo({S("--json"), S("queue"), S("send"), S("steps"), S("--envelope"),
                                S("--message"), badKey});
        QCOMPARE(key.exitCode, 65);
        QCOMPARE(key.json.value(S("error")).toString(), S("invalid_key"));
        // Without --envelope any JSON is a message.
        QCOMPARE(
            idempo({S("queue"), S("send"), S("steps"), S("--message"), S(R"({"run_id":"run-6"})")})
                .exitCode,
            0);
        QCOMPARE(idempo({S("--json"), S("queue"), S("list"), S("steps")})
                     .json.value(S("messages"))
                     .toArray()
                     .size(),
                 2);
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
