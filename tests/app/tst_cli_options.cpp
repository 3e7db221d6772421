// SPDX-License-Identifier: Apache-2.0
// How the real `idempo` binary takes numbers and refuses input: every whole-number and seconds
// option within its range or refused naming the option, the range and what was given (exit 64,
// nothing written); a missing or blank reason refused by every guarded action with exit 65, as
// the exit-code table says.
#include <QJsonArray>
#include <QProcess>
#include <QtTest>

#include "clirunner.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

} // namespace

class TestCliOptions final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_cli;
    int m_ledgers = 0; ///< one fresh ledger per data row where rows write

    int operationCount() const
    {
        return m_cli.run({S("--json"), S("list")}).json.value(S("operations")).toArray().size();
    }

    /// run-1:refund in confirmation_required: one attempt, failed transiently.
    void needingConfirmation()
    {
        QCOMPARE(m_cli
                     .run({S("claim"), S("run-1:refund"), S("--payload"), S("{}"),
                           S("--max-attempts"), S("1"), S("--owner"), S("worker-1")})
                     .exitCode,
                 0);
        QCOMPARE(m_cli
                     .run({S("fail"), S("run-1:refund"), S("--token"), S("1"), S("--class"),
                           S("transient")})
                     .exitCode,
                 0);
    }

private Q_SLOTS:
    void init() { QVERIFY(m_cli.useNewLedger(QString::fromLatin1(QTest::currentTestFunction()))); }

    void numbersOutOfRangeAreRefused_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message"); ///< what the refusal must say, given value included
        const QStringList claim = {S("claim"), S("k:1"), S("--payload"), S("{}")};
        const QString maxAttempts =
            S("--max-attempts must be a whole number from 1 to 100, not '%1'");
        for (const char *given : {"4294967297", "101", "0", "-1", "1.5", "", " 3", "+3", "0x10",
                                  "3abc", "99999999999999999999"})
            QTest::addRow("--max-attempts '%s'", given)
                << claim + QStringList{S("--max-attempts"), S(given)} << maxAttempts.arg(S(given));
        QTest::newRow("token past 64 bits")
            << QStringList{S("complete"), S("k:1"), S("--token"), S("18446744073709551617")}
            << S("--token must be a whole number of at least 1, not '18446744073709551617'");
        QTest::newRow("token 0") << QStringList{S("heartbeat"), S("k:1"), S("--token"), S("0")}
                                 << S("--token must be a whole number of at least 1, not '0'");
        QTest::newRow("list --limit")
            << QStringList{S("list"), S("--limit"), S("4294967297")}
            << S("--limit must be a whole number from 1 to 10000, not '4294967297'");
        QTest::newRow("list --after")
            << QStringList{S("list"), S("--after"), S("-1")}
            << S("--after must be a whole number of at least 0, not '-1'");
        QTest::newRow("queue --qty")
            << QStringList{S("queue"), S("read"), S("q"), S("--qty"), S("10001")}
            << S("--qty must be a whole number from 1 to 10000, not '10001'");
        QTest::newRow("queue --max-reads")
            << QStringList{S("queue"), S("create"), S("q"), S("--max-reads"), S("2147483648")}
            << S("--max-reads must be a whole number from 1 to 2147483647, not '2147483648'");
        QTest::newRow("MSG_ID")
            << QStringList{S("queue"), S("ack"), S("q"), S("9223372036854775808")}
            << S("MSG_ID must be a whole number of at least 1, not '9223372036854775808'");
        QTest::newRow("audit --limit")
            << QStringList{S("audit"), S("list"), S("--limit"), S("0")}
            << S("--limit must be a whole number from 1 to 10000, not '0'");
        QTest::newRow("dlq --ids")
            << QStringList{S("dlq"),   S("replay"),        S("q"),
                           S("--ids"), S("1,4294967296x"), S("--dry-run")}
            << S("each msg_id of --ids must be a whole number of at least 1, not '4294967296x'");
        QTest::newRow("dlq --confirm")
            << QStringList{S("dlq"),       S("replay"), S("q"),        S("--ids"), S("1"),
                           S("--confirm"), S("1e3"),    S("--reason"), S("r")}
            << S("--confirm must be a whole number of at least 0, not '1e3'");
        QTest::newRow("sandbox --runs")
            << QStringList{S("sandbox"), S("run"), S("--runs"), S("4294967297")}
            << S("--runs must be a whole number from 1 to 1000000, not '4294967297'");
        QTest::newRow("sandbox --workers")
            << QStringList{S("sandbox"), S("run"), S("--workers"), S("65")}
            << S("--workers must be a whole number from 1 to 64, not '65'");
        QTest::newRow("sandbox --seed")
            << QStringList{S("sandbox"), S("run"), S("--seed"), S("-1")}
            << S("--seed must be a whole number of at least 0, not '-1'");
        QTest::newRow("worker --vt-ms")
            << QStringList{S("worker"), S("--vt-ms"), S("4294967396")}
            << S("--vt-ms must be a whole number from 100 to 3600000, not '4294967396'");
        QTest::newRow("worker --max-messages")
            << QStringList{S("worker"), S("--max-messages"), S("-5")}
            << S("--max-messages must be a whole number of at least 0, not '-5'");
        QTest::newRow("bench --cycles")
            << QStringList{S("bench"), S("claim"), S("--cycles"), S("4294967297")}
            << S("--cycles must be a whole number from 1 to 2147483647, not '4294967297'");
        QTest::newRow("bench --messages")
            << QStringList{S("bench"), S("queue"), S("--messages"), S("0")}
            << S("--messages must be a whole number from 1 to 1000000, not '0'");
        QTest::newRow("dlq --rate")
            << QStringList{S("dlq"), S("replay"),    S("q"),      S("--ids"),
                           S("1"),   S("--dry-run"), S("--rate"), S("1e6")}
            << S("--rate must be a number of messages per second from 0.001 to 10000, not '1e6'");
    }

    void numbersOutOfRangeAreRefused()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const CliRun r = m_cli.run(QStringList{S("--json")} + args);
        QCOMPARE(r.exitCode, 64);
        QCOMPARE(r.json.value(S("error")).toString(), S("usage"));
        QVERIFY2(r.json.value(S("message")).toString().startsWith(message),
                 qPrintable(r.json.value(S("message")).toString()));
        QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
        QCOMPARE(operationCount(), 0);
    }

    void secondsOutOfRangeAreRefused_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        const QStringList claim = {S("claim"), S("k:1"), S("--payload"), S("{}")};
        const QString lease =
            S("--lease must be a number of seconds from 0.001 to 86400, not '%1'");
        for (const char *given : {"nan", "NaN", "inf", "-inf", "infinity", "-1", "0", "0.0001",
                                  "86401", "1e300", "1,5", "", "30s"})
            QTest::addRow("claim --lease '%s'", given)
                << claim + QStringList{S("--lease"), S(given)} << lease.arg(S(given));
        QTest::newRow("heartbeat --lease nan")
            << QStringList{S("heartbeat"), S("k:1"), S("--token"), S("1"), S("--lease"), S("nan")}
            << lease.arg(S("nan"));
        const QString retry =
            S("--retry-after must be a number of seconds from 0 to 315360000, not '%1'");
        for (const char *given : {"nan", "inf", "-5", "1e10"})
            QTest::addRow("fail --retry-after '%s'", given)
                << QStringList{S("fail"),    S("k:1"),       S("--token"),       S("1"),
                               S("--class"), S("transient"), S("--retry-after"), S(given)}
                << retry.arg(S(given));
        QTest::newRow("nack --retry-after")
            << QStringList{S("queue"),     S("nack"),          S("q"),   S("1"), S("--class"),
                           S("transient"), S("--retry-after"), S("-0.5")}
            << S("--retry-after must be a number of seconds from 0 to 315360000, not '-0.5'");
        QTest::newRow("send --delay")
            << QStringList{S("queue"), S("send"),    S("q"),  S("--message"),
                           S("{}"),    S("--delay"), S("nan")}
            << S("--delay must be a number of seconds from 0 to 315360000, not 'nan'");
        QTest::newRow("send --delay past ten years")
            << QStringList{S("queue"), S("send"),    S("q"),        S("--message"),
                           S("{}"),    S("--delay"), S("315360001")}
            << S("--delay must be a number of seconds from 0 to 315360000, not '315360001'");
        QTest::newRow("read --vt")
            << QStringList{S("queue"), S("read"), S("q"), S("--vt"), S("inf")}
            << S("--vt must be a number of seconds from 0 to 315360000, not 'inf'");
        QTest::newRow("--retention")
            << QStringList{S("--retention"), S("nan"), S("metrics")}
            << S("--retention must be a number of seconds from 3600 to 315360000, not 'nan'");
    }

    void secondsOutOfRangeAreRefused()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const CliRun r = m_cli.run(QStringList{S("--json")} + args);
        QCOMPARE(r.exitCode, 64);
        QCOMPARE(r.json.value(S("error")).toString(), S("usage"));
        QVERIFY2(r.json.value(S("message")).toString().startsWith(message),
                 qPrintable(r.json.value(S("message")).toString()));
        QVERIFY(!r.err.contains("-9223372036854775808"));
        QCOMPARE(operationCount(), 0);
    }

    /// The ends of each range are taken, and a fraction of a second becomes the nearest
    /// millisecond.
    void numbersAtTheEndsOfTheirRangeAreTaken()
    {
        const CliRun a = m_cli.run({S("--json"), S("claim"), S("k:a"), S("--payload"), S("{}"),
                                    S("--max-attempts"), S("100"), S("--lease"), S("86400")});
        QCOMPARE(a.exitCode, 0);
        QCOMPARE(a.json.value(S("operation")).toObject().value(S("max_attempts")).toInt(), 100);
        const CliRun b = m_cli.run({S("--json"), S("claim"), S("k:b"), S("--payload"), S("{}"),
                                    S("--max-attempts"), S("1"), S("--lease"), S("0.001")});
        QCOMPARE(b.exitCode, 0);
        QCOMPARE(b.json.value(S("operation")).toObject().value(S("max_attempts")).toInt(), 1);
        QCOMPARE(m_cli.run({S("list"), S("--limit"), S("10000")}).exitCode, 0);
        QCOMPARE(
            m_cli.run({S("list"), S("--limit"), S("1"), S("--after"), S("9223372036854775807")})
                .exitCode,
            0);
    }

    /// Every guarded action refuses a missing or blank --reason with exit 65 (a rule of the
    /// action, as --help's table says), names what was given, and writes nothing.
    void missingOrBlankReasonExits65_data()
    {
        QTest::addColumn<QStringList>("args");
        const QString key = S("run-1:refund");
        const QList<QPair<const char *, QStringList>> actions = {
            {"approve", {S("approve"), key, S("--decision"), S("redispatch")}},
            {"approve confirm",
             {S("approve"), key, S("--decision"), S("confirm"), S("--reference"), S("RF-1")}},
            {"reject", {S("reject"), key}},
            {"reconcile", {S("reconcile"), key}},
            {"reconcile --state",
             {S("reconcile"), S("--state"), S("confirmation_required"), S("--yes")}},
            {"dlq replay",
             {S("dlq"), S("replay"), S("steps"), S("--ids"), S("1"), S("--confirm"), S("1")}},
            {"four-eyes", {S("four-eyes"), S("--above"), S("1000")}},
        };
        for (const auto &[name, args] : actions) {
            QTest::addRow("%s, no --reason", name) << args;
            QTest::addRow("%s, blank --reason", name)
                << args + QStringList{S("--reason"), S(" \t ")};
        }
    }

    void missingOrBlankReasonExits65()
    {
        QFETCH(QStringList, args);
        QVERIFY(m_cli.useNewLedger(QStringLiteral("reason-%1").arg(++m_ledgers)));
        needingConfirmation();
        const CliRun r = m_cli.run(QStringList{S("--json")} + args);
        QCOMPARE(r.exitCode, 65);
        QCOMPARE(r.json.value(S("error")).toString(), S("refused"));
        const QString message = r.json.value(S("message")).toString();
        const bool blank = args.contains(S("--reason"));
        QVERIFY2(message.contains(blank ? S("--reason is blank (' \\t ')") : S("missing --reason")),
                 qPrintable(message));
        QCOMPARE(m_cli.run({S("--json"), S("audit"), S("list")})
                     .json.value(S("records"))
                     .toArray()
                     .size(),
                 0);
        QCOMPARE(m_cli.run({S("--json"), S("show"), S("run-1:refund")})
                     .json.value(S("state"))
                     .toString(),
                 S("confirmation_required"));
        QVERIFY(m_cli.run({S("--json"), S("four-eyes")}).json.value(S("four_eyes_above")).isNull());
    }

    /// An option of one value given twice is refused naming both, and nothing is written: the
    /// last would be taken silently. The list options still repeat.
    void aValueThatIsNotUtf8IsNamedByItsOption()
    {
        // The bytes come from the shell: QProcess would encode a QString argument as UTF-8.
        for (const char *spelling :
             {"--where \"$(printf '/a=\\377')\"", "\"--customer=$(printf '\\376')\""}) {
            QProcess p;
            p.start(S("/bin/sh"),
                    QStringList{S("-c"), S("\"$0\" --json list ") + QString::fromLatin1(spelling),
                                CliRunner::program()});
            QVERIFY(p.waitForFinished(60'000));
            const QByteArray out = p.readAllStandardOutput();
            QCOMPARE(p.exitCode(), 65);
            QVERIFY2(out.contains("the value of --where (argument 4) is not valid UTF-8") ||
                         out.contains("the value of --customer (argument 3) is not valid UTF-8"),
                     out.constData());
        }
    }

    void aSingleValueGivenTwiceIsRefused()
    {
        needingConfirmation();
        const CliRun twice = m_cli.run({S("--json"), S("reject"), S("run-1:refund"), S("--reason"),
                                        S("approved by the CFO"), S("--reason"), S("duplicate")});
        QCOMPARE(twice.exitCode, 64);
        QVERIFY2(
            twice.err.contains("--reason is given 2 times ('approved by the CFO', "
                               "'duplicate'): give it once") ||
                twice.json.value(S("message")).toString().contains(S("--reason is given 2 times")),
            twice.err.constData());
        QCOMPARE(m_cli.run({S("--json"), S("show"), S("run-1:refund")})
                     .json.value(S("state"))
                     .toString(),
                 S("confirmation_required"));
        QCOMPARE(m_cli.run({S("list"), S("--where"), S("/a=1"), S("--where"), S("/b=2")}).exitCode,
                 0);
        const CliRun empty = m_cli.run(
            {S("reject"), S("run-1:refund"), S("--reason"), S("dup"), S("--approval-id"), S("")});
        QCOMPARE(empty.exitCode, 64);
        QVERIFY2(empty.err.contains("--approval-id is empty"), empty.err.constData());
        QCOMPARE(m_cli.run({S("--json"), S("audit"), S("list")})
                     .json.value(S("records"))
                     .toArray()
                     .size(),
                 0);
    }

    /// --help promises what the binary does: 65 for a missing or blank reason, 64 for usage.
    void helpStatesTheReasonRule()
    {
        const CliRun r = m_cli.runBare({S("--help")});
        QCOMPARE(r.exitCode, 0);
        const QString help = QString::fromUtf8(r.out).simplified();
        QVERIFY2(
            help.contains(
                S("exit 65 when a rule refuses them (role, four-eyes, a missing or blank reason,")),
            r.out.constData());
        QVERIFY2(help.contains(S("64 usage error: unknown command or option, missing or malformed "
                                 "argument, a number out of its range")),
                 r.out.constData());
    }

    /// A refusal of a word names the word given.
    void refusalsNameWhatWasGiven_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("given");
        QTest::newRow("--kind") << QStringList{S("claim"), S("k:1"),    S("--payload"),
                                               S("{}"),    S("--kind"), S("write")}
                                << S("'write'");
        QTest::newRow("--decision") << QStringList{S("approve"), S("k:1"),      S("--decision"),
                                                   S("maybe"),   S("--reason"), S("r")}
                                    << S("'maybe'");
        QTest::newRow("--format") << QStringList{S("audit"), S("export"), S("--format"), S("xml")}
                                  << S("'xml'");
        QTest::newRow("--state") << QStringList{S("list"), S("--state"), S("done")} << S("'done'");
        QTest::newRow("--class") << QStringList{S("fail"), S("k:1"),     S("--token"),
                                                S("1"),    S("--class"), S("oops")}
                                 << S("'oops'");
        QTest::newRow("--scenario")
            << QStringList{S("sandbox"), S("run"), S("--scenario"), S("nope")} << S("'nope'");
        QTest::newRow("command") << QStringList{S("frobnicate")} << S("'frobnicate'");
        QTest::newRow("argument") << QStringList{S("metrics"), S("extra")} << S("'extra'");
    }

    void refusalsNameWhatWasGiven()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, given);
        const CliRun r = m_cli.run(QStringList{S("--json")} + args);
        QCOMPARE(r.exitCode, 64);
        QVERIFY2(r.json.value(S("message")).toString().contains(given),
                 qPrintable(r.json.value(S("message")).toString()));
    }
};

QTEST_GUILESS_MAIN(TestCliOptions)
#include "tst_cli_options.moc"
