// SPDX-License-Identifier: Apache-2.0
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "consolefixture.h"

/// Starts the real idempo-console binary.
class TestConsoleApp final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void loadsAndQuits();
    void refusesUnusableLedger();
    void namesAFailedLedgerWithoutItsPassword_data();
    void namesAFailedLedgerWithoutItsPassword();
    void savesScreenshots();

private:
    static int run(const QStringList &args, QByteArray *err = nullptr);
    QTemporaryDir m_home;
};

int TestConsoleApp::run(const QStringList &args, QByteArray *err)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(IDEMPO_CONSOLE_PATH), args);
    if (!p.waitForFinished(60'000))
        return -1;
    if (err)
        *err = p.readAllStandardError();
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2;
}

void TestConsoleApp::loadsAndQuits()
{
    idempo::test::ConsoleFixture f;
    f.populate();
    QCOMPARE(run({QStringLiteral("--ledger"), f.url(), QStringLiteral("--quit-after-load")}), 0);
}

void TestConsoleApp::refusesUnusableLedger()
{
    QByteArray err;
    QCOMPARE(run({QStringLiteral("--ledger"), QStringLiteral("sqlite:/nonexistent-dir/x/ledger.db"),
                  QStringLiteral("--quit-after-load")},
                 &err),
             69);
    QVERIFY2(err.contains("ledger"), err.constData());
}

void TestConsoleApp::namesAFailedLedgerWithoutItsPassword_data()
{
    QTest::addColumn<QString>("address");
    QTest::addColumn<QString>("shown");
    QTest::newRow("user info")
        << QStringLiteral("postgresql://app:s3cret@127.0.0.1:1/db?connect_timeout=2")
        << QStringLiteral("postgresql://app@127.0.0.1:1/db?connect_timeout=2");
    QTest::newRow("percent-encoded keyword")
        << QStringLiteral("postgresql://app@127.0.0.1:1/db?pass%77ord=s3cret")
        << QStringLiteral("postgresql://app@127.0.0.1:1/db");
    QTest::newRow("upper-case keyword")
        << QStringLiteral("postgresql://app@127.0.0.1:1/db?PASSWORD=s3cret")
        << QStringLiteral("(unparsable connection string)");
}

/// A ledger that cannot be opened is named without its password, from --ledger and from
/// $IDEMPO_LEDGER, and nothing of the address lands in the settings file.
void TestConsoleApp::namesAFailedLedgerWithoutItsPassword()
{
    QFETCH(QString, address);
    QFETCH(QString, shown);
    for (const bool fromEnvironment : {false, true}) {
        QTemporaryDir home;
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("HOME"), home.path());
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), home.filePath(QStringLiteral("config")));
        env.insert(QStringLiteral("XDG_DATA_HOME"), home.filePath(QStringLiteral("data")));
        QStringList args{QStringLiteral("--quit-after-load")};
        if (fromEnvironment)
            env.insert(QStringLiteral("IDEMPO_LEDGER"), address);
        else
            args << QStringLiteral("--ledger") << address;
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(IDEMPO_CONSOLE_PATH), args);
        QVERIFY(p.waitForFinished(60'000));
        QCOMPARE(p.exitCode(), 69);
        const QByteArray output = p.readAllStandardError() + p.readAllStandardOutput();
        QVERIFY2(!output.contains("s3cret"), output.constData());
        QVERIFY2(output.contains(shown.toUtf8()), output.constData());
        QDirIterator files(home.path(), QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
        while (files.hasNext()) {
            QFile file(files.next());
            QVERIFY(file.open(QIODevice::ReadOnly));
            QVERIFY2(!file.readAll().contains("s3cret"), qPrintable(file.fileName()));
        }
    }
}

void TestConsoleApp::savesScreenshots()
{
    idempo::test::ConsoleFixture f;
    f.populate();
    QTemporaryDir out;
    QCOMPARE(run({QStringLiteral("--ledger"), f.url(), QStringLiteral("--screenshot"), out.path()}),
             0);
    const QStringList shots = QDir(out.path()).entryList({QStringLiteral("*.png")});
    // ten tabs, Find's drawer twice and a refused payload field, the approve dialog and the DLQ
    // replay dry run
    QCOMPARE(shots.size(), 15);
    for (const char *drawer :
         {"09-find-drawer.png", "09-find-drawer-audit.png", "09-find-bad-pointer.png"})
        QVERIFY2(shots.contains(QLatin1String(drawer)), drawer);
    QVERIFY(shots.contains(QStringLiteral("dialog-approve.png")));
    QVERIFY(shots.contains(QStringLiteral("dialog-dlq-replay.png")));
    QVERIFY(!QImage(QDir(out.path()).filePath(shots.first())).isNull());
}

QTEST_GUILESS_MAIN(TestConsoleApp)
#include "tst_consoleapp.moc"
