// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "providerlookup.h"

namespace idempo {
class LedgerStore;

/// ProviderLookup over the sandbox's effect journals (table `sandbox_effects` of the store's
/// SandboxJournal): the simulated providers' record of every effect they performed, by business
/// operation key. An effect whose confirmation is not due yet (at `nowMs` of the ledger's
/// clock) is Pending. The embedded ledger's providerLookup(), whose providers are the sandbox's.
class JournalLookup final : public ProviderLookup
{
public:
    /// Looks up in `store`'s journal; `store` must outlive the lookup and have a journal.
    explicit JournalLookup(LedgerStore &store);
    ProviderEvidence lookup(const Operation &op) override;

private:
    LedgerStore &m_store;
};

} // namespace idempo
