// SPDX-License-Identifier: Apache-2.0
#include "auditverify.h"

#include "auditchain.h"

namespace idempo {

AuditVerify::AuditVerify(LedgerStore &store) : m_store(store) {}

AuditVerify::Result AuditVerify::run(const std::string &expectHead)
{
    constexpr int kPage = 1000;
    AuditChainVerifier verifier;
    Result result;
    // Read before the records: a record appended meanwhile then only extends the chain.
    result.head = m_store.auditHead();
    std::int64_t lastSeq = 0;
    std::int64_t after = -1;
    for (;;) {
        const std::vector<AuditRecord> page = m_store.auditLog(after, kPage);
        for (const AuditRecord &record : page) {
            ++result.records;
            if (verifier.add(record)) {
                result.lastHash = record.hash;
                lastSeq = record.seq;
                if (!expectHead.empty() && record.hash == expectHead)
                    result.anchorSeq = record.seq;
            }
        }
        if (static_cast<int>(page.size()) < kPage || !verifier.ok())
            break;
        after = page.back().seq;
    }
    result.ok = verifier.ok();
    result.firstBad = verifier.firstBad();
    result.problem = verifier.problem();
    if (result.ok && result.head && result.head->seq > lastSeq) {
        result.ok = false;
        result.firstBad = lastSeq + 1;
        result.problem = "the chain ends at record " + std::to_string(lastSeq) +
                         " but the ledger's head names record " + std::to_string(result.head->seq) +
                         ": the newest records were removed";
    } else if (result.ok && result.head && result.head->seq == lastSeq && lastSeq > 0 &&
               result.head->hash != result.lastHash) {
        result.ok = false;
        result.firstBad = lastSeq;
        result.problem = "record " + std::to_string(lastSeq) +
                         " is not the record the ledger's head names (hash " + result.head->hash +
                         "): it was replaced";
    }
    result.chainIntact = result.ok;
    if (result.ok && !expectHead.empty() && !result.anchorSeq) {
        // No record is at fault: the chain verifies, it just does not hold that hash.
        result.ok = false;
        result.problem = "the expected head " + expectHead + " is no record of this chain (" +
                         std::to_string(lastSeq) +
                         " records, all intact): it is another ledger's, or this ledger's "
                         "records up to it were rewritten";
    }
    return result;
}

nlohmann::json AuditVerify::toJson(const Result &result)
{
    return {
        {"ok", result.ok},
        {"records", result.records},
        {"first_bad_seq", result.firstBad ? nlohmann::json(*result.firstBad) : nlohmann::json()},
        {"problem", result.problem.empty() ? nlohmann::json() : nlohmann::json(result.problem)},
        {"head_hash", result.lastHash},
        {"ledger_head", result.head
                            ? nlohmann::json{{"seq", result.head->seq}, {"hash", result.head->hash}}
                            : nlohmann::json()},
        {"expected_head_seq",
         result.anchorSeq ? nlohmann::json(*result.anchorSeq) : nlohmann::json()}};
}

} // namespace idempo
