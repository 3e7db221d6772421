// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ledgerstore.h"

namespace idempo {

/// `idempo audit verify`: reads the whole audit log in seq order and checks its hash chain
/// (auditchain.h), naming the first record that was edited, removed or reordered. The chain's
/// end is compared with the head the ledger keeps beside it (LedgerStore::auditHead()), which
/// catches removed newest records; and, when given, with an anchor kept outside the ledger
/// (`--expect-head HASH`, a hash `idempo audit head` printed earlier), which must still be a
/// record of the chain: that also catches an owner who rewrote the chain and its head together.
class AuditVerify final
{
public:
    struct Result
    {
        bool ok = true;
        std::int64_t records = 0;             ///< records read
        std::optional<std::int64_t> firstBad; ///< seq of the first bad record
        std::string problem;
        std::string lastHash; ///< the hash of the last good record (the chain's head when ok)
        std::optional<AuditHead> head;         ///< the head the ledger keeps, when it keeps one
        std::optional<std::int64_t> anchorSeq; ///< the record whose hash is the expected head
        /// The chain itself verified and matched the ledger's head; only the expected head, when
        /// one was given, may be missing from it (a different ledger, or a rewritten chain).
        bool chainIntact = true;
    };

    explicit AuditVerify(LedgerStore &store);
    /// `expectHead`: empty, or the hash of a record the chain must still hold.
    Result run(const std::string &expectHead = {});
    static nlohmann::json toJson(const Result &result);

private:
    LedgerStore &m_store;
};

} // namespace idempo
