// SPDX-License-Identifier: Apache-2.0
#include "auditverify.h"

#include "auditchain.h"

namespace idempo {

AuditVerify::AuditVerify(LedgerStore &store) : m_store(store) {}

AuditVerify::Result AuditVerify::run()
{
    constexpr int kPage = 1000;
    AuditChainVerifier verifier;
    Result result;
    std::int64_t after = -1;
    for (;;) {
        const std::vector<AuditRecord> page = m_store.auditLog(after, kPage);
        for (const AuditRecord &record : page) {
            ++result.records;
            if (verifier.add(record))
                result.lastHash = record.hash;
        }
        if (static_cast<int>(page.size()) < kPage || !verifier.ok())
            break;
        after = page.back().seq;
    }
    result.ok = verifier.ok();
    result.firstBad = verifier.firstBad();
    result.problem = verifier.problem();
    return result;
}

nlohmann::json AuditVerify::toJson(const Result &result)
{
    return {{"ok", result.ok},
            {"records", result.records},
            {"first_bad_seq", result.firstBad ? nlohmann::json(*result.firstBad) : nlohmann::json()},
            {"problem", result.problem.empty() ? nlohmann::json() : nlohmann::json(result.problem)},
            {"head_hash", result.lastHash}};
}

} // namespace idempo
