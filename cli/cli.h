// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QStringList>

namespace idempo::cli {

/// Exit codes of `idempo` (sysexits.h values, so shells and supervisors know them).
enum ExitCode
{
    ExitOk = 0,       ///< done, including `claimed` and `replayed`
    ExitUsage = 64,   ///< bad command line
    ExitRefused = 65, ///< refused input or write: payload_mismatch, invalid key/JSON, stale_lease,
                      ///< illegal transition, not found
    ExitUnavailable = 69, ///< ledger unreachable or unusable
    ExitInternal = 70,    ///< unexpected storage failure
    ExitTempFail = 75,    ///< do not execute now: in_progress, retry_later, reconcile_required
};

/// Runs `idempo` with the process's raw arguments; refuses (exit 65) any that is not valid
/// UTF-8 rather than letting decoding replace bytes.
int run(int argc, char **argv);

/// Runs `idempo` with `arguments` (arguments[0] is the program name); prints to stdout/stderr
/// and returns the exit code.
int run(const QStringList &arguments);

} // namespace idempo::cli
