// SPDX-License-Identifier: Apache-2.0
// The sandbox's process mode on PostgreSQL through the real `idempo` binary: worker processes
// killed with SIGKILL at the crash points and replaced; every invariant holds, no business
// operation has a second effect in the providers' journal table, and `idempo check` in another
// process agrees. The naive consumer under the same kills makes duplicates the checker names.
// Runs under tests/pg/with-postgres.sh.
#include "pgconnection.h"

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

QString ledgerUrl() { return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL"); }

/// Every crash window at a high rate, with the delivery and provider faults that make workers
/// take over from one another.
const QString CrashFaults = QStringLiteral(
    "crash-before-dispatch=0.15,crash-during-call=0.15,crash-after-effect=0.3,crash-after-record=0.15,"
    "duplicate-delivery,provider-timeout=0.1,provider-5xx,delayed-confirmation=0.1,two-planners=0.1");

} // namespace

class TestSandboxProcessesPostgresql final : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_home;

    Run idempo(QStringList args)
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("IDEMPO_LEDGER"));
        env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
        env.insert(QStringLiteral("HOME"), m_home.path()); // never the user's files
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_home.filePath(QStringLiteral("xdg")));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(IDEMPO_CLI_PATH), QStringList{QStringLiteral("--ledger"), ledgerUrl(),
                                                             QStringLiteral("--json")} + args);
        Run r;
        if (!p.waitForFinished(120'000)) {
            qWarning("idempo did not finish");
            p.kill();
            p.waitForFinished();
        }
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.json = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        r.err = p.readAllStandardError();
        return r;
    }

    /// Effects per business operation of `ns`, read straight from the providers' journal table.
    std::map<std::string, int> effectsPerOperation(const std::string &ns)
    {
        idempo::PgConnection c(ledgerUrl().toStdString());
        idempo::PgParams p;
        p.text(ns);
        const idempo::PgResult r = c.exec("count effects",
                                          "SELECT operation_key, count(*) FROM sandbox_effects WHERE namespace = $1 "
                                          "GROUP BY operation_key",
                                          p);
        std::map<std::string, int> counts;
        for (int i = 0; i < r.rows(); ++i)
            counts[r.text(i, 0)] = static_cast<int>(r.integer(i, 1));
        return counts;
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (ledgerUrl().isEmpty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set: run under tests/pg/with-postgres.sh");
        QVERIFY(m_home.isValid());
        const Run init = idempo({QStringLiteral("init")});
        QVERIFY2(init.exitCode == 0, init.err.constData());
    }

    void killedWorkersKeepEveryInvariant()
    {
        const Run run = idempo({QStringLiteral("sandbox"), QStringLiteral("run"), QStringLiteral("--processes"),
                                QStringLiteral("--scenario"), QStringLiteral("all"), QStringLiteral("--runs"),
                                QStringLiteral("48"), QStringLiteral("--workers"), QStringLiteral("3"),
                                QStringLiteral("--faults"), CrashFaults, QStringLiteral("--seed"), QStringLiteral("11")});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const QJsonObject &r = run.json;
        QCOMPARE(r.value(QStringLiteral("runs")).toInt(), 48);
        QCOMPARE(r.value(QStringLiteral("workers")).toInt(), 3);
        QVERIFY(r.value(QStringLiteral("processes")).toBool());
        QVERIFY(!r.value(QStringLiteral("timed_out")).toBool());
        const int kills = r.value(QStringLiteral("kills")).toInt();
        qInfo("%d SIGKILLs, %d restarts, %d deliveries", kills, r.value(QStringLiteral("restarts")).toInt(),
              r.value(QStringLiteral("deliveries")).toInt());
        QVERIFY2(kills > 0, "no worker was killed");
        // Every killed worker was replaced, and no worker died of anything but a SIGKILL.
        QCOMPARE(r.value(QStringLiteral("restarts")).toInt(), kills);
        QCOMPARE(r.value(QStringLiteral("unexpected_exits")).toInt(), 0);
        QCOMPARE(r.value(QStringLiteral("crashes")).toInt(), kills);
        QVERIFY2(r.value(QStringLiteral("invariants")).toObject().value(QStringLiteral("ok")).toBool(),
                 QJsonDocument(r.value(QStringLiteral("invariants")).toObject()).toJson().constData());
        QCOMPARE(r.value(QStringLiteral("duplicate_effects")).toInt(), 0);

        const std::map<std::string, int> effects = effectsPerOperation("sandbox");
        QVERIFY(effects.size() >= 24); // most runs reach their write; flagged and refused ones stop before
        for (const auto &[operation, count] : effects)
            QVERIFY2(count == 1, operation.c_str());

        const Run check = idempo({QStringLiteral("check")});
        QCOMPARE(check.exitCode, 0);
        QVERIFY(check.json.value(QStringLiteral("ok")).toBool());
        QCOMPARE(check.json.value(QStringLiteral("invariants")).toArray().size(), 7);
    }

    void naiveWorkersMakeDuplicatesTheCheckerNames()
    {
        const QStringList ns{QStringLiteral("--namespace"), QStringLiteral("naive")};
        const Run run = idempo(ns + QStringList{QStringLiteral("sandbox"), QStringLiteral("run"),
                                                QStringLiteral("--processes"), QStringLiteral("--naive"),
                                                QStringLiteral("--scenario"), QStringLiteral("invoice-email"),
                                                QStringLiteral("--runs"), QStringLiteral("8"), QStringLiteral("--workers"),
                                                QStringLiteral("2"), QStringLiteral("--faults"),
                                                QStringLiteral("crash-after-effect=1"), QStringLiteral("--seed"),
                                                QStringLiteral("3")});
        QCOMPARE(run.exitCode, 65);
        QVERIFY(run.json.value(QStringLiteral("kills")).toInt() > 0);
        QVERIFY(run.json.value(QStringLiteral("duplicate_effects")).toInt() > 0);
        int duplicated = 0;
        for (const auto &[operation, count] : effectsPerOperation("naive"))
            duplicated += count > 1 ? 1 : 0;
        QVERIFY(duplicated > 0);

        const Run check = idempo(ns + QStringList{QStringLiteral("check")});
        QCOMPARE(check.exitCode, 65);
        const QJsonObject once = check.json.value(QStringLiteral("invariants")).toArray().at(0).toObject();
        QCOMPARE(once.value(QStringLiteral("name")).toString(), QStringLiteral("at_most_one_effect"));
        QCOMPARE(once.value(QStringLiteral("violations")).toInt(), duplicated);
    }

    /// `idempo worker` alone: SIGTERM ends it cleanly with an exit line; --idle-exit-ms ends it
    /// on an empty queue.
    void workerStopsOnSigtermAndWhenIdle()
    {
        QProcess worker;
        worker.start(QStringLiteral(IDEMPO_CLI_PATH),
                     {QStringLiteral("--ledger"), ledgerUrl(), QStringLiteral("worker"), QStringLiteral("--owner"),
                      QStringLiteral("lone")});
        // Its first line says it is working: from then on SIGTERM is a stop request.
        QVERIFY(worker.waitForReadyRead(10'000));
        QCOMPARE(QJsonDocument::fromJson(worker.readLine()).object().value(QStringLiteral("event")).toString(),
                 QStringLiteral("start"));
        worker.terminate();
        QVERIFY(worker.waitForFinished(10'000));
        QCOMPARE(worker.exitStatus(), QProcess::NormalExit);
        QCOMPARE(worker.exitCode(), 0);
        const QList<QByteArray> lines = worker.readAllStandardOutput().trimmed().split('\n');
        const QJsonObject last = QJsonDocument::fromJson(lines.last()).object();
        QCOMPARE(last.value(QStringLiteral("event")).toString(), QStringLiteral("exit"));
        QCOMPARE(last.value(QStringLiteral("owner")).toString(), QStringLiteral("lone"));
        QCOMPARE(last.value(QStringLiteral("handled")).toInt(), 0);

        QProcess idle;
        idle.start(QStringLiteral(IDEMPO_CLI_PATH), {QStringLiteral("--ledger"), ledgerUrl(), QStringLiteral("worker"),
                                                     QStringLiteral("--idle-exit-ms"), QStringLiteral("200")});
        QVERIFY(idle.waitForFinished(10'000));
        QCOMPARE(idle.exitCode(), 0);
        const QList<QByteArray> idleLines = idle.readAllStandardOutput().trimmed().split('\n');
        QCOMPARE(idleLines.size(), 2);
        QCOMPARE(QJsonDocument::fromJson(idleLines.last()).object().value(QStringLiteral("event")).toString(),
                 QStringLiteral("exit"));
    }
};

QTEST_GUILESS_MAIN(TestSandboxProcessesPostgresql)
#include "tst_sandbox_processes_postgresql.moc"
