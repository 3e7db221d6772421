// SPDX-License-Identifier: Apache-2.0
// Guarded actions through the real `idempo` binary: approve / reject with four-eyes and the
// audit log, reconcile, DLQ replay, projections, dead-letter ids and envelopes.
#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "clitestcase.h"

class TestCliGuardedActions final : public CliTestCase
{
    Q_OBJECT

private Q_SLOTS:
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
};

QTEST_GUILESS_MAIN(TestCliGuardedActions)
#include "tst_cli_guardedactions.moc"
