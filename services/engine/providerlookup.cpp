// SPDX-License-Identifier: Apache-2.0
#include "providerlookup.h"

namespace idempo {

std::string_view evidenceStatusName(ProviderEvidence::Status status)
{
    switch (status) {
    case ProviderEvidence::Status::Found:
        return "found";
    case ProviderEvidence::Status::NotFound:
        return "not_found";
    case ProviderEvidence::Status::Pending:
        return "pending";
    case ProviderEvidence::Status::Unsupported:
        return "unsupported";
    }
    return "unsupported";
}

nlohmann::json evidenceJson(const ProviderEvidence &e)
{
    return {{"status", evidenceStatusName(e.status)},
            {"provider", e.provider},
            {"reference", e.reference},
            {"answer", e.raw}};
}

ProviderEvidence NoProviderLookup::lookup(const Operation &)
{
    ProviderEvidence e;
    e.status = ProviderEvidence::Status::Unsupported;
    e.raw = {{"answer", "no provider lookup is configured for this ledger"}};
    return e;
}

} // namespace idempo
