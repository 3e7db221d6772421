// SPDX-License-Identifier: Apache-2.0
// `idempo bulk` through the real binary: the frozen count, the per-operation outcomes and audit
// records, --keys files, progress on stderr and exit codes.
#include <pwd.h>
#include <unistd.h>

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

#include "clitestcase.h"

namespace {

QString S(const char *s)
{
    return QString::fromLatin1(s);
}

/// The identity the embedded ledger records for this process (SqliteLedgerStore::actor()).
QString me()
{
    const passwd *pw = getpwuid(geteuid());
    return pw ? QString::fromLocal8Bit(pw->pw_name) : QStringLiteral("uid:%1").arg(geteuid());
}

} // namespace

class TestCliBulk final : public CliTestCase
{
    Q_OBJECT

    void awaitingApproval(const QString &key, const QString &owner = QStringLiteral("worker-1"))
    {
        QCOMPARE(idempo({S("claim"), key, S("--payload"), S("{\"amount\":10}"), S("--owner"), owner,
                         S("--requires-approval")})
                     .exitCode,
                 75); // in_progress: the new operation awaits approval
    }

    int auditRecords()
    {
        return idempo({S("--json"), S("audit"), S("list"), S("--limit"), S("1000")})
            .json.value(S("records"))
            .toArray()
            .size();
    }

private Q_SLOTS:
    void countedFilterSet()
    {
        for (const char *key : {"run-1:a", "run-1:b", "run-1:c"})
            awaitingApproval(S(key));
        awaitingApproval(S("run-1:mine"), me()); // requested by the operator who approves

        const Run noCount = idempo(
            {S("bulk"), S("approve"), S("--key-prefix"), S("run-1:"), S("--reason"), S("r")});
        QCOMPARE(noCount.exitCode, 64);
        QVERIFY(noCount.err.contains("missing --expect-count N"));

        const Run dry = idempo(
            {S("--json"), S("bulk"), S("approve"), S("--key-prefix"), S("run-1:"), S("--dry-run")});
        QCOMPARE(dry.exitCode, 0);
        QCOMPARE(dry.json.value(S("preview")).toObject().value(S("count")).toInt(), 4);

        const Run wrong =
            idempo({S("--json"), S("bulk"), S("approve"), S("--key-prefix"), S("run-1:"),
                    S("--reason"), S("end of shift"), S("--expect-count"), S("3")});
        QCOMPARE(wrong.exitCode, 65);
        QCOMPARE(wrong.json.value(S("message")).toString(),
                 S("confirm the count: the set holds 4 operations, not 3"));
        QCOMPARE(auditRecords(), 0);

        const Run done = idempo({S("--json"), S("bulk"), S("approve"), S("--key-prefix"),
                                 S("run-1:"), S("--reason"), S("end of shift"), S("--expect-count"),
                                 S("4"), S("--rate"), S("500")});
        QCOMPARE(done.exitCode, 65); // one refused: the others stand
        const QJsonObject result = done.json.value(S("result")).toObject();
        QCOMPARE(result.value(S("applied")).toInt(), 3);
        QCOMPARE(result.value(S("refused")).toInt(), 1);
        const QJsonObject mine = result.value(S("items")).toArray().at(3).toObject();
        QCOMPARE(mine.value(S("key")).toString(), S("run-1:mine"));
        QVERIFY(mine.value(S("detail")).toString().contains(S("requested this operation")));
        QCOMPARE(auditRecords(), 3);
        QCOMPARE(idempo({S("--json"), S("show"), S("run-1:b")}).json.value(S("state")).toString(),
                 S("received"));

        // Frozen again, the filter holds only what is still undecided.
        const Run again = idempo(
            {S("--json"), S("bulk"), S("approve"), S("--key-prefix"), S("run-1:"), S("--dry-run")});
        QCOMPARE(again.json.value(S("preview")).toObject().value(S("count")).toInt(), 1);

        const Run both =
            idempo({S("bulk"), S("reject"), S("--key-prefix"), S("run-1:"), S("--keys"), S("x"),
                    S("--reason"), S("r"), S("--expect-count"), S("1")});
        QCOMPARE(both.exitCode, 64);
        const Run unknown = idempo({S("bulk"), S("delete"), S("--expect-count"), S("1")});
        QCOMPARE(unknown.exitCode, 64);
        QVERIFY(unknown.err.contains("unknown bulk action 'delete'"));
    }

    void keysFileWithProgressAndARunAgain()
    {
        for (int i = 0; i < 26; ++i)
            awaitingApproval(QStringLiteral("run-2:%1").arg(i));
        // The keys file from the dry run's targets: KEY<TAB>VERSION a line.
        const Run dry = idempo(
            {S("--json"), S("bulk"), S("reject"), S("--key-prefix"), S("run-2:"), S("--dry-run")});
        QCOMPARE(dry.exitCode, 0);
        QByteArray lines;
        for (const QJsonValue &t :
             dry.json.value(S("preview")).toObject().value(S("targets")).toArray())
            lines += t.toObject().value(S("key")).toString().toUtf8() + '\t' +
                     QByteArray::number(t.toObject().value(S("version")).toInteger()) + '\n';
        QCOMPARE(lines.count('\n'), 26);
        const QString keys = m_dir.filePath(S("keys.tsv"));
        QFile file(keys);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(lines);
        file.close();

        const QStringList reject = {S("--json"),
                                    S("bulk"),
                                    S("reject"),
                                    S("--keys"),
                                    keys,
                                    S("--reason"),
                                    S("duplicate batch"),
                                    S("--expect-count"),
                                    S("26"),
                                    S("--rate"),
                                    S("500")};
        const Run first = idempo(reject);
        QCOMPARE(first.exitCode, 0);
        QCOMPARE(first.json.value(S("result")).toObject().value(S("applied")).toInt(), 26);
        QVERIFY(first.err.contains("bulk reject: 25 of 26 done"));
        QVERIFY(first.err.contains("bulk reject: 26 of 26 done"));
        QCOMPARE(auditRecords(), 26);

        // The same file again (a run killed and started over): every one was decided already.
        const Run second = idempo(reject);
        QCOMPARE(second.exitCode, 0);
        QCOMPARE(second.json.value(S("result")).toObject().value(S("already_done")).toInt(), 26);
        QCOMPARE(auditRecords(), 26);

        QFile bad(m_dir.filePath(S("bad.tsv")));
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("run-2:0\nrun-2:nope\n");
        bad.close();
        const Run missing = idempo({S("bulk"), S("reject"), S("--keys"), bad.fileName(),
                                    S("--reason"), S("r"), S("--expect-count"), S("2")});
        QCOMPARE(missing.exitCode, 65);
        QVERIFY(missing.err.contains("--keys line 2: no operation 'run-2:nope'"));
        QVERIFY(bad.open(QIODevice::WriteOnly | QIODevice::Truncate));
        bad.write("run-2:0\tseven\n");
        bad.close();
        const Run version = idempo({S("bulk"), S("reject"), S("--keys"), bad.fileName(),
                                    S("--reason"), S("r"), S("--expect-count"), S("1")});
        QCOMPARE(version.exitCode, 64);
        QVERIFY(version.err.contains("the version on --keys line 1"));
        QCOMPARE(auditRecords(), 26);
    }
};

QTEST_GUILESS_MAIN(TestCliBulk)
#include "tst_cli_bulk.moc"
