// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <nlohmann/json.hpp>

namespace idempo {
class Engine;
}

namespace idempo::cli {

struct BenchOptions
{
    int cycles = 2000; ///< claim → complete → duplicate-claim cycles per measured round
    int workers = 1;   ///< concurrent threads, each with its own connection
};

/// `idempo bench claim`: runs claim → complete → duplicate claim (replayed) cycles through the
/// engine, and the same SQL statements raw (no validation, fingerprinting or policy) on a fresh
/// ledger of the same kind, alternating rounds and keeping each side's best.
/// Report JSON: {"ledger", "workers", "cycles", "engine_cycles_per_s", "raw_cycles_per_s",
/// "ratio", "rounds"}.
nlohmann::json benchClaim(Engine &engine, const BenchOptions &options);

/// The report as a few lines of text.
std::string benchReportText(const nlohmann::json &report);

} // namespace idempo::cli
