// SPDX-License-Identifier: Apache-2.0
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "emptystate.h"
#include "mainwindow.h"
#include "overviewview.h"

using namespace idempo;

/// A PostgreSQL database that holds no Idempo schema (run through tests/pg/with-postgres.sh,
/// whose fresh database has none; skipped without it): the window says to run `idempo init`,
/// never shows live updates, and `--quit-after-load` exits 69.
class TestConsoleNoSchema final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void windowSaysRunInit();
    void quitAfterLoadExits69();

private:
    QString m_url;
};

void TestConsoleNoSchema::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    m_url = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
    if (m_url.isEmpty())
        QSKIP("IDEMPO_TEST_POSTGRES_URL is not set (run through tests/pg/with-postgres.sh)");
}

void TestConsoleNoSchema::windowSaysRunInit()
{
    MainWindow window;
    window.setInteractive(false);
    QSignalSpy failed(&window, &MainWindow::ledgerFailed);
    QSignalSpy opened(&window, &MainWindow::ledgerOpened);
    window.show();
    window.openLedger(m_url);
    QVERIFY(failed.wait(30'000));
    QCOMPARE(opened.count(), 0);
    QVERIFY2(failed.at(0).at(0).toString().contains(QLatin1String("idempo init")),
             qPrintable(failed.at(0).at(0).toString()));
    QVERIFY(window.statusText().contains(QLatin1String("NOT CONNECTED")));
    QVERIFY(!window.statusText().contains(QLatin1String("live updates")));
    for (LedgerView *v : window.views()) {
        if (auto *overview = qobject_cast<OverviewView *>(v))
            QVERIFY2(overview->unavailableText().contains(QLatin1String("idempo init")),
                     qPrintable(overview->unavailableText()));
        if (EmptyState *e = v->emptyState())
            QVERIFY(e->unavailable().contains(QLatin1String("idempo init")));
    }
}

void TestConsoleNoSchema::quitAfterLoadExits69()
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(IDEMPO_CONSOLE_PATH),
            {QStringLiteral("--ledger"), m_url, QStringLiteral("--quit-after-load")});
    QVERIFY(p.waitForFinished(60'000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 69);
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(err.contains("idempo init"), err.constData());
}

QTEST_MAIN(TestConsoleNoSchema)
#include "tst_consolenoschema.moc"
