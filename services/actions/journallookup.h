// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "providerlookup.h"

namespace idempo {
class SqliteLedgerStore;

/// ProviderLookup over the sandbox's effect journals (table `sandbox_effects` of the embedded
/// ledger): the simulated providers' record of every effect they performed, by business
/// operation key. An effect whose confirmation is not due yet (at `nowMs` of the ledger's
/// clock) is Pending.
class JournalLookup final : public ProviderLookup
{
public:
    explicit JournalLookup(SqliteLedgerStore &store);
    ProviderEvidence lookup(const Operation &op) override;

private:
    SqliteLedgerStore &m_store;
};

} // namespace idempo
