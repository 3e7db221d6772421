// SPDX-License-Identifier: Apache-2.0
#include "consolewindow.h"

#include <QSignalSpy>

namespace idempo::test {

std::unique_ptr<MainWindow> openConsole(const QString &url, QSize size)
{
    auto window = std::make_unique<MainWindow>();
    window->setInteractive(false);
    if (size.isValid())
        window->resize(size);
    QSignalSpy opened(window.get(), &MainWindow::ledgerOpened);
    window->show();
    window->openLedger(url);
    if (!opened.wait())
        return nullptr;
    return window;
}

} // namespace idempo::test
