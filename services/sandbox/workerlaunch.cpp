// SPDX-License-Identifier: Apache-2.0
#include "workerlaunch.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <QProcessEnvironment>

namespace idempo::sandbox {

QStringList workerArguments(const WorkerOptions &options)
{
    QStringList args{QStringLiteral("--namespace"),
                     QString::fromStdString(options.ns),
                     QStringLiteral("worker"),
                     QStringLiteral("--queue"),
                     QString::fromStdString(options.queue),
                     QStringLiteral("--owner"),
                     QString::fromStdString(options.owner),
                     QStringLiteral("--index"),
                     QString::number(options.index),
                     QStringLiteral("--faults"),
                     QString::fromStdString(options.faults.toList()),
                     QStringLiteral("--seed"),
                     QString::number(options.faults.seed()),
                     QStringLiteral("--lease-ms"),
                     QString::number(options.timings.leaseMs),
                     QStringLiteral("--vt-ms"),
                     QString::number(options.timings.visibilityTimeoutMs),
                     QStringLiteral("--reconnect-deadline"),
                     QString::number(static_cast<double>(options.reconnect.deadlineMs) / 1000.0)};
    if (options.naive)
        args << QStringLiteral("--naive");
    return args;
}

QProcess *newWorkerProcess(const QString &ledgerUrl)
{
    auto *process = new QProcess();
    process->setProcessChannelMode(QProcess::ForwardedErrorChannel);
    // A worker must not outlive its driver and go on consuming the shared queue: it gets
    // SIGKILL when the driver ends, however it ends. Not SIGTERM: finishing the message in
    // hand could send the next step's message after the next run took the queue over
    // (DriverLease), while a worker killed mid-message is a crash the ledger is built for.
    const pid_t driver = ::getpid();
    process->setChildProcessModifier([driver] {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != driver) // the driver ended before the line above
            ::raise(SIGKILL);
    });
    // The ledger travels in the worker's environment, which only its user can read: argv, which
    // `ps` shows to everyone, would carry a password of the address.
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("IDEMPO_LEDGER"), ledgerUrl);
    process->setProcessEnvironment(environment);
    return process;
}

} // namespace idempo::sandbox
