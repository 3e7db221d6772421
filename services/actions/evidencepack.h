// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ledgerstore.h"

namespace idempo {

/// The evidence pack of one operation for a compliance case (`idempo evidence`, the console's
/// "Export evidence pack…"): one JSON document with the operation's record, history,
/// approvals, run record, every audit record that targets it, and the chain proof: every other
/// chain record from the operation's first audit record to the chain's head when the pack was
/// made, whole, and that head (seq and hash). verify() checks a pack offline with the chain's own
/// hash (auditchain.h): the span without a gap up to the head, and the operation's state and
/// decisions against the hashed records. What a pack proves and what it cannot:
/// docs/evidence-pack.md.
class EvidencePack final
{
public:
    /// The "format" member every pack carries.
    static constexpr const char *Format = "idempo-evidence-pack";
    /// 2: the chain proof is every chain record from the operation's first audit record to the
    /// head, whole (1 held only the hash of the record after each one, and is refused).
    static constexpr int Version = 2;

    /// The pack of operation `ns`/`key`. Throws Error(NotFound) for an unknown operation.
    static nlohmann::json build(LedgerStore &store, const std::string &ns, const std::string &key);

    struct Verdict
    {
        bool ok = true;
        std::int64_t records = 0;           ///< the operation's audit records checked
        std::int64_t links = 0;             ///< other chain records checked between them
        std::optional<std::int64_t> badSeq; ///< the audit record at fault, when one is
        std::string problem;                ///< one sentence, naming what is wrong
    };
    /// Recomputes every record's hash, checks that the span links without a gap to the head,
    /// and that the operation record, history and approvals agree with the operation's records.
    /// Never throws: a pack that is not a pack is a verdict too.
    static Verdict verify(const nlohmann::json &pack);
    static nlohmann::json toJson(const Verdict &verdict);
};

} // namespace idempo
