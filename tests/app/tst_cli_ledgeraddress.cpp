// SPDX-License-Identifier: Apache-2.0
// The real `idempo` binary and the ledger it is given: one that must exist, URL options, a
// read-only file, an unreachable one, addresses shown without their password, the default.
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include "clitestcase.h"

class TestCliLedgerAddress final : public CliTestCase
{
    Q_OBJECT

private Q_SLOTS:
    void namedLedgerMustExist()
    {
        m_ledger = QStringLiteral("sqlite:") + m_dir.filePath(QStringLiteral("typo/ledger.db"));
        const Run r =
            idempo({QStringLiteral("--json"), QStringLiteral("claim"), QStringLiteral("k:1"),
                    QStringLiteral("--payload"), QStringLiteral("{}")});
        QCOMPARE(r.exitCode, 69);
        QVERIFY(
            r.json[QStringLiteral("message")].toString().contains(QStringLiteral("idempo init")));
        QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("typo"))));
    }

    void ledgerUrlOptionsAreChecked_data()
    {
        QTest::addColumn<QString>("suffix");
        QTest::newRow("unknown option") << QStringLiteral("?sync=NORMAL");
        QTest::newRow("bad value") << QStringLiteral("?synchronous=OFF");
    }

    void ledgerUrlOptionsAreChecked()
    {
        QFETCH(QString, suffix);
        m_ledger += suffix;
        const Run r = idempo({QStringLiteral("--json"), QStringLiteral("list")});
        QCOMPARE(r.exitCode, 64);
        QCOMPARE(r.json[QStringLiteral("error")].toString(), QStringLiteral("invalid_argument"));
    }

    void readOnlyLedgerCanBeRead()
    {
        QVERIFY(idempo({QStringLiteral("claim"), QStringLiteral("k:ro"),
                        QStringLiteral("--payload"), QStringLiteral("{}")})
                    .exitCode == 0);
        const QString path = m_ledger.mid(7);
        QVERIFY(QFile::setPermissions(path, QFileDevice::ReadOwner));
        if (QFileInfo(path).isWritable())
            QSKIP("running as a user who can write read-only files (root)");
        const Run r =
            idempo({QStringLiteral("--json"), QStringLiteral("show"), QStringLiteral("k:ro")});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.json[QStringLiteral("state")].toString(), QStringLiteral("dispatching"));
    }

    void unreachableLedgerExits69()
    {
        m_ledger = QStringLiteral("sqlite:/proc/no-such-dir/ledger.db");
        const Run r = idempo({QStringLiteral("--json"), QStringLiteral("list")});
        QCOMPARE(r.exitCode, 69);
        QCOMPARE(r.json[QStringLiteral("error")].toString(), QStringLiteral("ledger_unavailable"));
    }

    /// Whatever the spelling of a password in the ledger address, the message names the ledger
    /// without it (libpq's parse, or only the scheme of what libpq cannot parse); so does the
    /// address taken from $IDEMPO_LEDGER.
    void ledgerAddressIsShownWithoutItsPassword_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("shown");
        const QString unparsable = QStringLiteral("(unparsable connection string)");
        QTest::newRow("query upper case")
            << QStringLiteral("postgresql://app@127.0.0.1:1/db?PASSWORD=s3cret") << 64
            << unparsable;
        QTest::newRow("scheme with one slash")
            << QStringLiteral("postgresql:/app:s3cret@127.0.0.1:1/db") << 64 << unparsable;
        QTest::newRow("unknown scheme")
            << QStringLiteral("mysql://app:s3cret@127.0.0.1/db") << 64 << unparsable;
        QTest::newRow("upper-case scheme")
            << QStringLiteral("POSTGRESQL://app:s3cret@127.0.0.1:1/db") << 69
            << QStringLiteral("postgresql://app@127.0.0.1:1/db");
        QTest::newRow("percent-encoded keyword")
            << QStringLiteral("postgresql://app@127.0.0.1:1/db?pass%77ord=s3cret") << 69
            << QStringLiteral("postgresql://app@127.0.0.1:1/db");
        QTest::newRow("keywords") << QStringLiteral("host=127.0.0.1 port=1 password=s3cret") << 69
                                  << QStringLiteral("host=127.0.0.1 port=1");
    }

    void ledgerAddressIsShownWithoutItsPassword()
    {
        QFETCH(QString, address);
        QFETCH(int, exitCode);
        QFETCH(QString, shown);
        for (const bool fromEnvironment : {false, true}) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert(QStringLiteral("HOME"), m_dir.path());
            env.insert(QStringLiteral("PGCONNECT_TIMEOUT"), QStringLiteral("2"));
            QStringList args{QStringLiteral("list")};
            if (fromEnvironment)
                env.insert(QStringLiteral("IDEMPO_LEDGER"), address);
            else
                args = QStringList{QStringLiteral("--ledger"), address} + args;
            for (const bool json : {false, true}) {
                p.setProcessEnvironment(env);
                p.start(QStringLiteral(IDEMPO_CLI_PATH),
                        json ? QStringList{QStringLiteral("--json")} + args : args);
                QVERIFY(p.waitForFinished(30'000));
                const QByteArray output = p.readAllStandardOutput() + p.readAllStandardError();
                QCOMPARE(p.exitCode(), exitCode);
                QVERIFY2(!output.contains("s3cret"), output.constData());
                QVERIFY2(output.contains(shown.toUtf8()), output.constData());
            }
        }
    }

    void defaultLedgerInUserDataDir()
    {
        const Run r = finish(start({QStringLiteral("--json"), QStringLiteral("init")}));
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.json[QStringLiteral("ledger")].toString().startsWith(
                     QStringLiteral("sqlite:") + m_dir.filePath(QStringLiteral("xdg"))),
                 r.out.constData());
        QVERIFY(QFile::exists(m_dir.filePath(QStringLiteral("xdg/idempo/ledger.db"))));
    }
};

QTEST_GUILESS_MAIN(TestCliLedgerAddress)
#include "tst_cli_ledgeraddress.moc"
