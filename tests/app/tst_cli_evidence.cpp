// SPDX-License-Identifier: Apache-2.0
// The audit log's filters and the evidence pack through the real `idempo` binary: `audit list`
// filtered in the ledger, `evidence KEY -o FILE`, `evidence verify FILE` on the pack as written
// and on tampered copies, which it refuses naming the record.
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "clitestcase.h"

namespace {

QString S(const char *s)
{
    return QString::fromLatin1(s);
}

} // namespace

class TestCliEvidence final : public CliTestCase
{
    Q_OBJECT

private Q_SLOTS:
    void auditListFiltersInTheLedger();
    void evidencePackExportsAndVerifies();
    void tamperedPackIsRefusedNamingTheRecord();
    void badArgumentsAreNamed();
    void aFailedWriteIsNotReportedWritten();
    void whatAReaderSeesIsWhatWasVerified();
    void anotherLedgerIsNamedAsSuch();

private:
    /// Records 1 (reject run-1:refund), 2 (four-eyes setting), 3 (reject run-2:refund).
    void threeRecords();
    QJsonObject pack(const QString &path);
    void write(const QString &path, const QJsonObject &pack);
    /// `evidence verify` on `tampered` exits 65 saying `why`, at audit record `seq` (0: none).
    void expectRefused(const QJsonObject &tampered, const char *why, int seq);
};

void TestCliEvidence::threeRecords()
{
    const auto rejected = [this](const QString &key) {
        const Run claim =
            idempo({S("--json"), S("claim"), key, S("--payload"),
                    S("{\"amount\":1250,\"currency\":\"EUR\"}"), S("--step"), S("refund"),
                    S("--max-attempts"), S("1"), S("--owner"), S("worker-1")});
        QCOMPARE(claim.exitCode, 0);
        const QString token = QString::number(claim.json.value(S("fencing_token")).toInteger());
        QCOMPARE(
            idempo({S("fail"), key, S("--token"), token, S("--class"), S("transient")}).exitCode,
            0);
        QCOMPARE(idempo({S("reject"), key, S("--reason"), S("customer withdrew")}).exitCode, 0);
    };
    rejected(S("run-1:refund"));
    QCOMPARE(
        idempo({S("four-eyes"), S("--above"), S("100000"), S("--reason"), S("policy")}).exitCode,
        0);
    rejected(S("run-2:refund"));
}

QJsonObject TestCliEvidence::pack(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

void TestCliEvidence::write(const QString &path, const QJsonObject &pack)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(QJsonDocument(pack).toJson());
}

void TestCliEvidence::expectRefused(const QJsonObject &tampered, const char *why, int seq)
{
    const QString copy = m_dir.filePath(S("tampered.json"));
    write(copy, tampered);
    const Run r = idempo({S("--json"), S("evidence"), S("verify"), copy});
    QCOMPARE(r.exitCode, 65);
    QCOMPARE(r.json.value(S("ok")).toBool(), false);
    const QString problem = r.json.value(S("problem")).toString();
    QVERIFY2(problem.contains(QLatin1String(why)), qPrintable(problem));
    QCOMPARE(r.json.value(S("bad_seq")).toInt(), seq);
}

void TestCliEvidence::auditListFiltersInTheLedger()
{
    threeRecords();
    const auto listed = [this](QStringList filters) {
        QList<int> seqs;
        const Run r = idempo(QStringList{S("--json"), S("audit"), S("list")} + filters);
        for (const QJsonValue &v : r.json.value(S("records")).toArray())
            seqs << v.toObject().value(S("seq")).toInt();
        return seqs;
    };
    QCOMPARE(listed({}), (QList<int>{1, 2, 3}));
    QCOMPARE(listed({S("--operation"), S("run-1:refund")}), (QList<int>{1}));
    QCOMPARE(listed({S("--target"), S("default/run-2:refund")}), (QList<int>{3}));
    QCOMPARE(listed({S("--action"), S("setting")}), (QList<int>{2}));
    QCOMPARE(listed({S("--namespace"), S("default")}), (QList<int>{1, 3}));
    QCOMPARE(listed({S("--namespace"), S("other")}), (QList<int>{}));
    QCOMPARE(listed({S("--actor"), S("nobody")}), (QList<int>{}));
    QCOMPARE(listed({S("--newest-first"), S("--limit"), S("2")}), (QList<int>{3, 2}));
    QCOMPARE(listed({S("--newest-first"), S("--after"), S("2")}), (QList<int>{1}));
    QCOMPARE(listed({S("--since"), S("2000-01-01T00:00:00Z")}), (QList<int>{1, 2, 3}));
    QCOMPARE(listed({S("--until"), S("2000-01-01T00:00:00Z")}), (QList<int>{}));
    const Run page = idempo(
        {S("--json"), S("audit"), S("list"), S("--action"), S("reject"), S("--limit"), S("1")});
    QCOMPARE(page.json.value(S("next_after")).toInt(), 1);
}

void TestCliEvidence::evidencePackExportsAndVerifies()
{
    threeRecords();
    const QString file = m_dir.filePath(S("run-1.json"));
    const Run exported = idempo({S("--json"), S("evidence"), S("run-1:refund"), S("-o"), file});
    QCOMPARE(exported.exitCode, 0);
    QCOMPARE(exported.json.value(S("audit_records")).toInt(), 1);
    QCOMPARE(exported.json.value(S("head")).toObject().value(S("seq")).toInt(), 3);

    const QJsonObject p = pack(file);
    QCOMPARE(p.value(S("format")).toString(), S("idempo-evidence-pack"));
    QCOMPARE(p.value(S("operation")).toObject().value(S("state")).toString(), S("failed_terminal"));
    QVERIFY(p.value(S("history")).toArray().size() >= 3);
    QCOMPARE(p.value(S("approvals")).toArray().size(), 1);
    QCOMPARE(p.value(S("approvals")).toArray().at(0).toObject().value(S("decision")).toString(),
             S("reject"));
    QVERIFY(p.contains(S("run")));
    const QJsonArray records = p.value(S("audit_records")).toArray();
    QCOMPARE(records.size(), 1);
    QCOMPARE(records.at(0).toObject().value(S("target")).toString(), S("default/run-1:refund"));
    // The operation's first record links to no earlier one of it; the two records after it
    // target others and stay out of the pack.
    QCOMPARE(records.at(0).toObject().value(S("target_prev_hash")).toString(),
             QString(64, QLatin1Char('0')));
    QCOMPARE(p.value(S("chain")).toObject().value(S("links")).toArray().size(), 0);

    const Run verified = idempo({S("--json"), S("evidence"), S("verify"), file});
    QCOMPARE(verified.exitCode, 0);
    QCOMPARE(verified.json.value(S("ok")).toBool(), true);
    QCOMPARE(verified.json.value(S("records")).toInt(), 1);
    const Run human = idempo({S("evidence"), S("verify"), file});
    QVERIFY2(human.out.contains("evidence pack intact: 1 audit record(s) of default/run-1:refund"),
             human.out.constData());

    // The head record itself: no link after it, its hash is the head's.
    const QString second = m_dir.filePath(S("run-2.json"));
    QCOMPARE(idempo({S("evidence"), S("run-2:refund"), S("-o"), second}).exitCode, 0);
    QCOMPARE(pack(second).value(S("chain")).toObject().value(S("links")).toArray().size(), 0);
    QCOMPARE(idempo({S("evidence"), S("verify"), second}).exitCode, 0);

    // Without -o the pack goes to stdout, and verifies the same.
    const Run out = idempo({S("evidence"), S("run-1:refund")});
    QCOMPARE(out.exitCode, 0);
    QCOMPARE(QJsonDocument::fromJson(out.out).object().value(S("key")).toString(),
             S("run-1:refund"));
}

void TestCliEvidence::tamperedPackIsRefusedNamingTheRecord()
{
    threeRecords();
    const QString file = m_dir.filePath(S("pack.json"));
    QCOMPARE(idempo({S("evidence"), S("run-1:refund"), S("-o"), file}).exitCode, 0);
    const QJsonObject original = pack(file);
    // An edited reason: the record no longer matches its hash.
    QJsonObject edited = original;
    QJsonArray records = edited.value(S("audit_records")).toArray();
    QJsonObject record = records.at(0).toObject();
    record.insert(S("reason"), S("approved by the customer"));
    records.replace(0, record);
    edited.insert(S("audit_records"), records);
    expectRefused(edited, "audit record 1 does not match its hash", 1);

    // Its target link rewritten, or dropped to pass for a record older than links: either
    // way it no longer matches its own hash.
    for (const bool dropped : {false, true}) {
        QJsonObject relinked = original;
        records = original.value(S("audit_records")).toArray();
        record = records.at(0).toObject();
        if (dropped)
            record.remove(S("target_prev_hash"));
        else
            record.insert(S("target_prev_hash"), QString(64, QLatin1Char('a')));
        records.replace(0, record);
        relinked.insert(S("audit_records"), records);
        expectRefused(relinked, "audit record 1 does not match its hash", 1);
    }

    // Another target's record offered as a chain link: the operation's linked records need
    // none, and a record the verifier cannot place is refused, not ignored.
    const QString other = m_dir.filePath(S("run-2.json"));
    QCOMPARE(idempo({S("evidence"), S("run-2:refund"), S("-o"), other}).exitCode, 0);
    QJsonObject padded = original;
    QJsonObject chain = original.value(S("chain")).toObject();
    chain.insert(S("links"), pack(other).value(S("audit_records")).toArray());
    padded.insert(S("chain"), chain);
    expectRefused(padded, "the operation's records are all linked to one another and need none", 0);

    // Another operation's record slipped in.
    QJsonObject foreign = original;
    record = original.value(S("audit_records")).toArray().at(0).toObject();
    record.insert(S("target"), S("default/run-2:refund"));
    foreign.insert(S("audit_records"), QJsonArray{record});
    expectRefused(foreign, "targets default/run-2:refund", 1);

    // Not a pack at all.
    expectRefused(QJsonObject{{S("hello"), 1}}, "not an evidence pack", 0);
}

void TestCliEvidence::badArgumentsAreNamed()
{
    threeRecords();
    const Run unknown = idempo({S("--json"), S("evidence"), S("run-9:none")});
    QVERIFY(unknown.exitCode != 0);
    QCOMPARE(unknown.json.value(S("error")).toString(), S("not_found"));
    const Run since = idempo({S("audit"), S("list"), S("--since"), S("yesterday")});
    QCOMPARE(since.exitCode, 64);
    QVERIFY2(since.err.contains("--since takes an ISO 8601 time"), since.err.constData());
    const Run both = idempo({S("audit"), S("list"), S("--operation"), S("run-1:refund"),
                             S("--target"), S("queue:payments")});
    QCOMPARE(both.exitCode, 64);
    const Run missing = idempo({S("evidence"), S("verify"), m_dir.filePath(S("absent.json"))});
    QVERIFY(missing.exitCode != 0);
    QVERIFY2(missing.err.contains("cannot read evidence pack"), missing.err.constData());
    const Run noFile = idempo({S("evidence"), S("verify")});
    QCOMPARE(noFile.exitCode, 64);
    QVERIFY2(noFile.err.contains("evidence verify FILE"), noFile.err.constData());
}

void TestCliEvidence::aFailedWriteIsNotReportedWritten()
{
    threeRecords();
    // /dev/full takes the open and fails every write (ENOSPC): a full disk.
    const Run full = idempo({S("evidence"), S("run-1:refund"), S("-o"), S("/dev/full")});
    QCOMPARE(full.exitCode, 69);
    QVERIFY2(full.err.contains("cannot write evidence pack"), full.err.constData());
    QVERIFY(!full.out.contains("written"));
    QVERIFY(QFileInfo(S("/dev/full")).exists() && !QFileInfo(S("/dev/full")).isFile());
    // `-o -` is standard output, not a file named '-'.
    const Run out = idempo({S("evidence"), S("run-1:refund"), S("-o"), S("-")});
    QCOMPARE(out.exitCode, 0);
    QVERIFY(QJsonDocument::fromJson(out.out).object().contains(S("audit_records")));
    QVERIFY(!QFileInfo::exists(S("-")));
}

void TestCliEvidence::whatAReaderSeesIsWhatWasVerified()
{
    threeRecords();
    const QString file = m_dir.filePath(S("pack.json"));
    QCOMPARE(idempo({S("evidence"), S("run-1:refund"), S("-o"), file}).exitCode, 0);
    // A member named twice: an editor shows the first, a parser keeps the last.
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QByteArray text = f.readAll();
    f.close();
    const QByteArray reason = "\"reason\": \"customer withdrew\"";
    QVERIFY(text.contains(reason));
    const QByteArray first = QByteArray("\"reason\": \"approved by the CFO\",\n      ") + reason;
    text.replace(reason, first);
    const QString twice = m_dir.filePath(S("twice.json"));
    QFile out(twice);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(text);
    out.close();
    const Run duplicated = idempo({S("--json"), S("evidence"), S("verify"), twice});
    QCOMPARE(duplicated.exitCode, 65);
    QVERIFY2(duplicated.json.value(S("problem")).toString().contains(S("is named twice")),
             duplicated.out.constData());

    // Members no check covers, in a record and in the pack; a readable time that is not at_ms.
    const QJsonObject original = pack(file);
    QJsonObject noted = original;
    QJsonArray records = original.value(S("audit_records")).toArray();
    QJsonObject record = records.at(0).toObject();
    record.insert(S("note"), S("approved by the CFO"));
    records.replace(0, record);
    noted.insert(S("audit_records"), records);
    expectRefused(noted, "has a member \"note\" that no check covers", 0);
    QJsonObject topLevel = original;
    topLevel.insert(S("note"), S("approved by the CFO"));
    expectRefused(topLevel, "has a member \"note\" that no check covers", 0);
    record = original.value(S("audit_records")).toArray().at(0).toObject();
    record.insert(S("at"), S("2020-01-01T00:00:00.000Z"));
    records.replace(0, record);
    QJsonObject retimed = original;
    retimed.insert(S("audit_records"), records);
    expectRefused(retimed, "\"at\" is not its at_ms", 0);
}

void TestCliEvidence::anotherLedgerIsNamedAsSuch()
{
    threeRecords();
    const QString file = m_dir.filePath(S("pack.json"));
    QCOMPARE(idempo({S("evidence"), S("run-1:refund"), S("-o"), file}).exitCode, 0);
    const QString other = S("sqlite:") + m_dir.filePath(S("other.db"));
    QCOMPARE(finish(start({S("--ledger"), other, S("init")})).exitCode, 0);
    const Run elsewhere = finish(start({S("--json"), S("--ledger"), other, S("evidence"),
                                        S("verify"), file, S("--against-ledger")}));
    QCOMPARE(elsewhere.exitCode, 65);
    QVERIFY2(
        elsewhere.json.value(S("problem")).toString().contains(S("the pack is another ledger's")),
        elsewhere.out.constData());
    // On its own ledger, a record appended since is said first, loudly.
    QCOMPARE(idempo({S("four-eyes"), S("--above"), S("off"), S("--reason"), S("policy")}).exitCode,
             0);
    const Run same = idempo({S("evidence"), S("verify"), file, S("--against-ledger")});
    QCOMPARE(same.exitCode, 0);
    QVERIFY2(!same.out.contains("NEWER RECORDS"), same.out.constData());
}

QTEST_GUILESS_MAIN(TestCliEvidence)
#include "tst_cli_evidence.moc"
