// SPDX-License-Identifier: Apache-2.0
// The console's saved ledgers keep only what libpq's parse says is not secret: for every
// spelling of a password the settings file never holds it, a file an earlier version wrote with
// one is rewritten without it, and (under tests/pg/with-postgres.sh) a saved profile still
// connects by its non-secret fields, the password coming from PGPASSFILE.
#include <QCoreApplication>
#include <QFile>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>

#include "connectionprofiles.h"
#include "error.h"
#include "ledgerfactory.h"
#include "pgconnection.h"

using namespace idempo;

namespace {

QByteArray settingsFile()
{
    QSettings settings;
    settings.sync();
    QFile file(settings.fileName());
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

QString testServer()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
}

} // namespace

class TestConnectionProfiles final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        QCoreApplication::setOrganizationName(QStringLiteral("idempo"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_connectionprofiles"));
    }

    void init()
    {
        QSettings settings;
        settings.clear();
        settings.sync();
    }

    void settingsNeverHoldTheSecret_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<QString>("secret"); ///< as written in the address
        QTest::addColumn<QString>("kept");   ///< what the profile keeps; empty: not kept at all
        QTest::newRow("uri user info")
            << QStringLiteral("postgresql://app:s3cret@db.internal:5433/ledger")
            << QStringLiteral("s3cret")
            << QStringLiteral("postgresql://app@db.internal:5433/ledger");
        QTest::newRow("uri percent-encoded keyword")
            << QStringLiteral(
                   "postgresql://app@db.internal/ledger?pass%77ord=s3cret&sslmode=require")
            << QStringLiteral("s3cret")
            << QStringLiteral("postgresql://app@db.internal/ledger?sslmode=require");
        QTest::newRow("uri query")
            << QStringLiteral("postgres://db/ledger?password=s3cret") << QStringLiteral("s3cret")
            << QStringLiteral("postgres://db/ledger");
        QTest::newRow("uri encoded password")
            << QStringLiteral("postgresql://app:s3%63ret@db/ledger") << QStringLiteral("s3%63ret")
            << QStringLiteral("postgresql://app@db/ledger");
        QTest::newRow("upper-case scheme")
            << QStringLiteral("POSTGRESQL://app:s3cret@db/ledger") << QStringLiteral("s3cret")
            << QStringLiteral("postgresql://app@db/ledger");
        QTest::newRow("uri sslpassword")
            << QStringLiteral("postgresql://db/ledger?sslpassword=s3cret")
            << QStringLiteral("s3cret") << QStringLiteral("postgresql://db/ledger");
        QTest::newRow("keywords") << QStringLiteral("host=db dbname=ledger password='s3cret'")
                                  << QStringLiteral("s3cret")
                                  << QStringLiteral("dbname=ledger host=db");
        QTest::newRow("service") << QStringLiteral("service=prod password=s3cret")
                                 << QStringLiteral("s3cret") << QStringLiteral("service=prod");
        QTest::newRow("upper-case query keyword")
            << QStringLiteral("postgresql://app@db/ledger?PASSWORD=s3cret")
            << QStringLiteral("s3cret") << QString();
        QTest::newRow("scheme with one slash") << QStringLiteral("postgresql:/app:s3cret@db/ledger")
                                               << QStringLiteral("s3cret") << QString();
    }

    void settingsNeverHoldTheSecret()
    {
        QFETCH(QString, address);
        QFETCH(QString, secret);
        QFETCH(QString, kept);
        ConnectionProfiles::save({{QStringLiteral("Production ledger"), address}});
        ConnectionProfiles::setLastUrl(address);
        const QByteArray file = settingsFile();
        QVERIFY2(!file.contains(secret.toUtf8()), file.constData());
        QVERIFY2(!file.contains("s3cret"), file.constData());

        const QList<ConnectionProfiles::Profile> profiles = ConnectionProfiles::load();
        QCOMPARE(profiles.size(), kept.isEmpty() ? 1 : 2);
        QCOMPARE(profiles.first().url, defaultLedgerUrl());
        if (!kept.isEmpty()) {
            QCOMPARE(profiles.last().name, QStringLiteral("Production ledger"));
            QCOMPARE(profiles.last().url, kept);
        }
        QCOMPARE(ConnectionProfiles::lastUrl(), kept.isEmpty() ? defaultLedgerUrl() : kept);
        QCOMPARE(ConnectionProfiles::refusal(address).isEmpty(), kept.isEmpty());
        QVERIFY(!ConnectionProfiles::shown(address).contains(QLatin1String("s3")));
    }

    /// A settings file written with a password (by an earlier version) loses it on first read,
    /// entries past the last one kept included.
    void secretsWrittenEarlierAreRemoved()
    {
        {
            QSettings settings;
            settings.beginWriteArray(QStringLiteral("profiles"));
            const QStringList urls{QStringLiteral("postgresql://app@db/ledger?pass%77ord=s3cret"),
                                   QStringLiteral("postgresql://app@db/ledger?PASSWORD=s3cret"),
                                   QStringLiteral("host=db password=s3cret")};
            for (int i = 0; i < urls.size(); ++i) {
                settings.setArrayIndex(i);
                settings.setValue(QStringLiteral("name"), QStringLiteral("p%1").arg(i));
                settings.setValue(QStringLiteral("url"), urls.at(i));
            }
            settings.endArray();
            settings.setValue(QStringLiteral("lastLedger"),
                              QStringLiteral("POSTGRESQL://app:s3cret@db/ledger"));
        }
        QVERIFY(settingsFile().contains("s3cret"));
        const QList<ConnectionProfiles::Profile> profiles = ConnectionProfiles::load();
        QCOMPARE(profiles.size(), 3);
        QCOMPARE(profiles.at(1).url, QStringLiteral("postgresql://app@db/ledger"));
        QCOMPARE(profiles.at(2).url, QStringLiteral("host=db"));
        QCOMPARE(ConnectionProfiles::lastUrl(), QStringLiteral("postgresql://app@db/ledger"));
        const QByteArray file = settingsFile();
        QVERIFY2(!file.contains("s3cret"), file.constData());
    }

    /// A profile saved from an address with a password connects by the fields it kept, with the
    /// password from PGPASSFILE, and without that file is refused by the server.
    void savedProfileConnectsByItsNonSecretFields_data()
    {
        QTest::addColumn<QString>("spelling"); ///< %1 user, %2 password, %3 host:port
        QTest::newRow("user info") << QStringLiteral("postgresql://%1:%2@%3/idempo_test");
        QTest::newRow("percent-encoded keyword")
            << QStringLiteral("postgresql://%1@%3/idempo_test?pass%77ord=%2");
        QTest::newRow("upper-case scheme") << QStringLiteral("POSTGRESQL://%1:%2@%3/idempo_test");
    }

    void savedProfileConnectsByItsNonSecretFields()
    {
        QFETCH(QString, spelling);
        if (testServer().isEmpty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set: run under tests/pg/with-postgres.sh");
        const QUrl server(testServer());
        const QString role = QStringLiteral("idempo_profile_test");
        const QString password = QStringLiteral("pr0file-s3cret");
        {
            PgConnection admin(testServer().toStdString());
            admin.execScript("create role", "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE "
                                            "rolname = 'idempo_profile_test') "
                                            "THEN CREATE ROLE idempo_profile_test LOGIN PASSWORD "
                                            "'pr0file-s3cret'; END IF; END $$");
        }
        const QString hostPort = QStringLiteral("%1:%2").arg(server.host()).arg(server.port());
        ConnectionProfiles::save(
            {{QStringLiteral("Shared ledger"), spelling.arg(role, password, hostPort)}});
        QVERIFY(!settingsFile().contains(password.toUtf8()));
        const QString kept = ConnectionProfiles::load().last().url;
        QCOMPARE(kept, QStringLiteral("postgresql://%1@%2/idempo_test").arg(role, hostPort));

        QTemporaryDir dir;
        const QString passFile = dir.filePath(QStringLiteral("pgpass"));
        QFile pgpass(passFile);
        QVERIFY(pgpass.open(QIODevice::WriteOnly));
        pgpass.write(QStringLiteral("%1:%2:idempo_test:%3:%4\n")
                         .arg(server.host())
                         .arg(server.port())
                         .arg(role, password)
                         .toUtf8());
        pgpass.close();
        QVERIFY(pgpass.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));

        qputenv("PGPASSFILE", dir.filePath(QStringLiteral("absent")).toLocal8Bit());
        try {
            PgConnection refused(kept.toStdString());
            QFAIL("connected without a password");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::LedgerUnavailable);
        }
        qputenv("PGPASSFILE", passFile.toLocal8Bit());
        PgConnection connection(kept.toStdString());
        const PgResult who = connection.exec("who", "SELECT current_user");
        QCOMPARE(QString::fromStdString(who.text(0, 0)), role);
        qunsetenv("PGPASSFILE");
    }
};

QTEST_GUILESS_MAIN(TestConnectionProfiles)
#include "tst_connectionprofiles.moc"
