// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>

#include <QSize>
#include <QString>

#include "mainwindow.h"

namespace idempo::test {

/// A console window as the ui suites use it: not interactive (no dialog on a failed open), shown
/// offscreen at `size` (the window's own when invalid) and open on `url`. Null when the ledger did
/// not open within the wait.
std::unique_ptr<MainWindow> openConsole(const QString &url, QSize size = {});

} // namespace idempo::test
