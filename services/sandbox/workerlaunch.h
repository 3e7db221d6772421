// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QProcess>
#include <QString>
#include <QStringList>

#include "sandboxworker.h"

namespace idempo::sandbox {

// How the process mode's driver (ProcessSandboxRunner) starts an `idempo worker` process.

/// The arguments of `idempo worker` that make it work with `options`: its namespace, queue,
/// owner, index, faults and seed, lease and visibility timeout, reconnect deadline and
/// --naive. The limits (maxMessages, idleExitMs) and the poll interval stay the worker's
/// defaults.
QStringList workerArguments(const WorkerOptions &options);

/// A process ready to start a worker on `ledgerUrl`, without a parent (the caller owns it):
/// its stderr goes to the driver's, the ledger travels in its environment (IDEMPO_LEDGER),
/// never in its argv, and it gets SIGKILL when the driver ends.
QProcess *newWorkerProcess(const QString &ledgerUrl);

} // namespace idempo::sandbox
