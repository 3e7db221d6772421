// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>

#include "providerlookup.h"

namespace idempo {
class LedgerStore;

namespace sandbox {
class SandboxJournal;
}

/// ProviderLookup over the sandbox's effect journals (table `sandbox_effects` beside the
/// ledger, embedded or PostgreSQL): the simulated providers' record of every effect they
/// performed, by the key they were given. It answers only for the operations it covers: a step
/// of a run the sandbox started with the engine (not a naive run), under the key
/// `run_id:step_id`, whose provider can be asked by key. For those, an effect is Found (Pending
/// while its confirmation is not due at the ledger's clock) and no effect is NotFound. For
/// every other operation it cannot know, and says so: Unsupported, so that reconciliation hands
/// the operation to a person instead of taking silence for "never happened".
class JournalLookup final : public ProviderLookup
{
public:
    /// Asks `journal`, the sandbox journal of `store` (LedgerStore::sandboxJournal()); `store`
    /// must outlive the lookup.
    JournalLookup(LedgerStore &store, std::unique_ptr<sandbox::SandboxJournal> journal);
    ~JournalLookup() override;
    ProviderEvidence lookup(const Operation &op) override;

private:
    LedgerStore &m_store;
    std::unique_ptr<sandbox::SandboxJournal> m_journal;
};

/// The lookup reconciliation hands to the guarded actions for `store`: the sandbox journals
/// when the store has room for them, else NoProviderLookup.
std::unique_ptr<ProviderLookup> openProviderLookup(LedgerStore &store);

} // namespace idempo
