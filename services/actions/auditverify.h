// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerstore.h"

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace idempo {

/// `idempo audit verify`: reads the whole audit log in seq order and checks its hash chain
/// (auditchain.h), naming the first record that was edited, removed or reordered.
class AuditVerify final
{
public:
    struct Result
    {
        bool ok = true;
        std::int64_t records = 0;              ///< records read
        std::optional<std::int64_t> firstBad;  ///< seq of the first bad record
        std::string problem;
        std::string lastHash;                  ///< the hash of the last good record (the chain's head when ok)
    };

    explicit AuditVerify(LedgerStore &store);
    Result run();
    static nlohmann::json toJson(const Result &result);

private:
    LedgerStore &m_store;
};

} // namespace idempo
