// SPDX-License-Identifier: Apache-2.0
// The sandbox's process mode on PostgreSQL through the real `idempo` binary: worker processes
// killed with SIGKILL at the crash points and replaced; every invariant holds, no business
// operation has a second effect in the providers' journal table, and `idempo check` in another
// process agrees. The naive consumer under the same kills makes duplicates the checker names.
// Runs under tests/pg/with-postgres.sh.
#include <cerrno>
#include <csignal>
#include <set>
#include <vector>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QThread>
#include <QUrl>
#include <QtTest>

#include "pgconnection.h"

namespace {

struct Run
{
    int exitCode = -1;
    QJsonObject json;
    QByteArray err;
};

QString ledgerUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
}

/// Every crash window at a high rate, with the delivery and provider faults that make workers
/// take over from one another.
const QString CrashFaults = QStringLiteral("crash-before-dispatch=0.15,crash-during-call=0.15,"
                                           "crash-after-effect=0.3,crash-after-record=0.15,"
                                           "duplicate-delivery,provider-timeout=0.1,provider-5xx,"
                                           "delayed-confirmation=0.1,two-planners=0.1");

/// Processes whose parent is `parent`, from /proc.
std::vector<pid_t> childrenOf(pid_t parent)
{
    std::vector<pid_t> children;
    for (const QString &entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
        bool numeric = false;
        const pid_t pid = static_cast<pid_t>(entry.toInt(&numeric));
        if (!numeric)
            continue;
        QFile stat(QStringLiteral("/proc/%1/stat").arg(entry));
        if (!stat.open(QIODevice::ReadOnly))
            continue;
        // "pid (comm) state ppid ...": comm may hold spaces, so read after its closing bracket.
        const QByteArray line = stat.readAll();
        const QList<QByteArray> fields = line.mid(line.lastIndexOf(')') + 2).split(' ');
        if (fields.size() > 1 && fields.at(1).toInt() == parent)
            children.push_back(pid);
    }
    return children;
}

/// True while `pid` exists and is not a zombie.
bool alive(pid_t pid)
{
    QFile stat(QStringLiteral("/proc/%1/stat").arg(pid));
    if (!stat.open(QIODevice::ReadOnly))
        return false;
    const QByteArray line = stat.readAll();
    return line.mid(line.lastIndexOf(')') + 2, 1) != "Z";
}

/// Live `idempo worker` processes of namespace `ns`, whoever their parent is now (the driver
/// starts them with "--namespace NS worker").
int workersIn(const QString &ns)
{
    const QByteArray marker =
        QByteArray("--namespace") + '\0' + ns.toUtf8() + '\0' + "worker" + '\0';
    int found = 0;
    for (const QString &entry : QDir(QStringLiteral("/proc")).entryList(QDir::Dirs)) {
        QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(entry));
        if (cmdline.open(QIODevice::ReadOnly) && cmdline.readAll().contains(marker) &&
            alive(entry.toInt()))
            ++found;
    }
    return found;
}

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
        p.start(QStringLiteral(IDEMPO_CLI_PATH),
                QStringList{QStringLiteral("--ledger"), ledgerUrl(), QStringLiteral("--json")} +
                    args);
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
        const idempo::PgResult r =
            c.exec("count effects",
                   "SELECT operation_key, count(*) FROM sandbox_effects WHERE namespace = $1 "
                   "GROUP BY operation_key",
                   p);
        std::map<std::string, int> counts;
        for (int i = 0; i < r.rows(); ++i)
            counts[r.text(i, 0)] = static_cast<int>(r.integer(i, 1));
        return counts;
    }

    /// Effects journaled in `ns` so far.
    int effectCount(const std::string &ns)
    {
        int total = 0;
        try {
            for (const auto &[operation, count] : effectsPerOperation(ns))
                total += count;
        } catch (const std::exception &) {
            return 0; // the driver has not created the sandbox tables yet
        }
        return total;
    }

    /// Starts `idempo sandbox run --processes` in `ns` (`runs` runs, `extra` arguments, on
    /// `ledger` or the test ledger; `--faults` in `extra` replaces the default faults) and
    /// returns once its workers have made effects, with the pids of the workers running then.
    std::vector<pid_t> startBusyDriver(QProcess &driver, const QString &ns,
                                       const QString &runs = QStringLiteral("400"),
                                       const QStringList &extra = {},
                                       const QString &ledger = ledgerUrl())
    {
        QStringList args{QStringLiteral("--ledger"),
                         ledger,
                         QStringLiteral("--json"),
                         QStringLiteral("--namespace"),
                         ns,
                         QStringLiteral("sandbox"),
                         QStringLiteral("run"),
                         QStringLiteral("--processes"),
                         QStringLiteral("--scenario"),
                         QStringLiteral("all"),
                         QStringLiteral("--runs"),
                         runs,
                         QStringLiteral("--workers"),
                         QStringLiteral("3"),
                         QStringLiteral("--seed"),
                         QStringLiteral("5")};
        if (!extra.contains(QStringLiteral("--faults")))
            args << QStringLiteral("--faults")
                 << QStringLiteral("crash-before-dispatch=0.2,duplicate-delivery");
        driver.start(QStringLiteral(IDEMPO_CLI_PATH), args + extra);
        if (!driver.waitForStarted(10'000))
            return {};
        QDeadlineTimer deadline(60'000);
        while (effectCount(ns.toStdString()) < 10 && !deadline.hasExpired() &&
               driver.state() == QProcess::Running)
            QThread::msleep(50);
        return childrenOf(static_cast<pid_t>(driver.processId()));
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
        const Run run =
            idempo({QStringLiteral("sandbox"), QStringLiteral("run"), QStringLiteral("--processes"),
                    QStringLiteral("--scenario"), QStringLiteral("all"), QStringLiteral("--runs"),
                    QStringLiteral("48"), QStringLiteral("--workers"), QStringLiteral("3"),
                    QStringLiteral("--faults"), CrashFaults, QStringLiteral("--seed"),
                    QStringLiteral("11")});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        const QJsonObject &r = run.json;
        QCOMPARE(r.value(QStringLiteral("runs")).toInt(), 48);
        QCOMPARE(r.value(QStringLiteral("workers")).toInt(), 3);
        QVERIFY(r.value(QStringLiteral("processes")).toBool());
        QVERIFY(!r.value(QStringLiteral("timed_out")).toBool());
        const int kills = r.value(QStringLiteral("kills")).toInt();
        qInfo("%d SIGKILLs, %d restarts, %d deliveries", kills,
              r.value(QStringLiteral("restarts")).toInt(),
              r.value(QStringLiteral("deliveries")).toInt());
        QVERIFY2(kills > 0, "no worker was killed");
        // Every killed worker was replaced, and no worker died of anything but a SIGKILL.
        QCOMPARE(r.value(QStringLiteral("restarts")).toInt(), kills);
        QCOMPARE(r.value(QStringLiteral("unexpected_exits")).toInt(), 0);
        QCOMPARE(r.value(QStringLiteral("crashes")).toInt(), kills);
        QVERIFY2(
            r.value(QStringLiteral("invariants")).toObject().value(QStringLiteral("ok")).toBool(),
            QJsonDocument(r.value(QStringLiteral("invariants")).toObject()).toJson().constData());
        QCOMPARE(r.value(QStringLiteral("duplicate_effects")).toInt(), 0);

        const std::map<std::string, int> effects = effectsPerOperation("sandbox");
        QVERIFY(effects.size() >=
                24); // most runs reach their write; flagged and refused ones stop before
        for (const auto &[operation, count] : effects)
            QVERIFY2(count == 1, operation.c_str());

        const Run check = idempo({QStringLiteral("check")});
        QCOMPARE(check.exitCode, 0);
        QVERIFY(check.json.value(QStringLiteral("ok")).toBool());
        // Every invariant, the run-budget ones included, was checked.
        QCOMPARE(check.json.value(QStringLiteral("invariants")).toArray().size(), 9);
    }

    void naiveWorkersMakeDuplicatesTheCheckerNames()
    {
        const QStringList ns{QStringLiteral("--namespace"), QStringLiteral("naive")};
        const Run run = idempo(
            ns + QStringList{QStringLiteral("sandbox"), QStringLiteral("run"),
                             QStringLiteral("--processes"), QStringLiteral("--naive"),
                             QStringLiteral("--scenario"), QStringLiteral("invoice-email"),
                             QStringLiteral("--runs"), QStringLiteral("8"),
                             QStringLiteral("--workers"), QStringLiteral("2"),
                             QStringLiteral("--faults"), QStringLiteral("crash-after-effect=1"),
                             QStringLiteral("--seed"), QStringLiteral("3")});
        QCOMPARE(run.exitCode, 65);
        QVERIFY(run.json.value(QStringLiteral("kills")).toInt() > 0);
        QVERIFY(run.json.value(QStringLiteral("duplicate_effects")).toInt() > 0);
        int duplicated = 0;
        for (const auto &[operation, count] : effectsPerOperation("naive"))
            duplicated += count > 1 ? 1 : 0;
        QVERIFY(duplicated > 0);

        const Run check = idempo(ns + QStringList{QStringLiteral("check")});
        QCOMPARE(check.exitCode, 65);
        const QJsonObject once =
            check.json.value(QStringLiteral("invariants")).toArray().at(0).toObject();
        QCOMPARE(once.value(QStringLiteral("name")).toString(),
                 QStringLiteral("at_most_one_effect"));
        QCOMPARE(once.value(QStringLiteral("violations")).toInt(), duplicated);
    }

    /// A ledger address with a password reaches the workers in their environment: no worker's
    /// argv (what `ps` shows every user) holds it, and the workers authenticate with it.
    void workersGetTheLedgerPasswordOutsideTheirArgv()
    {
        const QByteArray password = "sandb0x-s3cret";
        {
            idempo::PgConnection admin(ledgerUrl().toStdString());
            admin.execScript(
                "create role",
                "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = "
                "'idempo_sandbox_secret') "
                "THEN CREATE ROLE idempo_sandbox_secret LOGIN SUPERUSER PASSWORD 'sandb0x-s3cret'; "
                "END IF; END $$");
        }
        const QUrl server(ledgerUrl());
        const QString url =
            QStringLiteral("postgresql://idempo_sandbox_secret:%1@%2:%3/idempo_test")
                .arg(QString::fromLatin1(password), server.host())
                .arg(server.port());
        QProcess driver;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("IDEMPO_LEDGER"), url);
        env.insert(QStringLiteral("PGPASSFILE"),
                   m_home.filePath(QStringLiteral("no-pgpass"))); // only the URL's
        env.insert(QStringLiteral("HOME"), m_home.path());
        driver.setProcessEnvironment(env);
        driver.start(QStringLiteral(IDEMPO_CLI_PATH),
                     {QStringLiteral("--json"), QStringLiteral("--namespace"),
                      QStringLiteral("secret"), QStringLiteral("sandbox"), QStringLiteral("run"),
                      QStringLiteral("--processes"), QStringLiteral("--scenario"),
                      QStringLiteral("all"), QStringLiteral("--runs"), QStringLiteral("8"),
                      QStringLiteral("--workers"), QStringLiteral("2"), QStringLiteral("--faults"),
                      QStringLiteral("crash-after-effect=0.3"), QStringLiteral("--seed"),
                      QStringLiteral("7")});
        QVERIFY(driver.waitForStarted(10'000));
        std::set<pid_t> seen;
        QByteArray leaked;
        QDeadlineTimer deadline(120'000);
        // Every few milliseconds, until the driver ends: each worker lives for the whole run.
        while (!driver.waitForFinished(5) && !deadline.hasExpired()) {
            for (const pid_t pid : childrenOf(static_cast<pid_t>(driver.processId()))) {
                QFile cmdline(QStringLiteral("/proc/%1/cmdline").arg(pid));
                if (!cmdline.open(QIODevice::ReadOnly))
                    continue;
                const QByteArray args = cmdline.readAll();
                if (!args.contains(QByteArray("worker\0")))
                    continue;
                seen.insert(pid);
                if (args.contains(password))
                    leaked = args;
            }
        }
        QCOMPARE(driver.state(), QProcess::NotRunning);
        const QByteArray out = driver.readAllStandardOutput();
        const QByteArray err = driver.readAllStandardError();
        QVERIFY2(driver.exitCode() == 0, err.constData());
        QVERIFY2(leaked.isEmpty(), leaked.replace('\0', ' ').constData());
        QVERIFY2(seen.size() >= 2, qPrintable(QStringLiteral("%1 workers seen").arg(seen.size())));
        QVERIFY(!out.contains(password) && !err.contains(password));
        const QJsonObject r = QJsonDocument::fromJson(out).object();
        QCOMPARE(r.value(QStringLiteral("runs")).toInt(), 8);
        QCOMPARE(r.value(QStringLiteral("unexpected_exits")).toInt(), 0);
        QVERIFY(
            r.value(QStringLiteral("invariants")).toObject().value(QStringLiteral("ok")).toBool());
        // Only workers consume the queue, and none ended on its own: they signed in with the
        // URL's password, the only one there is for that role.
        QVERIFY(r.value(QStringLiteral("deliveries")).toInt() >= 8);
    }

    /// The server restarts (fast shutdown: every session ends with 57P01) in the middle of a
    /// run with SIGKILLed workers: the driver and the workers say they lost the ledger and that
    /// it is back, the run finishes, every invariant holds and no operation has a second effect.
    void serverRestartDuringARunKeepsEveryInvariant()
    {
        const QString ctl = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_CTL");
        if (ctl.isEmpty())
            QSKIP("IDEMPO_TEST_POSTGRES_CTL is not set: tests/pg/with-postgres.sh provides it");
        QProcess driver;
        const std::vector<pid_t> workers = startBusyDriver(
            driver, QStringLiteral("restarted"), QStringLiteral("120"),
            {QStringLiteral("--faults"),
             QStringLiteral(
                 "crash-before-dispatch=0.2,crash-after-effect=0.2,duplicate-delivery")});
        QVERIFY2(!workers.empty(), driver.readAllStandardError().constData());
        QCOMPARE(QProcess::execute(ctl, {QStringLiteral("restart")}), 0);
        QVERIFY(driver.waitForFinished(240'000));
        const QByteArray err = driver.readAllStandardError();
        QCOMPARE(driver.exitStatus(), QProcess::NormalExit);
        QVERIFY2(driver.exitCode() == 0, err.constData());
        QVERIFY2(err.contains("lost the ledger postgresql://idempo@127.0.0.1:"), err.constData());
        QVERIFY2(err.contains("answers again after"), err.constData());
        QVERIFY2(err.contains("57P01") || err.contains("server closed the connection"),
                 err.constData());
        const QJsonObject r = QJsonDocument::fromJson(driver.readAllStandardOutput()).object();
        QCOMPARE(r.value(QStringLiteral("runs")).toInt(), 120);
        QVERIFY(!r.value(QStringLiteral("timed_out")).toBool());
        QVERIFY2(
            r.value(QStringLiteral("invariants")).toObject().value(QStringLiteral("ok")).toBool(),
            QJsonDocument(r.value(QStringLiteral("invariants")).toObject()).toJson().constData());
        QCOMPARE(r.value(QStringLiteral("duplicate_effects")).toInt(), 0);
        for (const auto &[operation, count] : effectsPerOperation("restarted"))
            QVERIFY2(count == 1, operation.c_str());
        const Run check = idempo(
            {QStringLiteral("--namespace"), QStringLiteral("restarted"), QStringLiteral("check")});
        QVERIFY2(check.exitCode == 0, QJsonDocument(check.json).toJson().constData());
    }

    /// The server stays down past --reconnect-deadline: the driver exits 69 naming the ledger,
    /// whose password the message leaves out, and no worker is left.
    void ledgerDownPastTheDeadlineExits69()
    {
        const QString ctl = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_CTL");
        if (ctl.isEmpty())
            QSKIP("IDEMPO_TEST_POSTGRES_CTL is not set: tests/pg/with-postgres.sh provides it");
        // The superuser signs in by trust: the password is never checked, only carried.
        QString withPassword = ledgerUrl();
        withPassword.replace(QStringLiteral("://idempo@"),
                             QStringLiteral("://idempo:pw-never-shown@"));
        QProcess driver;
        const std::vector<pid_t> workers = startBusyDriver(
            driver, QStringLiteral("down"), QStringLiteral("400"),
            {QStringLiteral("--reconnect-deadline"), QStringLiteral("2")}, withPassword);
        QVERIFY2(!workers.empty(), driver.readAllStandardError().constData());
        QCOMPARE(QProcess::execute(ctl, {QStringLiteral("stop")}), 0);
        const bool ended = driver.waitForFinished(60'000);
        QCOMPARE(QProcess::execute(ctl, {QStringLiteral("start")}), 0);
        QVERIFY(ended);
        const QByteArray err = driver.readAllStandardError();
        QCOMPARE(driver.exitStatus(), QProcess::NormalExit);
        const QByteArray out = driver.readAllStandardOutput();
        QVERIFY2(driver.exitCode() == 69,
                 QByteArray(QByteArray::number(driver.exitCode()) + " " + out + err).constData());
        const QJsonObject r = QJsonDocument::fromJson(out).object();
        QCOMPARE(r.value(QStringLiteral("error")).toString(), QStringLiteral("ledger_unavailable"));
        const QString message = r.value(QStringLiteral("message")).toString();
        QVERIFY2(
            message.contains(QLatin1String("gave up on the ledger postgresql://idempo@127.0.0.1:")),
            qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("after 2 s without it")), qPrintable(message));
        QVERIFY2(!message.contains(QLatin1String("pw-never-shown")), qPrintable(message));
        QVERIFY2(!err.contains("pw-never-shown"), err.constData());
        QVERIFY2(err.contains("reconnecting for up to 2 s"), err.constData());
        QDeadlineTimer deadline(30'000);
        while (workersIn(QStringLiteral("down")) > 0 && !deadline.hasExpired())
            QThread::msleep(50);
        QCOMPARE(workersIn(QStringLiteral("down")), 0);
    }

    /// SIGTERM to the driver stops the run the documented way: its workers finish the message in
    /// hand and are reaped, the report says cancelled, the invariants hold over what ran, the
    /// exit status is 75, and the next run finds an empty queue.
    void stopSignalEndsTheRunCleanly()
    {
        QProcess driver;
        const std::vector<pid_t> workers = startBusyDriver(driver, QStringLiteral("stopped"));
        QVERIFY2(!workers.empty(), driver.readAllStandardError().constData());
        QCOMPARE(driver.state(), QProcess::Running);
        QVERIFY(::kill(static_cast<pid_t>(driver.processId()), SIGTERM) == 0);
        QVERIFY(driver.waitForFinished(60'000));
        const QByteArray err = driver.readAllStandardError();
        QCOMPARE(driver.exitStatus(), QProcess::NormalExit);
        QVERIFY2(driver.exitCode() == 75, err.constData());
        // Exactly one JSON object: trailing output would make it a parse error.
        QJsonParseError parse;
        const QJsonObject r =
            QJsonDocument::fromJson(driver.readAllStandardOutput(), &parse).object();
        QCOMPARE(parse.error, QJsonParseError::NoError);
        QVERIFY(r.value(QStringLiteral("cancelled")).toBool());
        QVERIFY2(
            r.value(QStringLiteral("invariants")).toObject().value(QStringLiteral("ok")).toBool(),
            QJsonDocument(r.value(QStringLiteral("invariants")).toObject()).toJson().constData());
        QVERIFY(r.value(QStringLiteral("runs_withdrawn")).toInt() > 0);
        QVERIFY(r.value(QStringLiteral("runs_withdrawn")).toInt() < 400);
        for (const pid_t pid : workers)
            QVERIFY2(!alive(pid),
                     qPrintable(QStringLiteral("worker %1 outlived its driver").arg(pid)));
        QCOMPARE(workersIn(QStringLiteral("stopped")), 0);

        const QStringList ns{QStringLiteral("--namespace"), QStringLiteral("stopped")};
        const Run check = idempo(ns + QStringList{QStringLiteral("check")});
        QVERIFY2(check.exitCode == 0, QJsonDocument(check.json).toJson().constData());
        const Run next = idempo(
            {QStringLiteral("--namespace"), QStringLiteral("after-stop"), QStringLiteral("sandbox"),
             QStringLiteral("run"), QStringLiteral("--processes"), QStringLiteral("--runs"),
             QStringLiteral("6"), QStringLiteral("--workers"), QStringLiteral("2")});
        QVERIFY2(next.exitCode == 0, next.err.constData());
        QVERIFY(!next.json.value(QStringLiteral("cancelled")).toBool());
    }

    /// `idempo worker` alone: SIGTERM ends it cleanly with an exit line; --idle-exit-ms ends it
    /// on an empty queue.
    void workerStopsOnSigtermAndWhenIdle()
    {
        QProcess worker;
        worker.start(QStringLiteral(IDEMPO_CLI_PATH),
                     {QStringLiteral("--ledger"), ledgerUrl(), QStringLiteral("worker"),
                      QStringLiteral("--owner"), QStringLiteral("lone")});
        // Its first line says it is working: from then on SIGTERM is a stop request.
        QVERIFY(worker.waitForReadyRead(10'000));
        QCOMPARE(QJsonDocument::fromJson(worker.readLine())
                     .object()
                     .value(QStringLiteral("event"))
                     .toString(),
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
        idle.start(QStringLiteral(IDEMPO_CLI_PATH),
                   {QStringLiteral("--ledger"), ledgerUrl(), QStringLiteral("worker"),
                    QStringLiteral("--idle-exit-ms"), QStringLiteral("200")});
        QVERIFY(idle.waitForFinished(10'000));
        QCOMPARE(idle.exitCode(), 0);
        const QList<QByteArray> idleLines = idle.readAllStandardOutput().trimmed().split('\n');
        QCOMPARE(idleLines.size(), 2);
        QCOMPARE(QJsonDocument::fromJson(idleLines.last())
                     .object()
                     .value(QStringLiteral("event"))
                     .toString(),
                 QStringLiteral("exit"));
    }

    /// A driver that dies without a word (SIGKILL) takes its workers with it, and leaves messages
    /// on the queue for the next test.
    void workersEndWithTheirDriver()
    {
        QProcess driver;
        const std::vector<pid_t> workers = startBusyDriver(driver, QStringLiteral("orphans"));
        QVERIFY2(!workers.empty(), driver.readAllStandardError().constData());
        driver.kill();
        QVERIFY(driver.waitForFinished(10'000));
        QDeadlineTimer deadline(30'000);
        const auto anyAlive = [&] { return std::any_of(workers.begin(), workers.end(), alive); };
        while (anyAlive() && !deadline.hasExpired())
            QThread::msleep(50);
        QVERIFY2(!anyAlive(), "a worker outlived its SIGKILLed driver");
        QCOMPARE(workersIn(QStringLiteral("orphans")), 0);
    }

    /// The run after a SIGKILLed driver finds it gone, says whose messages it removes, and runs.
    void nextRunClearsTheQueueOfAKilledDriver()
    {
        const Run next = idempo(
            {QStringLiteral("--namespace"), QStringLiteral("after-kill"), QStringLiteral("sandbox"),
             QStringLiteral("run"), QStringLiteral("--processes"), QStringLiteral("--runs"),
             QStringLiteral("6"), QStringLiteral("--workers"), QStringLiteral("2")});
        QVERIFY2(next.exitCode == 0, next.err.constData());
        QVERIFY2(next.err.contains("the run in namespace 'orphans'"), next.err.constData());
        QVERIFY2(next.err.contains("ended without cleaning up the sandbox queue 'sandbox'"),
                 next.err.constData());
        QVERIFY(next.json.value(QStringLiteral("invariants"))
                    .toObject()
                    .value(QStringLiteral("ok"))
                    .toBool());
    }
};

QTEST_GUILESS_MAIN(TestSandboxProcessesPostgresql)
#include "tst_sandbox_processes_postgresql.moc"
