// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "simulatedprovider.h"

#include <string>
#include <vector>

namespace idempo {
class SqliteLedgerStore;
}

namespace idempo::sandbox {

/// A run the sandbox started, as recorded in the ledger file.
struct RunRecord
{
    std::string ns;
    std::string runId;
    std::string scenario;
    bool naive = false; ///< run by the consumer without an idempotency layer
};

/// The sandbox's own tables in the embedded ledger file (`sandbox_runs`, `sandbox_effects`),
/// so that `idempo check` in another process reads the providers' effect journals beside the
/// ledger. Created on first use; the engine's schema is not touched. Throws Error(Internal)
/// on storage failure.
class SandboxJournal final
{
public:
    explicit SandboxJournal(SqliteLedgerStore &store);

    void createTables();
    void addRuns(const std::vector<RunRecord> &runs);
    void addEffects(const std::vector<Effect> &effects);

    /// True when `ns` already holds sandbox runs (tables absent count as empty).
    bool hasRuns(const std::string &ns);
    std::vector<RunRecord> runs(const std::string &ns);
    std::vector<Effect> effects(const std::string &ns);

private:
    bool tablesExist();

    SqliteLedgerStore &m_store;
};

} // namespace idempo::sandbox
