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
/// approvals, run record, every audit record that targets it, and the chain proof: for each of
/// those records the link of the record after it in the chain (seq, prev_hash, hash), and the
/// chain's head (seq and hash) when the pack was made. verify() checks a pack offline with the
/// chain's own hash (auditchain.h). What a pack proves and what it cannot: docs/evidence-pack.md.
class EvidencePack final
{
public:
    /// The "format" member every pack carries.
    static constexpr const char *Format = "idempo-evidence-pack";
    static constexpr int Version = 1;

    /// The pack of operation `ns`/`key`. Throws Error(NotFound) for an unknown operation.
    static nlohmann::json build(LedgerStore &store, const std::string &ns, const std::string &key);

    struct Verdict
    {
        bool ok = true;
        std::int64_t records = 0;           ///< audit records checked
        std::optional<std::int64_t> badSeq; ///< the audit record at fault, when one is
        std::string problem;                ///< one sentence, naming what is wrong
    };
    /// Recomputes every audit record's hash and checks the links and the head. Never throws:
    /// a pack that is not a pack is a verdict too.
    static Verdict verify(const nlohmann::json &pack);
    static nlohmann::json toJson(const Verdict &verdict);
};

} // namespace idempo
