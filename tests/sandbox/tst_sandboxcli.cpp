// SPDX-License-Identifier: Apache-2.0
// `idempo sandbox run` and `idempo check` through the real binary: the check runs in another
// process and reads the effect journals from the ledger file; exit codes and JSON.
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
    QByteArray err;
};

} // namespace

class TestSandboxCli final : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_ledger;

    Run idempo(QStringList args)
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("IDEMPO_LEDGER"));
        env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
        env.insert(QStringLiteral("HOME"),
                   m_dir.path()); // the default ledger must never be the user's
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("xdg")));
        p.setProcessEnvironment(env);
        args.prepend(QStringLiteral("--json"));
        args.prepend(m_ledger);
        args.prepend(QStringLiteral("--ledger"));
        p.start(QStringLiteral(IDEMPO_CLI_PATH), args);
        Run r;
        if (!p.waitForFinished(120'000))
            qWarning("idempo did not finish");
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.json = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        r.err = p.readAllStandardError();
        return r;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_ledger = QStringLiteral("sqlite:") + m_dir.filePath(QStringLiteral("ledger.db"));
        QCOMPARE(idempo({QStringLiteral("init")}).exitCode, 0);
    }

    void runThenCheckInAnotherProcess()
    {
        const Run run =
            idempo({QStringLiteral("sandbox"), QStringLiteral("run"), QStringLiteral("--runs"),
                    QStringLiteral("60"), QStringLiteral("--faults"), QStringLiteral("all"),
                    QStringLiteral("--seed"), QStringLiteral("4")});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QCOMPARE(run.json.value(QStringLiteral("runs")).toInt(), 60);
        QVERIFY(run.json.value(QStringLiteral("invariants"))
                    .toObject()
                    .value(QStringLiteral("ok"))
                    .toBool());
        QVERIFY(run.err.isEmpty()); // no progress bar unless stderr is a terminal

        const Run check = idempo({QStringLiteral("check")});
        QCOMPARE(check.exitCode, 0);
        QCOMPARE(check.json.value(QStringLiteral("namespace")).toString(),
                 QStringLiteral("sandbox"));
        QStringList names;
        for (const QJsonValue &inv : check.json.value(QStringLiteral("invariants")).toArray())
            names << inv.toObject().value(QStringLiteral("name")).toString();
        QCOMPARE(names.size(), 9);
        QVERIFY(names.contains(QStringLiteral("no_dispatch_after_halt")));
        QVERIFY(names.contains(QStringLiteral("spend_within_cap")));

        // The same namespace again would replay everything: refused, nothing written.
        const Run again = idempo({QStringLiteral("sandbox"), QStringLiteral("run"),
                                  QStringLiteral("--runs"), QStringLiteral("5")});
        QCOMPARE(again.exitCode, 64);
    }

    void naiveRunFailsTheCheck()
    {
        const QStringList ns{QStringLiteral("--namespace"), QStringLiteral("naive")};
        const Run run =
            idempo(ns + QStringList{QStringLiteral("sandbox"), QStringLiteral("run"),
                                    QStringLiteral("--naive"), QStringLiteral("--scenario"),
                                    QStringLiteral("invoice-email"), QStringLiteral("--runs"),
                                    QStringLiteral("20"), QStringLiteral("--faults"),
                                    QStringLiteral("duplicate-delivery=1")});
        QCOMPARE(run.exitCode, 65);
        QVERIFY(run.json.value(QStringLiteral("duplicate_effects")).toInt() > 0);

        const Run check = idempo(ns + QStringList{QStringLiteral("check")});
        QCOMPARE(check.exitCode, 65);
        const QJsonObject once =
            check.json.value(QStringLiteral("invariants")).toArray().at(0).toObject();
        QCOMPARE(once.value(QStringLiteral("name")).toString(),
                 QStringLiteral("at_most_one_effect"));
        QVERIFY(once.value(QStringLiteral("examples"))
                    .toArray()
                    .at(0)
                    .toObject()
                    .value(QStringLiteral("operation"))
                    .toString()
                    .endsWith(QLatin1String(":send_email")));
    }

    void usageErrors()
    {
        QCOMPARE(idempo({QStringLiteral("sandbox"), QStringLiteral("run"),
                         QStringLiteral("--scenario"), QStringLiteral("moon-landing")})
                     .exitCode,
                 64);
        QCOMPARE(idempo({QStringLiteral("sandbox"), QStringLiteral("run"),
                         QStringLiteral("--faults"), QStringLiteral("meteor")})
                     .exitCode,
                 64);
        QCOMPARE(idempo({QStringLiteral("sandbox"), QStringLiteral("walk")}).exitCode, 64);
    }

    /// More runs than the sandbox holds in memory are refused up front, naming the limit.
    void tooManyRunsAreRefused()
    {
        for (const QString &runs : {QStringLiteral("2000000000"), QStringLiteral("1000001")}) {
            const Run r = idempo({QStringLiteral("--namespace"), QStringLiteral("huge"),
                                  QStringLiteral("sandbox"), QStringLiteral("run"),
                                  QStringLiteral("--runs"), runs});
            QCOMPARE(r.exitCode, 64);
            QVERIFY2(r.json.value(QStringLiteral("message"))
                         .toString()
                         .contains(QLatin1String("from 1 to 1000000")),
                     r.err.constData());
        }
        // Nothing was recorded: the namespace is still empty.
        QCOMPARE(
            idempo({QStringLiteral("--namespace"), QStringLiteral("huge"), QStringLiteral("check")})
                .exitCode,
            65);
    }

    /// A namespace with nothing in it (a typo) is not a pass: refused, naming the namespace.
    void checkRefusesAnEmptyNamespace()
    {
        const Run r = idempo(
            {QStringLiteral("--namespace"), QStringLiteral("sandbx"), QStringLiteral("check")});
        QCOMPARE(r.exitCode, 65);
        QCOMPARE(r.json.value(QStringLiteral("error")).toString(), QStringLiteral("not_found"));
        const QString message = r.json.value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QLatin1String("'sandbx'")), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("nothing to check")), qPrintable(message));
        QVERIFY(!r.json.contains(QStringLiteral("invariants")));
    }

    /// A worker on a queue that does not exist fails before it announces readiness.
    void workerOnAMissingQueueNeverStarts()
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("IDEMPO_LEDGER"));
        env.insert(QStringLiteral("HOME"), m_dir.path());
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(IDEMPO_CLI_PATH),
                {QStringLiteral("--ledger"), m_ledger, QStringLiteral("worker"),
                 QStringLiteral("--queue"), QStringLiteral("nosuch"),
                 QStringLiteral("--idle-exit-ms"), QStringLiteral("100")});
        QVERIFY(p.waitForFinished(30'000));
        QCOMPARE(p.exitCode(), 65);
        QVERIFY(!p.readAllStandardOutput().contains("\"event\""));
        QVERIFY(p.readAllStandardError().contains("'nosuch'"));
    }
};

QTEST_GUILESS_MAIN(TestSandboxCli)
#include "tst_sandboxcli.moc"
