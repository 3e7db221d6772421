// SPDX-License-Identifier: Apache-2.0
// The real `idempo` binary on an embedded ledger that cannot take a write: a file that may not
// grow (a full disk) and an auditor's read-only copy. Exit codes follow the table (69: the
// ledger is unavailable), messages say why, and nothing is half-written or created.
#include <csignal>

#include <sys/resource.h>
#include <unistd.h>

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

namespace {

struct Run
{
    int exitCode = -1;
    QJsonObject json;
    QByteArray out;
    QByteArray err;
};

/// What a folder holds, with each file's size and modification time: equal listings mean
/// nothing was written to the folder or its files.
QStringList listing(const QString &folder)
{
    QStringList out;
    for (const QFileInfo &f : QDir(folder).entryInfoList(QDir::Files | QDir::Hidden, QDir::Name))
        out << QStringLiteral("%1 %2 %3")
                   .arg(f.fileName())
                   .arg(f.size())
                   .arg(f.lastModified().toMSecsSinceEpoch());
    return out;
}

} // namespace

class TestCliLedgerFaults final : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_binary; ///< a copy of idempo that the `nobody` user may run

    /// Runs idempo on `ledger` (a sqlite: URL). `asAuditor`: as a user who may not write the
    /// ledger's folder. Root ignores file permissions, so as root (CI) that is `nobody`
    /// through setpriv; otherwise the current user, for whom the permissions hold anyway.
    /// `fileSizeLimit`: RLIMIT_FSIZE in bytes, with SIGXFSZ ignored, so that a write past it
    /// fails as it would on a full disk.
    Run idempo(const QString &ledger, const QStringList &args, bool asAuditor = false,
               rlim_t fileSizeLimit = 0)
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("IDEMPO_LEDGER"));
        env.remove(QStringLiteral("IDEMPO_NAMESPACE"));
        env.insert(QStringLiteral("HOME"), m_dir.path());
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("xdg")));
        p.setProcessEnvironment(env);
        if (fileSizeLimit > 0) {
            p.setChildProcessModifier([fileSizeLimit] {
                const rlimit limit{fileSizeLimit, fileSizeLimit};
                ::setrlimit(RLIMIT_FSIZE, &limit);
                std::signal(SIGXFSZ, SIG_IGN); // kept across exec: write() then fails with EFBIG
            });
        }
        const QStringList full =
            QStringList{QStringLiteral("--ledger"), ledger, QStringLiteral("--json")} + args;
        if (asAuditor && ::geteuid() == 0) {
            p.start(QStringLiteral("setpriv"),
                    QStringList{QStringLiteral("--reuid=65534"), QStringLiteral("--regid=65534"),
                                QStringLiteral("--clear-groups"), m_binary} +
                        full);
        } else {
            p.start(m_binary, full);
        }
        Run r;
        if (!p.waitForFinished(60'000))
            qWarning("idempo did not finish");
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        r.out = p.readAllStandardOutput();
        r.err = p.readAllStandardError();
        r.json = QJsonDocument::fromJson(r.out).object();
        return r;
    }

    /// A ledger in a folder of its own holding one operation per state we show, an audit
    /// record and a small sandbox run; every writer has closed it (no -wal beside it).
    QString makeLedger(const QString &folder)
    {
        QDir().mkpath(m_dir.filePath(folder));
        const QString url =
            QStringLiteral("sqlite:") + m_dir.filePath(folder + QStringLiteral("/ledger.db"));
        const auto ok = [&](const QStringList &args) {
            const Run r = idempo(url, args);
            if (r.exitCode != 0)
                qWarning("%s: %s", qPrintable(args.join(QLatin1Char(' '))), r.err.constData());
            return r.exitCode == 0;
        };
        if (!ok({QStringLiteral("init")}) ||
            !ok({QStringLiteral("claim"), QStringLiteral("run-1:refund"),
                 QStringLiteral("--payload"), QStringLiteral("{\"amount\":5}")}) ||
            !ok({QStringLiteral("complete"), QStringLiteral("run-1:refund"),
                 QStringLiteral("--token"), QStringLiteral("1"), QStringLiteral("--result"),
                 QStringLiteral("{\"ok\":true}")}) ||
            !ok({QStringLiteral("four-eyes"), QStringLiteral("--above"), QStringLiteral("1000"),
                 QStringLiteral("--reason"), QStringLiteral("policy")}) ||
            !ok({QStringLiteral("sandbox"), QStringLiteral("run"), QStringLiteral("--runs"),
                 QStringLiteral("4"), QStringLiteral("--seed"), QStringLiteral("2")}))
            return {};
        return url;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        // The temporary folder and the binary's copy must be reachable for `nobody`.
        QVERIFY(QFile::setPermissions(
            m_dir.path(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                              QFileDevice::ReadOther | QFileDevice::ExeOther |
                              QFileDevice::ReadGroup | QFileDevice::ExeGroup));
        m_binary = m_dir.filePath(QStringLiteral("idempo"));
        QVERIFY(QFile::copy(QStringLiteral(IDEMPO_CLI_PATH), m_binary));
        if (::geteuid() == 0 && QStandardPaths::findExecutable(QStringLiteral("setpriv")).isEmpty())
            QSKIP("running as root without setpriv: cannot run as a user who may not write the "
                  "ledger");
    }

    /// A ledger file that may not grow: the claim fails with exit 69, says the ledger could not
    /// be written and that nothing was kept; the ledger holds what it held; with room again the
    /// same claim goes through once.
    void fullDiskExits69AndKeepsNothing()
    {
        const QString url = makeLedger(QStringLiteral("full"));
        QVERIFY(!url.isEmpty());
        // 300 KB of payload needs more than 64 KiB of write-ahead log (from a file: one argument
        // of that size is more than exec() takes).
        QFile payload(m_dir.filePath(QStringLiteral("payload.json")));
        QVERIFY(payload.open(QIODevice::WriteOnly));
        payload.write("{\"blob\":\"" + QByteArray(300'000, 'x') + "\"}");
        payload.close();
        const QStringList claim{QStringLiteral("claim"), QStringLiteral("run-2:big"),
                                QStringLiteral("--payload"), QLatin1Char('@') + payload.fileName()};
        const Run full = idempo(url, claim, false, 64 * 1024);
        QVERIFY2(full.exitCode == 69, full.err.constData());
        QCOMPARE(full.json.value(QStringLiteral("error")).toString(),
                 QStringLiteral("ledger_unavailable"));
        const QString message = full.json.value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QLatin1String("nothing of this write was kept")),
                 qPrintable(message));
        QVERIFY2(message.contains(url), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("I/O error")) ||
                     message.contains(QLatin1String("disk is full")),
                 qPrintable(message));

        const Run show = idempo(url, {QStringLiteral("show"), QStringLiteral("run-2:big")});
        QCOMPARE(show.exitCode, 65);
        QCOMPARE(show.json.value(QStringLiteral("error")).toString(), QStringLiteral("not_found"));
        const Run list = idempo(url, {QStringLiteral("list")});
        QCOMPARE(list.json.value(QStringLiteral("operations")).toArray().size(), 1);
        QCOMPARE(idempo(url, claim).exitCode, 0);
        QCOMPARE(idempo(url, claim).exitCode, 75); // in_progress: the first claim holds the lease
    }

    /// An auditor's copy (file 0444 in a folder 0555): every command that only reads works, and
    /// none of them writes the file or creates anything beside it (no -wal, no -shm). A write
    /// exits 69 saying the ledger is not writable, and a schema older than the binary is named,
    /// exit 69, instead of migrated.
    void readCommandsWorkOnALedgerNobodyMayWrite()
    {
        const QString source = makeLedger(QStringLiteral("source"));
        QVERIFY(!source.isEmpty());
        QVERIFY(!QFile::exists(source.mid(7) + QStringLiteral("-wal")));
        const QString folder = m_dir.filePath(QStringLiteral("auditor"));
        QVERIFY(QDir().mkpath(folder));
        const QString path = folder + QStringLiteral("/ledger.db");
        QVERIFY(QFile::copy(source.mid(7), path));
        QVERIFY(QFile::setPermissions(path, QFileDevice::ReadOwner | QFileDevice::ReadGroup |
                                                QFileDevice::ReadOther));
        QVERIFY(QFile::setPermissions(folder, QFileDevice::ReadOwner | QFileDevice::ExeOwner |
                                                  QFileDevice::ReadGroup | QFileDevice::ExeGroup |
                                                  QFileDevice::ReadOther | QFileDevice::ExeOther));
        const QString url = QStringLiteral("sqlite:") + path;
        const QStringList before = listing(folder);

        const Run show =
            idempo(url, {QStringLiteral("show"), QStringLiteral("run-1:refund")}, true);
        QVERIFY2(show.exitCode == 0, show.err.constData());
        QCOMPARE(show.json.value(QStringLiteral("state")).toString(), QStringLiteral("succeeded"));
        const Run history =
            idempo(url, {QStringLiteral("history"), QStringLiteral("run-1:refund")}, true);
        QVERIFY2(history.exitCode == 0, history.err.constData());
        const Run list = idempo(url, {QStringLiteral("list")}, true);
        QVERIFY2(list.exitCode == 0, list.err.constData());
        QCOMPARE(list.json.value(QStringLiteral("operations")).toArray().size(), 1);
        const Run metrics = idempo(url, {QStringLiteral("metrics")}, true);
        QVERIFY2(metrics.exitCode == 0, metrics.err.constData());
        const Run check = idempo(
            url,
            {QStringLiteral("--namespace"), QStringLiteral("sandbox"), QStringLiteral("check")},
            true);
        QVERIFY2(check.exitCode == 0, check.err.constData());
        QVERIFY(check.json.value(QStringLiteral("ok")).toBool());
        const Run verify = idempo(url, {QStringLiteral("audit"), QStringLiteral("verify")}, true);
        QVERIFY2(verify.exitCode == 0, verify.err.constData());
        QCOMPARE(verify.json.value(QStringLiteral("records")).toInt(), 1);
        const Run audit = idempo(url, {QStringLiteral("audit"), QStringLiteral("list")}, true);
        QVERIFY2(audit.exitCode == 0, audit.err.constData());
        const Run queue = idempo(
            url, {QStringLiteral("queue"), QStringLiteral("metrics"), QStringLiteral("sandbox")},
            true);
        QVERIFY2(queue.exitCode == 0, queue.err.constData());
        QCOMPARE(listing(folder), before);

        const Run claim = idempo(url,
                                 {QStringLiteral("claim"), QStringLiteral("run-9:x"),
                                  QStringLiteral("--payload"), QStringLiteral("{}")},
                                 true);
        QVERIFY2(claim.exitCode == 69, claim.err.constData());
        QCOMPARE(claim.json.value(QStringLiteral("error")).toString(),
                 QStringLiteral("ledger_unavailable"));
        QVERIFY2(claim.json.value(QStringLiteral("message")).toString().contains(path),
                 claim.out.constData());
        QVERIFY2(claim.json.value(QStringLiteral("message"))
                     .toString()
                     .contains(QLatin1String("not writable")),
                 claim.out.constData());
        QCOMPARE(listing(folder), before);
    }

    /// A ledger whose schema is older than the binary: a reading command names both versions and
    /// exits 69; the file is not migrated (a writing command would migrate it).
    void olderSchemaIsNamedNotMigratedByReads()
    {
        const QString source = makeLedger(QStringLiteral("old"));
        QVERIFY(!source.isEmpty());
        const QString path = source.mid(7);
        int latest = 0;
        {
            QSqlDatabase db =
                QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("downgrade"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("SELECT max(version) FROM schema_migrations")) &&
                    q.next());
            latest = q.value(0).toInt();
            QVERIFY(q.exec(
                QStringLiteral("DELETE FROM schema_migrations WHERE version = %1").arg(latest)));
            QVERIFY(q.exec(QStringLiteral("PRAGMA wal_checkpoint(TRUNCATE)")));
            q.finish();
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("downgrade"));
        QFile::remove(path + QStringLiteral("-wal"));
        QFile::remove(path + QStringLiteral("-shm"));
        const QStringList before = listing(m_dir.filePath(QStringLiteral("old")));

        const Run list = idempo(source, {QStringLiteral("list")});
        QCOMPARE(list.exitCode, 69);
        QCOMPARE(list.json.value(QStringLiteral("error")).toString(),
                 QStringLiteral("schema_mismatch"));
        const QString message = list.json.value(QStringLiteral("message")).toString();
        QVERIFY2(message.contains(QStringLiteral("schema version %1, older than this build's %2")
                                      .arg(latest - 1)
                                      .arg(latest)),
                 qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("idempo init")), qPrintable(message));
        QCOMPARE(listing(m_dir.filePath(QStringLiteral("old"))), before);
    }
};

QTEST_GUILESS_MAIN(TestCliLedgerFaults)
#include "tst_cli_ledgerfaults.moc"
