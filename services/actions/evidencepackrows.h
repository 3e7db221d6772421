// SPDX-License-Identifier: Apache-2.0
// What an evidence pack's export and its checks read and write (evidencepack.cpp,
// evidencepackagreement.cpp, evidencepackledger.cpp): the ledger's rows as the pack holds them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "error.h"
#include "ledgerstore.h"

namespace idempo::packrows {

inline constexpr int kPage = 1000;

/// A pack refused at audit record `seq` (none: the pack as a whole) for `why`: what the steps of
/// EvidencePack::verify() and verifyAgainst() throw, and the verdict says. Not an exception of
/// the standard's: those say the pack is malformed.
struct PackRefusal
{
    std::optional<std::int64_t> seq;
    std::string why;
};

/// An audit record as the chain hashes it (auditHashedFields(): every field as its stored text;
/// target_prev_hash only when it carries one), with its readable time and its hash.
nlohmann::json recordJson(const AuditRecord &r);

/// Every audit record of `target` up to record `headSeq`, in seq order.
std::vector<AuditRecord> targetRecords(LedgerStore &store, const std::string &target,
                                       std::int64_t headSeq);

/// Calls `visit` with every chain record from `from` to `to`, in seq order.
template <typename Visit>
void forChain(LedgerStore &store, std::int64_t from, std::int64_t to, Visit visit)
{
    for (std::int64_t after = from - 1; after < to;) {
        const std::vector<AuditRecord> page = store.auditLog(after, kPage);
        if (page.empty())
            throw Error(ErrorCode::Internal,
                        "audit record " + std::to_string(after + 1) + " is missing from the chain");
        for (const AuditRecord &r : page) {
            if (r.seq > to)
                return;
            visit(r);
            after = r.seq;
        }
    }
}

nlohmann::json approvalJson(const ApprovalRecord &a);

/// The member `name` of the pack's part `j` as text; throws std::runtime_error naming `where`
/// when it is absent or not text.
std::string textOf(const nlohmann::json &j, const char *name, const std::string &where);

/// The member `name` of the pack's part `j` as a whole number; throws std::runtime_error naming
/// `where` when it is absent or not one.
std::int64_t integerOf(const nlohmann::json &j, const char *name, const std::string &where);

/// The first member in which two JSON objects differ, named.
std::string firstDifference(const nlohmann::json &a, const nlohmann::json &b);

} // namespace idempo::packrows
