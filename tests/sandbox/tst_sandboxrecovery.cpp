// SPDX-License-Identifier: Apache-2.0
// A sandbox run that did not end cleanly, through the real `idempo` binary on the embedded
// ledger: the next run clears the queue of a driver that is gone (SIGKILL), a live holder is
// refused with its name, one that may be gone elsewhere with the `sandbox reset` command that
// then clears it.
#include <csignal>

#include <unistd.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include "driverlease.h"
#include "error.h"
#include "processsandboxrunner.h"
#include "scenario.h"

using idempo::Error;
using idempo::ErrorCode;
using idempo::sandbox::DriverLease;

namespace {

struct Run
{
    int exitCode = -1;
    QJsonObject json;
    QByteArray err;
};

} // namespace

class TestSandboxRecovery final : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_path;

    QStringList withLedger(const QStringList &args) const
    {
        return QStringList{QStringLiteral("--ledger"), QStringLiteral("sqlite:") + m_path,
                           QStringLiteral("--json")} +
               args;
    }

    void prepare(QProcess &p) const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("IDEMPO_LEDGER"));
        env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
        env.insert(QStringLiteral("HOME"), m_dir.path());
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("xdg")));
        p.setProcessEnvironment(env);
    }

    Run idempo(const QStringList &args, bool addLedger = true)
    {
        QProcess p;
        prepare(p);
        p.start(QStringLiteral(IDEMPO_CLI_PATH), addLedger ? withLedger(args) : args);
        Run r;
        if (!p.waitForFinished(120'000))
            qWarning("idempo did not finish");
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.json = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        r.err = p.readAllStandardError();
        return r;
    }

    Run sandboxRun(const QString &ns, const QString &runs = QStringLiteral("4"))
    {
        return idempo({QStringLiteral("--namespace"), ns, QStringLiteral("sandbox"),
                       QStringLiteral("run"), QStringLiteral("--runs"), runs});
    }

    /// Makes `instance` the holder of the sandbox queue, its lease running for an hour.
    void holdQueue(const QString &ns, const QString &instance)
    {
        {
            QSqlDatabase db =
                QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("holder"));
            db.setDatabaseName(m_path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.prepare(QStringLiteral(
                "INSERT OR REPLACE INTO sandbox_queue_holders (queue, namespace, driver, "
                "instance, lease_expires_at_ms) VALUES ('sandbox', ?, ?, ?, ?)")));
            q.addBindValue(ns);
            q.addBindValue(QStringLiteral("pid 4711 on host elsewhere"));
            q.addBindValue(instance);
            q.addBindValue(QDateTime::currentMSecsSinceEpoch() + 3600'000);
            QVERIFY(q.exec());
            q.finish();
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("holder"));
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("ledger.db"));
        QCOMPARE(idempo({QStringLiteral("init")}).exitCode, 0);
        const Run first = sandboxRun(QStringLiteral("first"));
        QVERIFY2(first.exitCode == 0, first.err.constData());
    }

    /// The liveness check behind DriverLease: this process lives, a pid that is not there does
    /// not, and a process of another machine is for its lease to tell.
    void livenessOfADriver()
    {
        const std::string me = DriverLease::thisProcess();
        QCOMPARE(DriverLease::isAlive(me), std::optional<bool>(true));
        // "BOOT/PIDNS/PID/START"
        const std::size_t startSlash = me.rfind('/');
        const std::size_t pidSlash = me.rfind('/', startSlash - 1);
        const std::string machine = me.substr(0, pidSlash + 1);
        const std::string pid = me.substr(pidSlash + 1, startSlash - pidSlash - 1);
        QCOMPARE(pid, std::to_string(::getpid()));
        QCOMPARE(DriverLease::isAlive(machine + "999999999/1"), std::optional<bool>(false));
        // The same pid with another start time is a reused pid, not the driver.
        QCOMPARE(DriverLease::isAlive(machine + pid + "/1"), std::optional<bool>(false));
        QCOMPARE(DriverLease::isAlive("another-boot/pid:[1]/1/1"), std::optional<bool>());
    }

    /// SIGKILL in the middle of a run leaves its messages on the queue; the next run (in another
    /// namespace) says whose they were, clears them and runs.
    void killedRunIsClearedByTheNext()
    {
        QProcess driver;
        prepare(driver);
        driver.start(QStringLiteral(IDEMPO_CLI_PATH),
                     withLedger({QStringLiteral("--namespace"), QStringLiteral("killed"),
                                 QStringLiteral("sandbox"), QStringLiteral("run"),
                                 QStringLiteral("--runs"), QStringLiteral("50000")}));
        QVERIFY(driver.waitForStarted(10'000));
        QDeadlineTimer deadline(60'000);
        int queued = 0;
        while (queued == 0 && !deadline.hasExpired() && driver.state() == QProcess::Running) {
            const Run metrics = idempo(
                {QStringLiteral("queue"), QStringLiteral("metrics"), QStringLiteral("sandbox")});
            queued = metrics.json.value(QStringLiteral("queue_length")).toInt();
            if (queued == 0)
                QThread::msleep(20);
        }
        QVERIFY2(queued > 0, driver.readAllStandardError().constData());
        driver.kill();
        QVERIFY(driver.waitForFinished(10'000));

        const Run next = sandboxRun(QStringLiteral("after-kill"));
        QVERIFY2(next.exitCode == 0, next.err.constData());
        QVERIFY2(next.err.contains("the run in namespace 'killed'"), next.err.constData());
        QVERIFY2(next.err.contains("ended without cleaning up the sandbox queue 'sandbox'"),
                 next.err.constData());
        QVERIFY2(next.err.contains("idempo --namespace killed check"), next.err.constData());
        QVERIFY(next.json.value(QStringLiteral("invariants"))
                    .toObject()
                    .value(QStringLiteral("ok"))
                    .toBool());
        const Run again = sandboxRun(QStringLiteral("after-that"));
        QVERIFY2(again.exitCode == 0, again.err.constData());
        QVERIFY2(!again.err.contains("ended without cleaning up"), again.err.constData());
    }

    /// A holder whose process runs on this machine (this test) is refused, exit 75, and so is a
    /// reset of it.
    void liveHolderOnThisMachineIsRefused()
    {
        holdQueue(QStringLiteral("busy"), QString::fromStdString(DriverLease::thisProcess()));
        const Run run = sandboxRun(QStringLiteral("blocked"));
        QCOMPARE(run.exitCode, 75);
        QCOMPARE(run.json.value(QStringLiteral("error")).toString(), QStringLiteral("ledger_busy"));
        const QString message = run.json.value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QLatin1String("namespace 'busy'")), qPrintable(message));
        QVERIFY2(message.contains(QStringLiteral("kill -TERM %1").arg(::getpid())),
                 qPrintable(message));
        const Run reset = idempo({QStringLiteral("sandbox"), QStringLiteral("reset")});
        QCOMPARE(reset.exitCode, 65);
        QVERIFY2(reset.json.value(QStringLiteral("message"))
                     .toString()
                     .contains(QLatin1String("still runs")),
                 reset.err.constData());
        QCOMPARE(idempo({QStringLiteral("--namespace"), QStringLiteral("blocked"),
                         QStringLiteral("check")})
                     .exitCode,
                 65); // refused before anything was recorded
    }

    /// A holder of another machine with a live lease: refused with the exact reset command,
    /// which then clears the queue, and the run goes through.
    void holderElsewhereIsRefusedWithTheResetCommand()
    {
        holdQueue(QStringLiteral("remote"), QStringLiteral("another-boot/pid:[1]/4711/123"));
        const Run run = sandboxRun(QStringLiteral("after-reset"));
        QCOMPARE(run.exitCode, 75);
        const QString message = run.json.value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QLatin1String("on the ledger's clock")), qPrintable(message));
        const QString command =
            QStringLiteral("idempo --ledger sqlite:") + m_path + QStringLiteral(" sandbox reset");
        QVERIFY2(message.endsWith(command), qPrintable(message));

        const QStringList words = command.split(QLatin1Char(' ')).mid(1);
        const Run reset = idempo(QStringList{QStringLiteral("--json")} + words, false);
        QVERIFY2(reset.exitCode == 0, reset.err.constData());
        QCOMPARE(reset.json.value(QStringLiteral("previous_holder"))
                     .toObject()
                     .value(QStringLiteral("namespace"))
                     .toString(),
                 QStringLiteral("remote"));
        const Run after = sandboxRun(QStringLiteral("after-reset"));
        QVERIFY2(after.exitCode == 0, after.err.constData());
    }

    /// Workers that exit 69 (the ledger is unavailable) while the ledger answers the driver are
    /// not waiting out an outage: the run ends with an error that says so, instead of replacing
    /// them forever.
    void workersWithoutALedgerTheDriverReachesEndTheRun()
    {
        const QString fake = m_dir.filePath(QStringLiteral("no-ledger-worker"));
        QFile script(fake);
        QVERIFY(script.open(QIODevice::WriteOnly));
        script.write("#!/bin/sh\nexit 69\n");
        script.close();
        QVERIFY(script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));

        idempo::sandbox::SandboxOptions options;
        options.scenarios.push_back(idempo::sandbox::Scenario::find("payment-refund"));
        options.runs = 2;
        options.workers = 2;
        options.ns = "lonely";
        idempo::sandbox::ProcessRunOptions process;
        process.ledgerUrl = QStringLiteral("sqlite:") + m_path;
        process.program = fake;
        process.checkEveryMs = 20;
        process.maxWallMs = 60'000;
        try {
            idempo::sandbox::ProcessSandboxRunner(options, process).run();
            QFAIL("the run finished with workers that never reached the ledger");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::Internal);
            QVERIFY2(std::string_view(e.what()).find("workers keep ending on their own") !=
                         std::string_view::npos,
                     e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestSandboxRecovery)
#include "tst_sandboxrecovery.moc"
