// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "actionrecords.h"

namespace idempo {

/// The prev_hash of the first audit record: 64 zeros.
inline constexpr const char *AuditGenesisHash =
    "0000000000000000000000000000000000000000000000000000000000000000";

/// What of an audit record its hash covers: {seq, at_ms, who, role, action, target, reason,
/// before_state, after_state, approval_id, detail, prev_hash, target_prev_hash} (every
/// JSON-valued field as its text; target_prev_hash only when the record carries one).
nlohmann::json auditHashedFields(const AuditRecord &record);

/// The hash of an audit record: lowercase hex SHA-256 over the RFC 8785 canonical JSON of
/// auditHashedFields(). Editing any field, or moving the record to another place in the chain
/// or among its target's records, changes it.
std::string auditHash(const AuditRecord &record);

/// The record `entry` becomes as number `seq`, appended at `atMs` after a record whose hash is
/// `prevHash`, its target's newest record having hash `targetPrevHash` (AuditGenesisHash when
/// it has none); its hash is computed.
AuditRecord chainAuditEntry(const AuditEntry &entry, std::int64_t seq, std::int64_t atMs,
                            const std::string &prevHash, const std::string &targetPrevHash);

/// The parts of an operation an audit record keeps as before / after state, as canonical JSON
/// text: {"state", "version", "fencing_token", "attempt", "max_attempts", "receipt",
/// "error_class"}.
std::string operationSnapshot(const Operation &op);

/// Fills an entry's empty before / after state with operationSnapshot() of `before` and
/// `after` (each may be null: left empty then).
void completeAuditEntry(AuditEntry &entry, const Operation *before, const Operation *after);

/// Walks the chain record by record (in seq order, from the first) and names the first record
/// that breaks it: edited (hash), removed or reordered (seq not the next one, or prev_hash not
/// the previous record's hash), or linked to another than its target's previous record.
class AuditChainVerifier final
{
public:
    /// Checks the next record; false once the chain is broken (later records are not judged).
    bool add(const AuditRecord &record);

    bool ok() const { return !m_firstBad; }
    std::int64_t checked() const { return m_checked; }
    /// The seq of the first bad record.
    std::optional<std::int64_t> firstBad() const { return m_firstBad; }
    /// What is wrong with it, one sentence.
    const std::string &problem() const { return m_problem; }

private:
    std::int64_t m_checked = 0;
    std::int64_t m_lastSeq = 0;
    std::string m_lastHash = AuditGenesisHash;
    bool m_targetLinked = false;
    std::unordered_map<std::string, std::string> m_targetHeads; // target → its newest hash
    std::optional<std::int64_t> m_firstBad;
    std::string m_problem;
};

} // namespace idempo
