// SPDX-License-Identifier: Apache-2.0
// idempo-console: wiring only. Opens --ledger, $IDEMPO_LEDGER, the last ledger or the embedded one.
#include <cstdio>

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QPalette>
#include <QStyleFactory>
#include <QTimer>

#include "connectionprofiles.h"
#include "ledgerconnection.h"
#include "ledgerview.h"
#include "mainwindow.h"
#include "sandboxpanel.h"
#include "sandboxsession.h"
#include "screenshottour.h"

namespace {

/// A dark Fusion palette, to check the views without a dark desktop theme.
QPalette darkPalette()
{
    QPalette p;
    p.setColor(QPalette::Window, QColor(0x2b, 0x2d, 0x31));
    p.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
    p.setColor(QPalette::Base, QColor(0x1f, 0x20, 0x23));
    p.setColor(QPalette::AlternateBase, QColor(0x29, 0x2b, 0x2f));
    p.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
    p.setColor(QPalette::Button, QColor(0x35, 0x37, 0x3b));
    p.setColor(QPalette::ButtonText, QColor(0xe6, 0xe6, 0xe6));
    p.setColor(QPalette::Highlight, QColor(0x3b, 0x82, 0xd6));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9c, 0xa0));
    p.setColor(QPalette::ToolTipBase, QColor(0x35, 0x37, 0x3b));
    p.setColor(QPalette::ToolTipText, QColor(0xe6, 0xe6, 0xe6));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x80, 0x80, 0x80));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x80, 0x80, 0x80));
    return p;
}

} // namespace

int main(int argc, char *argv[])
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("idempo"));
    QApplication::setApplicationName(QStringLiteral("idempo-console"));
    QApplication::setApplicationVersion(QStringLiteral(IDEMPO_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("io.idempo.Console"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/io.idempo.Console.svg")));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Idempo operations console"));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption ledger(
        QStringLiteral("ledger"),
        QStringLiteral("Ledger to open (sqlite:PATH, postgresql://…, service=NAME)."),
        QStringLiteral("URL"));
    const QCommandLineOption quitAfterLoad(
        QStringLiteral("quit-after-load"),
        QStringLiteral("Exit 0 once the ledger opened and the first figures loaded (69 when it "
                       "cannot open or holds no Idempo schema)."));
    const QCommandLineOption screenshot(
        QStringLiteral("screenshot"),
        QStringLiteral("Save a PNG of every view into DIR, then exit."), QStringLiteral("DIR"));
    const QCommandLineOption dark(QStringLiteral("dark"), QStringLiteral("Use a dark palette."));
    const QCommandLineOption sandboxRuns(
        QStringLiteral("sandbox-runs"),
        QStringLiteral("With --screenshot on an embedded ledger: first write N sandbox runs (every "
                       "scenario, seed 42, "
                       "duplicate delivery and crash after effect) into a fresh namespace, so the "
                       "Sandbox view shows a report."),
        QStringLiteral("N"));
    parser.addOptions({ledger, quitAfterLoad, screenshot, dark, sandboxRuns});
    parser.process(app);

    if (parser.isSet(dark)) {
        QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
        QApplication::setPalette(darkPalette());
    }
    const bool batch = parser.isSet(quitAfterLoad) || parser.isSet(screenshot);
    QString url = parser.value(ledger);
    if (url.isEmpty())
        url = qEnvironmentVariable("IDEMPO_LEDGER");
    if (url.isEmpty())
        url = idempo::ConnectionProfiles::lastUrl();

    idempo::MainWindow window;
    window.setInteractive(!batch);
    if (batch) {
        QObject::connect(&window, &idempo::MainWindow::ledgerFailed, &app,
                         [](const QString &message) {
                             std::fprintf(stderr, "idempo-console: %s\n", qPrintable(message));
                             QApplication::exit(69);
                         });
    }
    if (parser.isSet(quitAfterLoad)) {
        QObject::connect(&window, &idempo::MainWindow::ledgerOpened, &app, [] {
            // One more round trip through the worker proves queries answer, not only the open.
            QTimer::singleShot(300, qApp, [] { QApplication::exit(0); });
        });
    }
    if (parser.isSet(screenshot)) {
        auto *tour = new idempo::ScreenshotTour(&window, parser.value(screenshot), &app);
        const int runs = parser.value(sandboxRuns).toInt();
        QObject::connect(&window, &idempo::MainWindow::ledgerOpened, tour, [&window, tour, runs] {
            idempo::SandboxPanel *panel = nullptr;
            for (idempo::LedgerView *v : window.views())
                if (auto *p = qobject_cast<idempo::SandboxPanel *>(v))
                    panel = p;
            if (runs <= 0 || !panel ||
                !idempo::SandboxSession::supportsLedger(window.connection()->url())) {
                tour->start(2500);
                return;
            }
            panel->setInteractive(false);
            panel->setRequest(
                QStringLiteral("all"), runs,
                {QStringLiteral("duplicate-delivery"), QStringLiteral("crash-after-effect")}, 42);
            QObject::connect(panel->session(), &idempo::SandboxSession::finished, tour,
                             [tour] { tour->start(2500); });
            QObject::connect(panel->session(), &idempo::SandboxSession::failed, tour,
                             [tour] { tour->start(2500); });
            panel->startRun();
        });
        QObject::connect(tour, &idempo::ScreenshotTour::finished, &app,
                         [](bool ok) { QApplication::exit(ok ? 0 : 1); });
    }
    window.show();
    window.openLedger(url);
    return QApplication::exec();
}
