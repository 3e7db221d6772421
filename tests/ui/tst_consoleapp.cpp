// SPDX-License-Identifier: Apache-2.0
#include "consolefixture.h"

#include <QDir>
#include <QImage>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

/// Starts the real idempo-console binary.
class TestConsoleApp final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void loadsAndQuits();
    void refusesUnusableLedger();
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

void TestConsoleApp::savesScreenshots()
{
    idempo::test::ConsoleFixture f;
    f.populate();
    QTemporaryDir out;
    QCOMPARE(run({QStringLiteral("--ledger"), f.url(), QStringLiteral("--screenshot"), out.path()}), 0);
    const QStringList shots = QDir(out.path()).entryList({QStringLiteral("*.png")});
    QCOMPARE(shots.size(), 10); // eight tabs, the approve dialog and the DLQ replay dry run
    QVERIFY(shots.contains(QStringLiteral("dialog-approve.png")));
    QVERIFY(shots.contains(QStringLiteral("dialog-dlq-replay.png")));
    QVERIFY(!QImage(QDir(out.path()).filePath(shots.first())).isNull());
}

QTEST_GUILESS_MAIN(TestConsoleApp)
#include "tst_consoleapp.moc"
