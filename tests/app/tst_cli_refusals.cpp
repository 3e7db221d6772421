// SPDX-License-Identifier: Apache-2.0
// What the CLI refuses before it acts, and what it says, through the real binary on either
// store (SQLite; PostgreSQL under tests/pg/with-postgres.sh): keys quoted as stored in a
// decision's sentence, malformed --rates / --above and empty search values as usage errors
// (exit 64) judged before the ledger is opened, bulk sets that must be named (--all), dry runs
// that suggest only what would be taken, a four-eyes bulk run again by the same approver, a
// bulk run again on bare keys, and evidence packs with records removed or the operation forged.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QUrl>
#include <QtTest>

#include "clirunner.h"
#include "pgconnection.h"

namespace {

QString S(const char *s)
{
    return QString::fromUtf8(s);
}

/// A ledger no command may reach: a check made before opening it answers anyway.
const char kUnreachable[] = "postgresql://idempo-test.invalid/none?connect_timeout=1";

} // namespace

class TestCliRefusals final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_cli;
    /// Who approves and rejects: on PostgreSQL a login of its own (identity is the login, and
    /// the one that claimed may not approve); on SQLite the same runner (the claims name
    /// worker-1).
    CliRunner m_approverRunner;
    CliRunner *m_approver = &m_cli;

    CliRun idempo(const QStringList &args) { return m_cli.run(args); }
    CliRun decide(const QStringList &args) { return m_approver->run(args); }

    /// An operation awaiting approval, claimed by worker-1, worth `value`.
    void awaiting(const QString &key, const QString &value = S("5.00 EUR"))
    {
        const CliRun r = idempo({S("claim"), key, S("--payload"), S("{}"), S("--owner"),
                                 S("worker-1"), S("--requires-approval"), S("--value"), value});
        QCOMPARE(r.exitCode, 75); // in_progress: it waits for approval
    }

    QJsonObject packOf(const QString &key)
    {
        const QString file = m_cli.filePath(S("pack.json"));
        const CliRun r = idempo({S("evidence"), key, S("-o"), file});
        if (r.exitCode != 0)
            qWarning("%s", r.err.constData());
        QFile f(file);
        if (!f.open(QIODevice::ReadOnly))
            return {};
        return QJsonDocument::fromJson(f.readAll()).object();
    }

    CliRun verify(const QJsonObject &pack)
    {
        const QString file = m_cli.filePath(S("tampered.json"));
        QFile f(file);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            return {};
        f.write(QJsonDocument(pack).toJson());
        f.close();
        return m_cli.runBare({S("--json"), S("evidence"), S("verify"), file});
    }

    CliRun verifyAgainstLedger(const QJsonObject &pack)
    {
        const QString file = m_cli.filePath(S("checked.json"));
        QFile f(file);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            return {};
        f.write(QJsonDocument(pack).toJson());
        f.close();
        return idempo({S("--json"), S("evidence"), S("verify"), file, S("--against-ledger")});
    }

    void expectRefused(const QJsonObject &pack, const char *why)
    {
        const CliRun r = verify(pack);
        QCOMPARE(r.exitCode, 65);
        const QString problem = r.json.value(S("problem")).toString();
        QVERIFY2(problem.contains(QString::fromUtf8(why)), qPrintable(problem));
    }

private Q_SLOTS:
    void initTestCase()
    {
        const QString url = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
        if (url.isEmpty()) {
            QVERIFY(m_cli.useNewLedger(S("refusals")));
            return;
        }
        m_cli.useLedger(url);
        QCOMPARE(m_cli.run({S("init")}).exitCode, 0);
        idempo::PgConnection(url.toStdString())
            .execScript("create the approver",
                        "DROP ROLE IF EXISTS refusals_approver; CREATE ROLE refusals_approver "
                        "LOGIN PASSWORD 'approver-secret' IN ROLE idempo_approver;");
        QFile passwords(m_approverRunner.filePath(S("pgpass")));
        QVERIFY(passwords.open(QIODevice::WriteOnly));
        passwords.write("*:*:*:refusals_approver:approver-secret\n");
        passwords.close();
        QVERIFY(passwords.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        m_approverRunner.setEnv(S("PGPASSFILE"), passwords.fileName());
        QUrl approver(url);
        approver.setUserName(S("refusals_approver"));
        m_approverRunner.useLedger(approver.toString(QUrl::FullyEncoded));
        m_approver = &m_approverRunner;
    }

    void keysAreQuotedAsStored()
    {
        awaiting(S("acct_9_x:send_invoice"));
        const CliRun r = decide({S("reject"), S("acct_9_x:send_invoice"), S("--reason"),
                                 S("duplicate"), S("--dry-run")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.startsWith("Reject acct_9_x:send_invoice of 5.00 EUR: it will not be "
                                  "executed"),
                 r.out.constData());
        // A step id is read as words; the key it belongs to is not touched.
        const CliRun stepped =
            idempo({S("claim"), S("acct_9_y:x"), S("--payload"), S("{}"), S("--owner"),
                    S("worker-1"), S("--requires-approval"), S("--step"), S("send_invoice")});
        QCOMPARE(stepped.exitCode, 75);
        const CliRun step = decide({S("approve"), S("acct_9_y:x"), S("--decision"), S("redispatch"),
                                    S("--reason"), S("ok"), S("--dry-run")});
        QVERIFY2(step.out.startsWith("Approve send invoice: dispatch it again"),
                 step.out.constData());
    }

    void malformedRatesAndThresholdAreUsageErrors_data()
    {
        QTest::addColumn<QString>("option");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("named");
        QTest::newRow("exponent") << S("rates") << S("EUR USD=1e3") << S("'USD=1e3'");
        QTest::newRow("negative rate") << S("rates") << S("EUR USD=-1") << S("'USD=-1'");
        QTest::newRow("short code") << S("rates") << S("EUR US=0.92") << S("'US=0.92'");
        QTest::newRow("lowercase") << S("rates") << S("eur usd=0.92") << S("'eur'");
        QTest::newRow("ten decimals")
            << S("rates") << S("EUR USD=0.1234567890") << S("'USD=0.1234567890'");
        QTest::newRow("two spaces")
            << S("rates") << S("EUR  USD=0.92") << S("more than one space before 'USD=0.92'");
        QTest::newRow("semicolon")
            << S("rates") << S("EUR USD=0.92;JPY=1") << S("not ';': 'USD=0.92;JPY=1'");
        QTest::newRow("both") << S("rates") << S("EUR  USD=0.92;JPY=1")
                              << S("more than one space before 'USD=0.92;JPY=1'");
        QTest::newRow("trailing space") << S("rates") << S("EUR USD=1 ") << S("a space at the end");
        QTest::newRow("zero rate") << S("rates") << S("EUR USD=0") << S("above zero");
        QTest::newRow("twice") << S("rates") << S("EUR USD=1 USD=2") << S("names USD twice");
        QTest::newRow("empty") << S("rates") << S("") << S("--rates needs a value");
        QTest::newRow("sign") << S("above") << S("-5") << S("takes no sign");
        QTest::newRow("huge") << S("above") << S("1e400") << S("not '1e400'");
        QTest::newRow("decimals") << S("above") << S("1000.001")
                                  << S("at most 2 decimals, not '1000.001'");
        QTest::newRow("digits") << S("above") << S("1234567890123456")
                                << S("at most 15 digits, not '1234567890123456'");
        QTest::newRow("word") << S("above") << S("lots") << S("not 'lots'");
    }

    void malformedRatesAndThresholdAreUsageErrors()
    {
        QFETCH(QString, option);
        QFETCH(QString, value);
        QFETCH(QString, named);
        const QStringList args{S("four-eyes"), S("--") + option, value, S("--reason"), S("p")};
        for (const bool reachable : {true, false}) {
            CliRunner unreachable;
            unreachable.useLedger(S(kUnreachable));
            const CliRun r = reachable ? idempo(args) : unreachable.run(args);
            QCOMPARE(r.exitCode, 64);
            QVERIFY2(r.err.contains(named.toUtf8()), r.err.constData());
        }
        const CliRun shown = idempo({S("--json"), S("four-eyes")});
        QCOMPARE(shown.exitCode, 0);
        QVERIFY(shown.json.value(S("reference_rates")).isNull());
    }

    void referenceWithoutRatesIsNoted()
    {
        const CliRun r = idempo({S("four-eyes"), S("--rates"), S("EUR"), S("--reason"), S("p")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.contains("note: no rates besides EUR: every value in another currency "
                                "needs two approvers"),
                 r.out.constData());
        QCOMPARE(idempo({S("four-eyes"), S("--rates"), S("off"), S("--reason"), S("p")}).exitCode,
                 0);
    }

    void emptySearchValuesAreRefused_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("option");
        QTest::newRow("list customer")
            << QStringList{S("list"), S("--customer"), S("")} << S("--customer");
        QTest::newRow("list run") << QStringList{S("list"), S("--run"), S("")} << S("--run");
        QTest::newRow("list prefix")
            << QStringList{S("list"), S("--key-prefix"), S("")} << S("--key-prefix");
        QTest::newRow("audit actor")
            << QStringList{S("audit"), S("list"), S("--actor"), S("")} << S("--actor");
        QTest::newRow("audit action")
            << QStringList{S("audit"), S("list"), S("--action"), S("")} << S("--action");
        QTest::newRow("audit target")
            << QStringList{S("audit"), S("list"), S("--target"), S("")} << S("--target");
        QTest::newRow("bulk run") << QStringList{S("bulk"), S("reject"), S("--run"), S(""),
                                                 S("--dry-run")}
                                  << S("--run");
        QTest::newRow("reconcile prefix")
            << QStringList{S("reconcile"), S("--key-prefix"), S(""), S("--reason"),
                           S("r"),         S("--dry-run")}
            << S("--key-prefix");
    }

    void emptySearchValuesAreRefused()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, option);
        awaiting(S("c-1:refund"));
        const CliRun r = idempo(args);
        QCOMPARE(r.exitCode, 64);
        QVERIFY2(r.err.contains((option + S(" is empty")).toUtf8()), r.err.constData());
        QVERIFY(r.out.isEmpty()); // nothing listed
    }

    void bulkSetMustBeNamed()
    {
        awaiting(S("all-1:refund"));
        const CliRun none =
            idempo({S("bulk"), S("approve"), S("--expect-count"), S("1"), S("--reason"), S("x")});
        QCOMPARE(none.exitCode, 64);
        QVERIFY2(none.err.contains("or --all for every operation of namespace 'default'"),
                 none.err.constData());
        const CliRun mixed =
            idempo({S("bulk"), S("approve"), S("--all"), S("--run"), S("r"), S("--dry-run")});
        QCOMPARE(mixed.exitCode, 64);
        const CliRun all =
            idempo({S("--json"), S("bulk"), S("approve"), S("--all"), S("--dry-run")});
        QCOMPARE(all.exitCode, 0);
        QVERIFY(all.json.value(S("preview")).toObject().value(S("count")).toInt() >= 1);
        const CliRun help = m_cli.runBare({S("bulk"), S("--help")});
        QVERIFY2(help.out.contains("--all"), help.out.constData());
    }

    void dryRunSuggestsOnlyWhatIsTaken()
    {
        const CliRun empty =
            idempo({S("bulk"), S("reconcile"), S("--run"), S("no-such-run"), S("--dry-run")});
        QCOMPARE(empty.exitCode, 0);
        QVERIFY2(empty.out.contains("the set is empty, nothing to reconcile"),
                 empty.out.constData());
        QVERIFY(!empty.out.contains("--expect-count"));

        // Bare KEY lines of operations in a state approve does not take.
        for (const char *key : {"bare-1:a", "bare-1:b"})
            QCOMPARE(idempo({S("claim"), S(key), S("--payload"), S("{}"), S("--owner"), S("w")})
                         .exitCode,
                     0);
        const QString keys = m_cli.filePath(S("keys.txt"));
        QFile f(keys);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("bare-1:a\nbare-1:b\n");
        f.close();
        const CliRun bare = idempo({S("bulk"), S("approve"), S("--keys"), keys, S("--dry-run")});
        QCOMPARE(bare.exitCode, 0);
        QVERIFY2(bare.out.contains("(2 in a state approve does not take, dispatching: they will "
                                   "be refused)"),
                 bare.out.constData());
        QVERIFY2(bare.out.contains("nothing to act on"), bare.out.constData());
        QVERIFY(!bare.out.contains("--expect-count"));
        const CliRun json =
            idempo({S("--json"), S("bulk"), S("approve"), S("--keys"), keys, S("--dry-run")});
        QCOMPARE(json.json.value(S("preview")).toObject().value(S("not_taken")).toInt(), 2);

        // A directory is not a keys file.
        const CliRun dir =
            idempo({S("bulk"), S("approve"), S("--keys"), m_cli.filePath(S("")), S("--dry-run")});
        QCOMPARE(dir.exitCode, 64);
        QVERIFY2(dir.err.contains("cannot read"), dir.err.constData());
    }

    void dlqReplayDryRunSuggestsOnlyWhatIsTaken()
    {
        QCOMPARE(idempo({S("queue"), S("create"), S("refusals")}).exitCode, 0);
        for (const char *filter : {"key_prefix=", "error_class="}) {
            const CliRun r = idempo(
                {S("dlq"), S("replay"), S("refusals"), S("--filter"), S(filter), S("--dry-run")});
            QCOMPARE(r.exitCode, 64);
            QVERIFY2(r.err.contains("has no value after '='"), r.err.constData());
        }
        const CliRun empty =
            idempo({S("dlq"), S("replay"), S("refusals"), S("--filter"), S("all"), S("--dry-run")});
        QCOMPARE(empty.exitCode, 65);
        QVERIFY2(empty.out.contains("the replay set is empty"), empty.out.constData());
        QVERIFY2(!empty.out.contains("--confirm"), empty.out.constData());
    }

    void fourEyesBulkAgainIsPending()
    {
        QCOMPARE(
            idempo({S("four-eyes"), S("--above"), S("1.00"), S("--reason"), S("two")}).exitCode, 0);
        for (const char *key : {"fe-1:a", "fe-1:b"})
            awaiting(S(key));
        const QStringList run{S("--json"), S("bulk"),           S("approve"), S("--key-prefix"),
                              S("fe-1:"),  S("--expect-count"), S("2"),       S("--reason"),
                              S("checked")};
        const CliRun first = decide(run);
        QCOMPARE(first.exitCode, 0);
        QCOMPARE(first.json.value(S("result")).toObject().value(S("pending")).toInt(), 2);
        const CliRun again = decide(run);
        QCOMPARE(again.exitCode, 0);
        const QJsonObject result = again.json.value(S("result")).toObject();
        QCOMPARE(result.value(S("pending")).toInt(), 2);
        QCOMPARE(result.value(S("already_done")).toInt(), 0);
        QCOMPARE(result.value(S("items")).toArray().at(0).toObject().value(S("detail")).toString(),
                 S("pending: your approval is recorded, another approver must approve"));
        QCOMPARE(idempo({S("four-eyes"), S("--above"), S("off"), S("--reason"), S("one")}).exitCode,
                 0);
    }

    /// A bulk run stopped after two of four (here: run on the first two lines), then run again
    /// on the whole keys file: bare KEY lines answer what the first run did as a file with the
    /// versions seen does (already_done, exit 0), never as refused.
    void bulkAgainOnBareKeysAnswersAlreadyDone_data()
    {
        QTest::addColumn<QString>("action");
        QTest::newRow("approve") << S("approve");
        QTest::newRow("reject") << S("reject");
        QTest::newRow("reconcile") << S("reconcile");
    }

    void bulkAgainOnBareKeysAnswersAlreadyDone()
    {
        QFETCH(QString, action);
        const QString prefix = S("again-") + action + S(":");
        for (int i = 0; i < 4; ++i) {
            const QString key = prefix + QString::number(i);
            if (action != S("reconcile")) {
                awaiting(key);
                continue;
            }
            const CliRun c = idempo({S("--json"), S("claim"), key, S("--payload"), S("{}"),
                                     S("--owner"), S("worker-1")});
            QCOMPARE(c.exitCode, 0);
            QCOMPARE(idempo({S("fail"), key, S("--token"),
                             QString::number(c.json.value(S("fencing_token")).toInteger()),
                             S("--class"), S("unknown_outcome")})
                         .exitCode,
                     0);
        }
        // Approving and rejecting are the approver's; reconciling, the owner's.
        const auto bulk = [&](const QStringList &args) {
            return action == S("reconcile") ? idempo(args) : decide(args);
        };
        const auto keysFile = [&](const QString &name, const QByteArray &lines) {
            QFile f(m_cli.filePath(name));
            if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
                return QString();
            f.write(lines);
            return f.fileName();
        };
        const CliRun dry =
            bulk({S("--json"), S("bulk"), action, S("--key-prefix"), prefix, S("--dry-run")});
        QByteArray bareLines;
        QByteArray versionLines;
        for (const QJsonValue &t :
             dry.json.value(S("preview")).toObject().value(S("targets")).toArray()) {
            const QByteArray key = t.toObject().value(S("key")).toString().toUtf8();
            bareLines += key + '\n';
            versionLines += key + '\t' +
                            QByteArray::number(t.toObject().value(S("version")).toInteger()) + '\n';
        }
        QCOMPARE(bareLines.count('\n'), 4);
        const QString bare = keysFile(action + S("-bare.txt"), bareLines);
        const QString versions = keysFile(action + S("-versions.tsv"), versionLines);
        const QList<QByteArray> keys = bareLines.split('\n');
        const QString firstTwo =
            keysFile(action + S("-first.txt"), keys[0] + '\n' + keys[1] + '\n');
        const auto run = [&](const QString &file, int count) {
            return bulk({S("--json"), S("bulk"), action, S("--keys"), file, S("--reason"),
                         S("end of shift"), S("--expect-count"), QString::number(count),
                         S("--rate"), S("500")});
        };
        QCOMPARE(run(firstTwo, 2).exitCode, 0);

        const CliRun again = run(bare, 4);
        QCOMPARE(again.exitCode, 0);
        const QJsonObject result = again.json.value(S("result")).toObject();
        QCOMPARE(result.value(S("already_done")).toInt(), 2);
        QCOMPARE(result.value(S("applied")).toInt(), 2);
        QCOMPARE(result.value(S("refused")).toInt(), 0);
        const QJsonArray items = result.value(S("items")).toArray();
        const QJsonArray seen =
            dry.json.value(S("preview")).toObject().value(S("targets")).toArray();
        for (int i = 0; i < 4; ++i) {
            const QJsonObject item = items.at(i).toObject();
            QCOMPARE(item.value(S("result")).toString(), i < 2 ? S("already_done") : S("applied"));
            QCOMPARE(item.value(S("version")).toInteger(),
                     seen.at(i).toObject().value(S("version")).toInteger());
        }

        // Everything done now: bare keys and the versions seen give the same report.
        const CliRun dryAgain = bulk({S("bulk"), action, S("--keys"), bare, S("--dry-run")});
        QCOMPARE(dryAgain.exitCode, 0);
        QVERIFY2(dryAgain.out.contains("you did every operation of the set before"),
                 dryAgain.out.constData());
        QJsonArray reports[2];
        int index = 0;
        for (const QString &file : {bare, versions}) {
            const CliRun r = run(file, 4);
            QCOMPARE(r.exitCode, 0);
            const QJsonObject o = r.json.value(S("result")).toObject();
            QCOMPARE(o.value(S("already_done")).toInt(), 4);
            reports[index++] = o.value(S("items")).toArray();
        }
        QCOMPARE(reports[0], reports[1]);
    }

    /// A first four-eyes approval is the approver's command done: exit 0, answered `pending`
    /// (and `replayed` when submitted again); the operation's claim meanwhile answers
    /// in_progress, exit 75, as the README's tables say.
    void firstFourEyesApprovalExitsZeroWhileClaimsWait()
    {
        QCOMPARE(
            idempo({S("four-eyes"), S("--above"), S("1.00"), S("--reason"), S("two")}).exitCode, 0);
        awaiting(S("fe-2:refund"));
        const QStringList approve{S("--json"),     S("approve"),  S("fe-2:refund"), S("--decision"),
                                  S("redispatch"), S("--reason"), S("checked")};
        const CliRun first = decide(approve);
        QCOMPARE(first.exitCode, 0);
        QCOMPARE(first.json.value(S("result")).toObject().value(S("status")).toString(),
                 S("pending"));
        const CliRun again = decide(approve.mid(1));
        QCOMPARE(again.exitCode, 0);
        QVERIFY2(again.out.contains("replayed: approval"), again.out.constData());
        const CliRun claim = idempo({S("--json"), S("claim"), S("fe-2:refund"), S("--payload"),
                                     S("{}"), S("--owner"), S("worker-2")});
        QCOMPARE(claim.exitCode, 75);
        QCOMPARE(claim.json.value(S("outcome")).toString(), S("in_progress"));
        QCOMPARE(claim.json.value(S("state")).toString(), S("awaiting_approval"));
        QCOMPARE(idempo({S("four-eyes"), S("--above"), S("off"), S("--reason"), S("one")}).exitCode,
                 0);
    }

    void evidencePackWithRecordsRemovedOrForgedIsRefused()
    {
        // Two decisions with another record between them: a pending approval, then a rejection.
        QCOMPARE(
            idempo({S("four-eyes"), S("--above"), S("1.00"), S("--reason"), S("two")}).exitCode, 0);
        awaiting(S("ev-1:refund"));
        awaiting(S("ev-2:refund"));
        QCOMPARE(decide({S("approve"), S("ev-1:refund"), S("--decision"), S("redispatch"),
                         S("--reason"), S("first")})
                     .exitCode,
                 0);
        QCOMPARE(decide({S("reject"), S("ev-2:refund"), S("--reason"), S("between")}).exitCode, 0);
        QCOMPARE(decide({S("reject"), S("ev-1:refund"), S("--reason"), S("no")}).exitCode, 0);
        QCOMPARE(idempo({S("four-eyes"), S("--above"), S("off"), S("--reason"), S("one")}).exitCode,
                 0);
        const QJsonObject pack = packOf(S("ev-1:refund"));
        QCOMPARE(pack.value(S("version")).toInt(), 3);
        const QJsonArray records = pack.value(S("audit_records")).toArray();
        QCOMPARE(records.size(), 2);
        // The second record links to the first, the first to none: no other record is needed.
        QCOMPARE(records.at(0).toObject().value(S("target_prev_hash")).toString(),
                 QString(64, QLatin1Char('0')));
        QCOMPARE(records.at(1).toObject().value(S("target_prev_hash")).toString(),
                 records.at(0).toObject().value(S("hash")).toString());
        QCOMPARE(pack.value(S("chain")).toObject().value(S("links")).toArray().size(), 0);
        const CliRun intact = verify(pack);
        QCOMPARE(intact.exitCode, 0);
        QCOMPARE(intact.json.value(S("records")).toInt(), 2);
        QCOMPARE(intact.json.value(S("links")).toInt(), 0);
        QCOMPARE(intact.json.value(S("linked")).toBool(), true);
        const CliRun matches = verifyAgainstLedger(pack);
        QCOMPARE(matches.exitCode, 0);
        QCOMPARE(matches.json.value(S("ledger")).toObject().value(S("appended_since")).toInt(), 0);

        const auto without = [&](int index) {
            QJsonObject p = pack;
            QJsonArray r = records;
            r.removeAt(index);
            p.insert(S("audit_records"), r);
            return p;
        };
        const auto newest = records.at(1).toObject().value(S("seq")).toInt();
        // The first record cut: the next one names a record the pack does not hold.
        expectRefused(without(0), "links to an earlier record of default/ev-1:refund");
        // The newest cut: offline nothing shows it (the pack says so); the ledger does. Its
        // approval then has no record either, which the pack's own check catches once dropped.
        QJsonObject cut = without(1);
        QJsonArray oneApproval = pack.value(S("approvals")).toArray();
        oneApproval.removeAt(1);
        cut.insert(S("approvals"), oneApproval);
        QJsonArray shortHistory;
        for (const QJsonValue &e : pack.value(S("history")).toArray())
            if (!e.toObject().value(S("detail")).toString().startsWith(S("reject")))
                shortHistory.append(e);
        cut.insert(S("history"), shortHistory);
        const QJsonObject before =
            QJsonDocument::fromJson(
                records.at(1).toObject().value(S("before_state")).toString().toUtf8())
                .object();
        QJsonObject cutOp = pack.value(S("operation")).toObject();
        cutOp.insert(S("state"), before.value(S("state")));
        cutOp.insert(S("operation_version"), before.value(S("version")));
        for (const char *held : {"fencing_token", "attempt", "max_attempts", "error_class"})
            cutOp.insert(S(held), before.value(S(held)));
        cut.insert(S("operation"), cutOp);
        QCOMPARE(verify(cut).exitCode, 0);
        const CliRun cutAgainst = verifyAgainstLedger(cut);
        QCOMPARE(cutAgainst.exitCode, 65);
        QVERIFY2(cutAgainst.json.value(S("problem"))
                     .toString()
                     .contains(QStringLiteral(
                                   "holds audit record %1 of default/ev-1:refund, which the pack "
                                   "leaves out")
                                   .arg(newest)),
                 cutAgainst.out.constData());
        QJsonObject swapped = pack;
        QJsonArray reordered{records.at(1), records.at(0)};
        swapped.insert(S("audit_records"), reordered);
        expectRefused(swapped, "is out of seq order");
        QJsonObject nothing = pack;
        nothing.insert(S("audit_records"), QJsonArray());
        expectRefused(nothing, "but the pack holds no audit record of it");

        // What the chain does not hash, the ledger does: an edited history detail verifies
        // offline and is refused against the ledger.
        QJsonObject rewritten = pack;
        QJsonArray history = pack.value(S("history")).toArray();
        QJsonObject event = history.at(0).toObject();
        event.insert(S("detail"), S("created by the customer"));
        history.replace(0, event);
        rewritten.insert(S("history"), history);
        QCOMPARE(verify(rewritten).exitCode, 0);
        const CliRun historyAgainst = verifyAgainstLedger(rewritten);
        QCOMPARE(historyAgainst.exitCode, 65);
        QVERIFY2(
            historyAgainst.json.value(S("problem"))
                .toString()
                .contains(S("history event 1 of the pack differs from the ledger's (\"detail\")")),
            historyAgainst.out.constData());
        QJsonObject payloadEdited = pack;
        QJsonObject edited = pack.value(S("operation")).toObject();
        edited.insert(S("payload"), QJsonObject{{S("amount"), 1}});
        payloadEdited.insert(S("operation"), edited);
        QCOMPARE(verify(payloadEdited).exitCode, 0);
        QVERIFY2(verifyAgainstLedger(payloadEdited)
                     .json.value(S("problem"))
                     .toString()
                     .contains(S("the operation record's \"payload\" differs from the ledger's")),
                 "payload");

        // The operation record forged: its state, then its version.
        QJsonObject forged = pack;
        QJsonObject op = pack.value(S("operation")).toObject();
        op.insert(S("state"), S("succeeded"));
        forged.insert(S("operation"), op);
        expectRefused(forged, "contradicts its newest audit record");
        op = pack.value(S("operation")).toObject();
        op.insert(S("operation_version"), op.value(S("operation_version")).toInt() - 1);
        forged.insert(S("operation"), op);
        expectRefused(forged, "contradicts its newest audit record");

        // The approvals forged: a decision, an operator, a status; one left out.
        const QJsonArray approvals = pack.value(S("approvals")).toArray();
        QCOMPARE(approvals.size(), 2);
        const auto approvalEdited = [&](const char *member, const QString &value) {
            QJsonObject p = pack;
            QJsonArray a = approvals;
            QJsonObject first = a.at(0).toObject();
            first.insert(S(member), value);
            a.replace(0, first);
            p.insert(S("approvals"), a);
            return p;
        };
        expectRefused(approvalEdited("decision", S("reject")), "does not say what audit record");
        expectRefused(approvalEdited("operator", S("nobody")), "does not say what audit record");
        expectRefused(approvalEdited("status", S("applied")), "does not say what audit record");
        QJsonObject dropped = pack;
        QJsonArray fewer = approvals;
        fewer.removeAt(1);
        dropped.insert(S("approvals"), fewer);
        expectRefused(dropped, "which the pack's approvals leave out");
        QJsonObject doubled = pack;
        QJsonArray twice = approvals;
        twice.append(approvals.at(0));
        doubled.insert(S("approvals"), twice);
        expectRefused(doubled, "is listed twice");
        // A run record for an operation that has none; what the exporter states has one shape.
        QJsonObject invented = pack;
        invented.insert(S("run"),
                        QJsonObject{{S("run_id"), S("r1")}, {S("state"), S("completed")}});
        expectRefused(invented, "not the operation's run");
        QJsonObject countersigned = pack;
        QJsonObject by = pack.value(S("exported_by")).toObject();
        by.insert(S("countersigned_by"), S("cfo"));
        countersigned.insert(S("exported_by"), by);
        expectRefused(countersigned, "that no check covers");

        // A rejection moved out of the records into the links; older packs.
        QJsonObject moved = without(1);
        QJsonObject movedChain = pack.value(S("chain")).toObject();
        QJsonArray links = movedChain.value(S("links")).toArray();
        links.append(records.at(1));
        movedChain.insert(S("links"), links);
        moved.insert(S("chain"), movedChain);
        expectRefused(moved, "is filed among the chain links");
        QJsonObject older = pack;
        older.insert(S("version"), 1);
        expectRefused(older, "older pack format (version 1)");
    }

    /// A pack exported before its operation moved on: what it says of the operation is checked
    /// against what the ledger keeps of that version, and its history to the event count of it.
    void evidencePackOfAnOperationThatMovedOn()
    {
        awaiting(S("mv-1:refund"), S("5000.00 EUR"));
        QCOMPARE(decide({S("approve"), S("mv-1:refund"), S("--decision"), S("redispatch"),
                         S("--reason"), S("checked")})
                     .exitCode,
                 0);
        const QJsonObject pack = packOf(S("mv-1:refund"));
        const int version =
            pack.value(S("operation")).toObject().value(S("operation_version")).toInt();
        QCOMPARE(pack.value(S("history")).toArray().size(), version);
        const CliRun claim = idempo({S("--json"), S("claim"), S("mv-1:refund"), S("--payload"),
                                     S("{}"), S("--owner"), S("worker-1")});
        QCOMPARE(claim.exitCode, 0);
        QCOMPARE(idempo({S("complete"), S("mv-1:refund"), S("--token"),
                         QString::number(claim.json.value(S("fencing_token")).toInteger()),
                         S("--result"), S("{}")})
                     .exitCode,
                 0);

        const CliRun intact = verifyAgainstLedger(pack);
        QVERIFY2(intact.exitCode == 0, QByteArray(intact.out + intact.err).constData());
        const QJsonObject ledger = intact.json.value(S("ledger")).toObject();
        QCOMPARE(ledger.value(S("operation_version")).toInt(), version + 2);
        QVERIFY2(ledger.value(S("uncompared")).toArray().contains(S("result")),
                 intact.out.constData());

        const auto forged = [&](const char *member, const QJsonValue &value) {
            QJsonObject p = pack;
            QJsonObject op = pack.value(S("operation")).toObject();
            op.insert(S(member), value);
            p.insert(S("operation"), op);
            return verifyAgainstLedger(p);
        };
        for (const auto &[member, value] : std::vector<std::pair<const char *, QJsonValue>>{
                 {"payload", QJsonObject{{S("amount"), 50}}},
                 {"value", S("50.00 EUR")},
                 {"run_id", S("run-other")},
                 {"created_at", S("2020-01-01T00:00:00.000Z")},
                 {"attempt", 7}}) {
            const CliRun r = forged(member, value);
            QCOMPARE(r.exitCode, 65);
            QVERIFY2(r.json.value(S("problem"))
                         .toString()
                         .contains(QStringLiteral("operation record's \"%1\"").arg(S(member))),
                     r.out.constData());
        }

        // Its state is in the hashed after-state as well: refused before the ledger is asked.
        QVERIFY(forged("state", S("confirmation_required"))
                    .json.value(S("problem"))
                    .toString()
                    .contains(S("contradicts its newest audit record")));

        // An event cut (the creating claim's): the pack's version says how many it must hold.
        QJsonObject cut = pack;
        QJsonArray history = pack.value(S("history")).toArray();
        history.removeFirst();
        cut.insert(S("history"), history);
        const CliRun shorter = verifyAgainstLedger(cut);
        QCOMPARE(shorter.exitCode, 65);
        QVERIFY2(
            shorter.json.value(S("problem")).toString().contains(S("events were cut or added")),
            shorter.out.constData());
        // Offline, an applied decision with no event of it in the history.
        cut.insert(S("history"), QJsonArray());
        expectRefused(cut, "but the pack's history shows no event of it");
    }
};

QTEST_GUILESS_MAIN(TestCliRefusals)
#include "tst_cli_refusals.moc"
