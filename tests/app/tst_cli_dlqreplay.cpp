// SPDX-License-Identifier: Apache-2.0
// Two `idempo dlq replay` processes of one frozen set by one identity, started together, on the
// embedded ledger and, under tests/pg/with-postgres.sh, on PostgreSQL: one replays every message
// once, the other is refused up front (exit 75, in_progress) naming the open replay, who runs it
// and since when, and writes nothing.
#include <set>

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QtTest>

#include "clitestcase.h"

class TestCliDlqReplay final : public CliTestCase
{
    Q_OBJECT

private Q_SLOTS:
    void twoReplaysOfOneSetStartedTogether()
    {
        const auto S = [](const char *s) { return QString::fromLatin1(s); };
        const QString postgres = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
        if (!postgres.isEmpty()) {
            m_ledger = postgres;
            QCOMPARE(idempo({S("init")}).exitCode, 0);
        }
        constexpr int kCount = 30;
        QCOMPARE(idempo({S("queue"), S("create"), S("twice"), S("--max-reads"), S("1")}).exitCode,
                 0);
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        for (int i = 0; i < kCount; ++i) {
            const QJsonObject envelope{{S("run_id"), S("run-26")},
                                       {S("step_id"), S("mail")},
                                       {S("source_agent"), S("planner")},
                                       {S("target_agent"), S("mailer")},
                                       {S("payload"), QJsonObject{{S("n"), i}}},
                                       {S("produced_at"), now},
                                       {S("idempotency_key"), S("run-26:mail:%1").arg(i)}};
            QCOMPARE(
                idempo({S("queue"), S("send"), S("twice"), S("--message"),
                        QString::fromUtf8(QJsonDocument(envelope).toJson(QJsonDocument::Compact))})
                    .exitCode,
                0);
        }
        for (int read = 0; read < 2; ++read) // the second read dead-letters every message
            idempo({S("queue"), S("read"), S("twice"), S("--vt"), S("0"), S("--qty"), S("100")});
        const QJsonArray letters =
            idempo({S("--json"), S("dlq"), S("list"), S("twice"), S("--limit"), S("100")})
                .json.value(S("messages"))
                .toArray();
        QCOMPARE(letters.size(), kCount);

        // 30 messages at 20 a second: the first replay is still running when the second starts.
        const QStringList replay = {S("--ledger"),  m_ledger,
                                    S("--json"),    S("dlq"),
                                    S("replay"),    S("twice"),
                                    S("--filter"),  S("all"),
                                    S("--confirm"), QString::number(kCount),
                                    S("--reason"),  S("mail provider is back"),
                                    S("--rate"),    S("20")};
        QProcess *first = start(replay);
        QProcess *second = start(replay);
        const Run runs[] = {finish(first), finish(second)};
        const Run &done = runs[0].exitCode == 0 ? runs[0] : runs[1];
        const Run &refused = runs[0].exitCode == 0 ? runs[1] : runs[0];
        QVERIFY2(done.exitCode == 0, done.err.constData());
        QCOMPARE(done.json.value(S("requeued")).toInt(), kCount);
        QCOMPARE(done.json.value(S("taken_by_other_replay")).toInt(), 0);
        const QString message = refused.json.value(S("message")).toString();
        const QString replayId = done.json.value(S("replay_id")).toString();
        if (refused.exitCode == 65) {
            // Started after the first had requeued some: the set it was asked to confirm changed,
            // and that refusal comes first; it writes nothing either (the audit below).
            QCOMPARE(refused.json.value(S("error")).toString(), S("refused"));
            QVERIFY2(message.startsWith(S("confirm the count: ")), qPrintable(message));
        } else {
            QVERIFY2(refused.exitCode == 75, refused.out.constData());
            QCOMPARE(refused.json.value(S("error")).toString(), S("in_progress"));
            QVERIFY2(message.contains(S("replay %1 of queue 'twice' is open: ").arg(replayId)),
                     qPrintable(message));
            QVERIFY2(message.contains(QRegularExpression(S(
                         "has run it since \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z"))),
                     qPrintable(message));
            QVERIFY2(message.contains(S("Nothing was written")), qPrintable(message));
        }

        // Each message back on its queue once, carrying the run that requeued it.
        QVERIFY(idempo({S("--json"), S("dlq"), S("list"), S("twice")})
                    .json.value(S("messages"))
                    .toArray()
                    .isEmpty());
        const QJsonArray requeued =
            idempo({S("--json"), S("queue"), S("list"), S("twice"), S("--limit"), S("100")})
                .json.value(S("messages"))
                .toArray();
        QCOMPARE(requeued.size(), kCount);
        const QJsonArray audit =
            idempo({S("--json"), S("audit"), S("list")}).json.value(S("records")).toArray();
        QCOMPARE(audit.size(), 2); // the one replay's begin and finish
        const QJsonObject begin = audit[0].toObject();
        const QJsonObject end = audit[1].toObject();
        QCOMPARE(begin.value(S("action")).toString(), S("dlq_replay"));
        QCOMPARE(end.value(S("action")).toString(), S("dlq_replay_finished"));
        const QJsonObject finished = end.value(S("detail")).toObject();
        QCOMPARE(finished.value(S("requeued")).toInt(), kCount);
        QCOMPARE(finished.value(S("begun_seq")).toInteger(), begin.value(S("seq")).toInteger());
        std::set<qint64> ofMsgIds;
        for (const QJsonValue &m : requeued) {
            const QJsonObject headers = m.toObject().value(S("headers")).toObject();
            const QJsonObject by = headers.value(S("replay")).toObject();
            QCOMPARE(by.value(S("replay_id")).toString(), replayId);
            QCOMPARE(by.value(S("begun_seq")).toInteger(), begin.value(S("seq")).toInteger());
            ofMsgIds.insert(by.value(S("of_msg_id")).toInteger());
        }
        QCOMPARE(int(ofMsgIds.size()), kCount);
        QCOMPARE(idempo({S("--json"), S("audit"), S("verify")}).exitCode, 0);
    }
};

QTEST_GUILESS_MAIN(TestCliDlqReplay)
#include "tst_cli_dlqreplay.moc"
