// SPDX-License-Identifier: Apache-2.0
#include "auditchain.h"

#include <nlohmann/json.hpp>

#include "canonicaljson.h"

namespace idempo {

nlohmann::json auditHashedFields(const AuditRecord &record)
{
    const AuditEntry &e = record.entry;
    nlohmann::json j = {{"seq", record.seq},
                        {"at_ms", record.atMs},
                        {"who", e.who},
                        {"role", e.role},
                        {"action", e.action},
                        {"target", e.target},
                        {"reason", e.reason},
                        {"before_state", e.beforeState},
                        {"after_state", e.afterState},
                        {"approval_id", e.approvalId},
                        {"detail", e.detail},
                        {"prev_hash", record.prevHash}};
    if (!record.targetPrevHash.empty())
        j["target_prev_hash"] = record.targetPrevHash;
    return j;
}

std::string auditHash(const AuditRecord &record)
{
    return payloadFingerprint(auditHashedFields(record));
}

AuditRecord chainAuditEntry(const AuditEntry &entry, std::int64_t seq, std::int64_t atMs,
                            const std::string &prevHash, const std::string &targetPrevHash)
{
    AuditRecord record;
    record.seq = seq;
    record.atMs = atMs;
    record.entry = entry;
    record.prevHash = prevHash;
    record.targetPrevHash = targetPrevHash;
    record.hash = auditHash(record);
    return record;
}

std::string operationSnapshot(const Operation &op)
{
    return canonicalJson(
        {{"state", stateName(op.state)},
         {"version", op.version},
         {"fencing_token", op.fencingToken},
         {"attempt", op.attempt},
         {"max_attempts", op.maxAttempts},
         {"receipt", op.receipt},
         {"error_class",
          op.errorClass ? nlohmann::json(errorClassName(*op.errorClass)) : nlohmann::json()}});
}

void completeAuditEntry(AuditEntry &entry, const Operation *before, const Operation *after)
{
    if (entry.beforeState.empty() && before)
        entry.beforeState = operationSnapshot(*before);
    if (entry.afterState.empty() && after)
        entry.afterState = operationSnapshot(*after);
}

bool AuditChainVerifier::add(const AuditRecord &record)
{
    if (m_firstBad)
        return false;
    const auto bad = [&](std::string problem) {
        m_firstBad = record.seq;
        m_problem = std::move(problem);
        return false;
    };
    if (record.seq != m_lastSeq + 1)
        return bad("record " + std::to_string(record.seq) + " follows record " +
                   std::to_string(m_lastSeq) + ": records are missing or reordered");
    if (record.prevHash != m_lastHash)
        return bad("record " + std::to_string(record.seq) +
                   " does not point at the previous record's hash: a record before it was removed, "
                   "replaced or reordered");
    if (auditHash(record) != record.hash)
        return bad("record " + std::to_string(record.seq) +
                   " does not match its hash: it was edited");
    // Target links began with one record; from there on every record carries one.
    std::string &targetHead = m_targetHeads[record.entry.target];
    if (record.targetPrevHash.empty() && m_targetLinked)
        return bad("record " + std::to_string(record.seq) +
                   " carries no link to its target's previous record, though records before it do");
    if (!record.targetPrevHash.empty() &&
        record.targetPrevHash != (targetHead.empty() ? AuditGenesisHash : targetHead))
        return bad("record " + std::to_string(record.seq) +
                   " does not point at the previous record of " + record.entry.target +
                   ": a record of that target was removed or replaced");
    m_targetLinked = m_targetLinked || !record.targetPrevHash.empty();
    targetHead = record.hash;
    ++m_checked;
    m_lastSeq = record.seq;
    m_lastHash = record.hash;
    return true;
}

} // namespace idempo
