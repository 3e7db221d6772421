// SPDX-License-Identifier: Apache-2.0
#include "journallookup.h"

#include "ledgerstore.h"
#include "sandboxjournal.h"

namespace idempo {

JournalLookup::JournalLookup(LedgerStore &store) : m_store(store) {}

ProviderEvidence JournalLookup::lookup(const Operation &op)
{
    ProviderEvidence e;
    e.status = ProviderEvidence::Status::NotFound;
    e.provider = "sandbox journal";
    const std::int64_t now = m_store.nowMs();
    nlohmann::json effects = nlohmann::json::array();
    for (const sandbox::Effect &effect : sandbox::SandboxJournal::open(m_store)->effects(op.ns)) {
        if (effect.operationKey != op.key)
            continue;
        effects.push_back({{"provider", effect.provider}, {"effect_id", effect.effectId}, {"at_ms", effect.atMs},
                           {"confirmed_at_ms", effect.confirmedAtMs}});
        e.provider = effect.provider;
        if (effect.confirmedAtMs <= now) {
            e.status = ProviderEvidence::Status::Found;
            e.reference = effect.effectId;
        } else if (e.status != ProviderEvidence::Status::Found) {
            e.status = ProviderEvidence::Status::Pending;
        }
    }
    e.raw = {{"effects", effects}};
    return e;
}

} // namespace idempo
