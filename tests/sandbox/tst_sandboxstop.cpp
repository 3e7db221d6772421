// SPDX-License-Identifier: Apache-2.0
// Stopping `idempo sandbox run` with SIGTERM, through the real binary, in repeated trials at
// several moments: every trial ends with exit 75, a report that says cancelled, every invariant
// holding over what ran, and `idempo check` in another process agreeing. Thread mode on the
// embedded ledger; process mode under tests/pg/with-postgres.sh, where the time a stop takes is
// measured at two plan sizes: it is bounded by the work in hand, not by the plan.
#include <csignal>

#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

#include "pgconnection.h"
#include "processsandboxrunner.h"

namespace {

QString postgresUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
}

struct Stopped
{
    int exitCode = -1;
    QJsonObject report;
    QByteArray err;
    qint64 stopMs = 0; ///< from SIGTERM to the process's end
};

} // namespace

class TestSandboxStop final : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_home;
    QString m_ledger;
    QString m_ledgerFile; ///< the embedded ledger's file; empty on PostgreSQL
    int m_trial = 0;

    QProcessEnvironment environment() const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("IDEMPO_LEDGER"));
        env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
        env.insert(QStringLiteral("HOME"), m_home.path()); // never the user's files
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_home.filePath(QStringLiteral("xdg")));
        return env;
    }

    int idempo(const QStringList &args)
    {
        QProcess p;
        p.setProcessEnvironment(environment());
        p.start(QStringLiteral(IDEMPO_CLI_PATH),
                QStringList{QStringLiteral("--ledger"), m_ledger} + args);
        if (!p.waitForFinished(120'000))
            return -1;
        return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    }

    /// Runs of `ns` the sandbox has recorded so far (0 before its tables exist).
    int runsRecorded(const QString &ns)
    {
        if (m_ledgerFile.isEmpty()) {
            idempo::PgConnection c(postgresUrl().toStdString());
            if (c.exec("look for sandbox_runs", "SELECT to_regclass('sandbox_runs') IS NULL")
                    .text(0, 0) == "t")
                return 0;
            const idempo::PgResult r =
                c.exec("count runs", "SELECT count(*) FROM sandbox_runs WHERE namespace = $1",
                       idempo::PgParams().text(ns.toStdString()));
            return static_cast<int>(r.integer(0, 0));
        }
        int count = 0;
        {
            QSqlDatabase db =
                QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("probe"));
            db.setDatabaseName(m_ledgerFile);
            if (db.open()) {
                QSqlQuery q(db);
                if (q.exec(
                        QStringLiteral("SELECT count(*) FROM sandbox_runs WHERE namespace = '%1'")
                            .arg(ns)) &&
                    q.next())
                    count = q.value(0).toInt();
            }
        }
        QSqlDatabase::removeDatabase(QStringLiteral("probe"));
        return count;
    }

    /// Starts a sandbox run in a namespace of its own, waits until it has recorded its first
    /// runs (its stop handler is in place from then on), lets it work `delayMs` more, sends
    /// SIGTERM and waits for its end.
    Stopped startAndStop(const QStringList &runArgs, int delayMs, QString &ns)
    {
        ns = QStringLiteral("stop-%1").arg(++m_trial);
        QProcess driver;
        driver.setProcessEnvironment(environment());
        driver.start(QStringLiteral(IDEMPO_CLI_PATH),
                     QStringList{QStringLiteral("--ledger"), m_ledger, QStringLiteral("--json"),
                                 QStringLiteral("--namespace"), ns, QStringLiteral("sandbox"),
                                 QStringLiteral("run")} +
                         runArgs);
        Stopped s;
        if (!driver.waitForStarted(10'000))
            return s;
        QDeadlineTimer started(60'000);
        while (runsRecorded(ns) == 0 && driver.state() == QProcess::Running &&
               !started.hasExpired())
            QThread::msleep(20);
        QThread::msleep(static_cast<unsigned long>(delayMs));
        QElapsedTimer stop;
        stop.start();
        ::kill(static_cast<pid_t>(driver.processId()), SIGTERM);
        if (!driver.waitForFinished(180'000))
            driver.kill();
        s.stopMs = stop.elapsed();
        s.exitCode = driver.exitStatus() == QProcess::NormalExit ? driver.exitCode() : -1;
        s.report = QJsonDocument::fromJson(driver.readAllStandardOutput()).object();
        s.err = driver.readAllStandardError();
        return s;
    }

    /// What every stopped trial must show.
    void verifyStopped(const Stopped &s, const QString &ns, int runs)
    {
        const QByteArray invariants =
            QJsonDocument(s.report.value(QStringLiteral("invariants")).toObject()).toJson();
        QVERIFY2(s.report.value(QStringLiteral("cancelled")).toBool(), s.err.constData());
        QVERIFY2(s.report.value(QStringLiteral("invariants"))
                     .toObject()
                     .value(QStringLiteral("ok"))
                     .toBool(),
                 invariants.constData());
        QVERIFY2(s.exitCode == 75, s.err.constData());
        const int started = s.report.value(QStringLiteral("runs_started")).toInt();
        QVERIFY(started > 0 && started <= runs);
        const int withdrawn = s.report.value(QStringLiteral("runs_withdrawn")).toInt();
        QVERIFY(withdrawn <= started);
        int operations = 0;
        for (const QJsonValue n : s.report.value(QStringLiteral("states")).toObject())
            operations += n.toInt();
        // What ran checks out in another process too; a stop before any delivery leaves
        // nothing to check, which `check` refuses to call a pass (65).
        const bool ran = operations > 0 || withdrawn < started;
        QCOMPARE(idempo({QStringLiteral("--namespace"), ns, QStringLiteral("check")}),
                 ran ? 0 : 65);
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_home.isValid());
        if (postgresUrl().isEmpty()) {
            m_ledgerFile = m_home.filePath(QStringLiteral("ledger.db"));
            m_ledger = QStringLiteral("sqlite:") + m_ledgerFile;
        } else {
            m_ledger = postgresUrl();
        }
        QCOMPARE(idempo({QStringLiteral("init")}), 0);
    }

    /// All scenarios, every fault: the run of the report (300 runs), and a larger one so that
    /// later stops land in the middle of its rounds. Several trials per moment.
    void threadModeStopKeepsEveryInvariant_data()
    {
        QTest::addColumn<int>("runs");
        QTest::addColumn<int>("delayMs");
        const std::pair<int, int> moments[] = {{300, 0},    {300, 250},   {300, 500},
                                               {2000, 600}, {2000, 1200}, {2000, 2500}};
        for (const auto &[runs, delay] : moments)
            for (int trial = 1; trial <= 3; ++trial)
                QTest::addRow("%d runs, %d ms, trial %d", runs, delay, trial) << runs << delay;
    }
    void threadModeStopKeepsEveryInvariant()
    {
        if (m_ledgerFile.isEmpty())
            QSKIP("the thread mode runs on the embedded ledger only");
        QFETCH(int, runs);
        QFETCH(int, delayMs);
        QString ns;
        const Stopped s = startAndStop({QStringLiteral("--scenario"), QStringLiteral("all"),
                                        QStringLiteral("--runs"), QString::number(runs),
                                        QStringLiteral("--faults"), QStringLiteral("all")},
                                       delayMs, ns);
        qInfo("stopped after %lld ms: %d runs started, %d withdrawn",
              static_cast<long long>(s.stopMs),
              s.report.value(QStringLiteral("runs_started")).toInt(),
              s.report.value(QStringLiteral("runs_withdrawn")).toInt());
        verifyStopped(s, ns, runs);
    }

    /// Process mode: the stop costs the work in hand (a paused worker finishing its message, a
    /// lease and a late confirmation to wait for, what was started), so a plan 60 times larger
    /// stops within the same bound. The bound comes from the timings, not from the small plan's
    /// stop: a small plan may have finished before the signal and stop at once.
    void processModeStopIsBoundedByTheWorkInHand()
    {
        if (!m_ledgerFile.isEmpty())
            QSKIP("measured on PostgreSQL: run under tests/pg/with-postgres.sh");
        const idempo::sandbox::ProcessRunOptions process;
        const qint64 inHandMs = process.timings.pauseMs + process.timings.leaseMs +
                                process.timings.confirmationDelayMs + 2 * process.checkEveryMs;
        // The final passes, the emptied queue, the withdrawn runs and the report.
        constexpr qint64 settleMs = 2'000;
        for (const int runs : {300, 20'000}) {
            for (int trial = 0; trial < 2; ++trial) {
                QString ns;
                const Stopped s = startAndStop({QStringLiteral("--processes"),
                                                QStringLiteral("--workers"), QStringLiteral("2"),
                                                QStringLiteral("--scenario"), QStringLiteral("all"),
                                                QStringLiteral("--runs"), QString::number(runs),
                                                QStringLiteral("--faults"), QStringLiteral("all")},
                                               1000, ns);
                const int started = s.report.value(QStringLiteral("runs_started")).toInt();
                qInfo("process mode, %d runs planned: stopped after %lld ms (%d runs started)",
                      runs, static_cast<long long>(s.stopMs), started);
                verifyStopped(s, ns, runs);
                if (runs == 20'000)
                    QVERIFY2(started < runs, "the large plan must still be running when stopped");
                QVERIFY2(s.stopMs <= inHandMs + settleMs,
                         qPrintable(QStringLiteral("stopping %1 planned runs took %2 ms; the work "
                                                   "in hand bounds it at %3 ms")
                                        .arg(runs)
                                        .arg(s.stopMs)
                                        .arg(inHandMs + settleMs)));
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestSandboxStop)
#include "tst_sandboxstop.moc"
