// SPDX-License-Identifier: Apache-2.0
// What the real `idempo` binary prints: UTF-8 converted once everywhere (help, keys, reasons,
// error details, errors, the log), and stored free text that cannot steer the terminal
// (controls, bidi and other format characters escaped on the terminal and in CSV; exact but
// escaped in JSON), while the stored value stays as it was written.
#include <QJsonArray>
#include <QJsonDocument>
#include <QStringDecoder>
#include <QtTest>

#include "clirunner.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

/// True when `bytes` are valid UTF-8 with no text decoded twice ("â€¦" for "…", "Ã©" for "é").
bool utf8Once(const QByteArray &bytes)
{
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    const QString text = decoder.decode(bytes);
    return !decoder.hasError() && !text.contains(S("â€")) && !text.contains(S("Ã"));
}

// The bytes a terminal would act on.
const QByteArray kEsc("\x1b");
const QByteArray kBel("\x07");
const QByteArray kRightToLeftOverride("\xe2\x80\xae"); // U+202E
const QByteArray kNextLine("\xc2\x85");                // U+0085, a C1 control

} // namespace

class TestCliText final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_cli;

    /// An operation `key` in confirmation_required, its one attempt failed with `detail`
    /// (claimed by another owner, so that this user may decide it).
    void confirmationRequired(const QString &key, const QString &detail)
    {
        QCOMPARE(m_cli
                     .run({S("claim"), key, S("--payload"), S(R"({"amount":5,"currency":"EUR"})"),
                           S("--max-attempts"), S("1"), S("--owner"), S("worker-1")})
                     .exitCode,
                 0);
        QCOMPARE(m_cli
                     .run({S("fail"), key, S("--token"), S("1"), S("--class"), S("transient"),
                           S("--detail"), detail})
                     .exitCode,
                 0);
    }

private Q_SLOTS:
    void init() { QVERIFY(m_cli.useNewLedger(QString::fromLatin1(QTest::currentTestFunction()))); }

    void helpIsUtf8Once_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("locale");
        QTest::newRow("--help") << QStringList{S("--help")} << S("C.UTF-8");
        QTest::newRow("--help, C locale") << QStringList{S("--help")} << S("C");
        QTest::newRow("dlq --help") << QStringList{S("dlq"), S("--help")} << S("C.UTF-8");
    }

    void helpIsUtf8Once()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, locale);
        m_cli.setEnv(S("LC_ALL"), locale);
        const CliRun r = m_cli.runBare(args);
        QCOMPARE(r.exitCode, 0);
        // The dlq synopsis says "--ids ID,…": one U+2026, three bytes.
        QVERIFY2(r.out.contains("--ids ID,\xe2\x80\xa6"), r.out.constData());
        QVERIFY2(utf8Once(r.out), r.out.constData());
        QVERIFY2(r.err.isEmpty(), r.err.constData());
    }

    void helpOnStderrIsUtf8Once()
    {
        const CliRun r = m_cli.runBare({});
        QCOMPARE(r.exitCode, 64);
        QVERIFY(r.err.contains("--ids ID,\xe2\x80\xa6"));
        QVERIFY2(utf8Once(r.err), r.err.constData());
    }

    /// A non-ASCII key, error detail and reason come back byte for byte on every output.
    void nonAsciiTextRoundTrips()
    {
        const QString key = S("заказ-7:оплата…");
        const QString detail = S("délai dépassé → nouvel essai");
        const QString reason = S("fraude soupçonnée ✓");
        confirmationRequired(key, detail);
        const CliRun show = m_cli.run({S("show"), key});
        QCOMPARE(show.exitCode, 0);
        QVERIFY2(show.out.contains(key.toUtf8()) && show.out.contains(detail.toUtf8()),
                 show.out.constData());
        QVERIFY2(utf8Once(show.out), show.out.constData());
        const CliRun json = m_cli.run({S("--json"), S("show"), key});
        QCOMPARE(json.json.value(S("key")).toString(), key);
        QCOMPARE(json.json.value(S("error_detail")).toString(), detail);
        QVERIFY2(json.out.contains(detail.toUtf8()),
                 json.out.constData()); // printable: not \u-escaped

        QCOMPARE(m_cli.run({S("reject"), key, S("--reason"), reason}).exitCode, 0);
        const CliRun history = m_cli.run({S("history"), key});
        QVERIFY2(history.out.contains(reason.toUtf8()) && utf8Once(history.out),
                 history.out.constData());
        const CliRun audit = m_cli.run({S("audit"), S("list")});
        QVERIFY2(audit.out.contains(reason.toUtf8()) && audit.out.contains(key.toUtf8()),
                 audit.out.constData());
        QVERIFY2(utf8Once(audit.out), audit.out.constData());
        const CliRun csv = m_cli.run({S("audit"), S("export"), S("--format"), S("csv")});
        QVERIFY2(csv.out.contains(reason.toUtf8()) && utf8Once(csv.out), csv.out.constData());
        const CliRun records = m_cli.run({S("--json"), S("audit"), S("list")});
        QCOMPARE(records.json.value(S("records"))
                     .toArray()
                     .at(0)
                     .toObject()
                     .value(S("reason"))
                     .toString(),
                 reason);
    }

    /// An error report names the value given, non-ASCII included, on stderr and in JSON.
    void errorsNameNonAsciiValues()
    {
        const QString state = S("état-inconnu");
        const CliRun r = m_cli.run({S("--json"), S("list"), S("--state"), state});
        QCOMPARE(r.exitCode, 64);
        QVERIFY2(r.err.contains(QByteArray(QByteArray("'") + state.toUtf8() + "'")),
                 r.err.constData());
        QVERIFY2(utf8Once(r.err), r.err.constData());
        QVERIFY(r.json.value(S("message")).toString().contains(state));
    }

    /// The engine's log (--verbose) writes a non-ASCII key once-encoded too.
    void logIsUtf8Once()
    {
        const QString key = S("ключ:шаг");
        const CliRun r = m_cli.run({S("--verbose"), S("claim"), key, S("--payload"), S("{}")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.err.contains(key.toUtf8()), r.err.constData());
        QVERIFY2(utf8Once(r.err), r.err.constData());
    }

    /// A reason and an error detail holding ANSI sequences, a bidi override, a C1 control and a
    /// line break: shown escaped by show, history, audit list and the CSV export; exact in JSON.
    void storedTextCannotSteerTheTerminal()
    {
        const QString key = S("run-9:refund");
        const QString detail = S("timeout\x1b]0;pwned\x07 at provider");
        const QString reason = S("ok\x1b[2J") + S("\xe2\x80\xae") + S("gnp.exe") + S("\xc2\x85") +
                               S("\n9  forged record");
        const QByteArray reasonShown = R"(ok\x1b[2J\u202egnp.exe\u0085\n9  forged record)";
        const auto harmless = [](const CliRun &r) {
            return !r.out.contains(kEsc) && !r.out.contains(kBel) &&
                   !r.out.contains(kRightToLeftOverride) && !r.out.contains(kNextLine);
        };
        confirmationRequired(key, detail);
        const CliRun failed = m_cli.run({S("show"), key});
        QVERIFY2(harmless(failed), failed.out.constData());
        QVERIFY2(failed.out.contains(R"(timeout\x1b]0;pwned\x07 at provider)"),
                 failed.out.constData());
        const CliRun failedJson = m_cli.run({S("--json"), S("show"), key});
        QVERIFY2(harmless(failedJson), failedJson.out.constData());
        QCOMPARE(failedJson.json.value(S("error_detail")).toString(), detail);

        QCOMPARE(m_cli.run({S("reject"), key, S("--reason"), reason}).exitCode, 0);
        const CliRun audit = m_cli.run({S("audit"), S("list")});
        QCOMPARE(audit.exitCode, 0);
        QVERIFY2(harmless(audit), audit.out.constData());
        QVERIFY2(audit.out.contains(reasonShown), audit.out.constData());
        QCOMPARE(audit.out.count('\n'), 1); // one record, one line: the line break forged none
        const CliRun history = m_cli.run({S("history"), key});
        QVERIFY2(harmless(history) && history.out.contains(reasonShown), history.out.constData());
        const CliRun show =
            m_cli.run({S("show"), key}); // the rejection's error detail quotes the reason
        QVERIFY2(harmless(show) && show.out.contains(reasonShown), show.out.constData());

        const CliRun csv = m_cli.run({S("audit"), S("export"), S("--format"), S("csv")});
        QCOMPARE(csv.exitCode, 0);
        QVERIFY2(harmless(csv), csv.out.constData());
        QCOMPARE(csv.out.count('\n'), 2); // the header and one record
        QVERIFY2(csv.out.contains(QByteArray("," + reasonShown + ",")), csv.out.constData());

        // JSON: escaped on the wire, exactly the stored value once parsed.
        for (const QStringList &args :
             {QStringList{S("--json"), S("audit"), S("list")},
              QStringList{S("audit"), S("export"), S("--format"), S("json")}}) {
            const CliRun r = m_cli.run(args);
            QCOMPARE(r.exitCode, 0);
            QVERIFY2(harmless(r), r.out.constData());
            QVERIFY2(r.out.contains(R"(\u202e)") && r.out.contains(R"(\u0085)"), r.out.constData());
            QCOMPARE(
                r.json.value(S("records")).toArray().at(0).toObject().value(S("reason")).toString(),
                reason);
        }
        const CliRun events = m_cli.run({S("--json"), S("history"), key});
        QVERIFY2(harmless(events), events.out.constData());
        QVERIFY(events.json.value(S("events"))
                    .toArray()
                    .last()
                    .toObject()
                    .value(S("detail"))
                    .toString()
                    .endsWith(reason));
        // The hash chain covers the value as written: nothing was rewritten on the way in.
        QCOMPARE(m_cli.run({S("audit"), S("verify")}).exitCode, 0);
    }

    /// A refusal quotes what was given escaped, on stderr as in the JSON message.
    void refusalsQuoteGivenTextEscaped()
    {
        const CliRun r = m_cli.run({S("--json"), S("claim"), S("k:1"), S("--payload"), S("{}"),
                                    S("--kind"), S("write\x1b[31m") + S("\xe2\x80\xae")});
        QCOMPARE(r.exitCode, 64);
        QVERIFY2(!r.err.contains(kEsc) && !r.err.contains(kRightToLeftOverride), r.err.constData());
        QVERIFY2(r.err.contains(R"('write\x1b[31m\u202e')"), r.err.constData());
        QVERIFY(!r.out.contains(kEsc) && !r.out.contains(kRightToLeftOverride));
    }

    /// A queue message and a nack detail with controls, as `queue list`, `dlq list` show them.
    void queueTextIsEscaped()
    {
        QCOMPARE(
            m_cli.run({S("queue"), S("create"), S("steps"), S("--max-reads"), S("1")}).exitCode, 0);
        const QString message = S(R"({"note":"a)") + S("\xe2\x80\xae") + S(R"(b"})");
        const CliRun sent =
            m_cli.run({S("--json"), S("queue"), S("send"), S("steps"), S("--message"), message});
        QCOMPARE(sent.exitCode, 0);
        const QString id = QString::number(sent.json.value(S("msg_id")).toInteger());
        const CliRun list = m_cli.run({S("queue"), S("list"), S("steps")});
        QVERIFY2(!list.out.contains(kRightToLeftOverride) && list.out.contains(R"("a\u202eb")"),
                 list.out.constData());
        QCOMPARE(m_cli.run({S("queue"), S("read"), S("steps"), S("--vt"), S("0")}).exitCode, 0);
        QCOMPARE(m_cli
                     .run({S("queue"), S("nack"), S("steps"), id, S("--class"), S("transient"),
                           S("--detail"), S("503\x1b[5m\nretry")})
                     .exitCode,
                 0);
        m_cli.run({S("queue"), S("read"), S("steps"), S("--vt"),
                   S("0")}); // past the limit: dead-lettered
        const CliRun dlq = m_cli.run({S("dlq"), S("list"), S("steps")});
        QCOMPARE(dlq.exitCode, 0);
        QVERIFY2(!dlq.out.contains(kEsc) && !dlq.out.contains(kRightToLeftOverride),
                 dlq.out.constData());
        QVERIFY2(dlq.out.contains(R"(503\x1b[5m\nretry)"), dlq.out.constData());
        const CliRun exact = m_cli.run({S("--json"), S("dlq"), S("list"), S("steps")});
        const QJsonObject letter = exact.json.value(S("messages")).toArray().at(0).toObject();
        QCOMPARE(letter.value(S("last_error_detail")).toString(), S("503\x1b[5m\nretry"));
        QCOMPARE(letter.value(S("message")).toObject().value(S("note")).toString(),
                 S("a\xe2\x80\xae"
                   "b"));
    }

    /// Guarded actions read only the options they declare: Qt warns about nothing on stderr.
    void guardedActionsWarnAboutNothing()
    {
        const QString key = S("run-4:refund");
        confirmationRequired(key, S("timeout"));
        const QList<QStringList> runs = {
            {S("approve"), key, S("--decision"), S("redispatch"), S("--reason"), S("checked"),
             S("--dry-run")},
            {S("reconcile"), key, S("--reason"), S("checked"), S("--dry-run")},
            {S("four-eyes")},
            {S("reject"), key, S("--reason"), S("duplicate"), S("--dry-run")},
            {S("reject"), key, S("--reason"), S("duplicate")},
            {S("audit"), S("list")},
        };
        for (const QStringList &args : runs) {
            const CliRun r = m_cli.run(args);
            QVERIFY2(r.exitCode == 0,
                     qPrintable(args.join(QLatin1Char(' ')) + S(": ") + QString::fromUtf8(r.err)));
            QVERIFY2(r.err.isEmpty(),
                     qPrintable(args.join(QLatin1Char(' ')) + S(": ") + QString::fromUtf8(r.err)));
        }
        QCOMPARE(m_cli.run({S("--json"), S("show"), key}).json.value(S("state")).toString(),
                 S("failed_terminal"));
    }
};

QTEST_GUILESS_MAIN(TestCliText)
#include "tst_cli_text.moc"
