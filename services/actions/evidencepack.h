// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ledgerstore.h"

namespace idempo {

/// The evidence pack of one operation for a compliance case (`idempo evidence`, the console's
/// "Export evidence pack…"): one JSON document with the operation's record, history,
/// approvals, run record, every audit record that targets it up to the chain's head when the
/// pack was made, and that head (seq and hash). Each record links to the operation's record
/// before it (auditchain.h), so the pack holds no other target's records; only records written
/// before those links existed come with the chain around them (the links). verify() checks a
/// pack offline with the chain's own hash; verifyAgainst() also checks it against the ledger.
/// What a pack proves and what it cannot: docs/evidence-pack.md.
class EvidencePack final
{
public:
    /// The "format" member every pack carries.
    static constexpr const char *Format = "idempo-evidence-pack";
    /// 3: the operation's records link to one another (2 held every chain record from the
    /// operation's first to the head, and still verifies; 1 held only the hash of the record
    /// after each one, and is refused).
    static constexpr int Version = 3;

    /// The pack of operation `ns`/`key`. Throws Error(NotFound) for an unknown operation.
    static nlohmann::json build(LedgerStore &store, const std::string &ns, const std::string &key);

    /// What an export says of the pack it wrote (the console's status line): how many of the
    /// operation's audit records the pack holds and the chain head it was made at.
    struct Figures
    {
        std::int64_t auditRecords = 0;
        std::int64_t headSeq = 0; ///< 0: the ledger's chain was empty
    };
    /// The figures of `pack`, as build() makes it. Throws Error(InvalidArgument) naming the first
    /// part it lacks or that is not of its type; proves nothing (verify() does).
    static Figures figures(const nlohmann::json &pack);

    struct Verdict
    {
        bool ok = true;
        std::int64_t records = 0; ///< the operation's audit records checked
        std::int64_t links = 0;   ///< other chain records checked between them
        bool linked = false;      ///< the first record links to none before it: it is the first
        std::optional<std::int64_t> badSeq;     ///< the audit record at fault, when one is
        std::string problem;                    ///< one sentence, naming what is wrong
        bool againstLedger = false;             ///< verifyAgainst() made it
        std::int64_t ledgerRecords = 0;         ///< the ledger's chain records verified
        std::int64_t appendedSince = 0;         ///< the operation's records appended after the head
        std::optional<std::int64_t> versionNow; ///< the ledger's operation version
        std::optional<std::int64_t> versionPacked; ///< the pack's
        /// The operation's fields not compared: the ledger no longer holds them as they were at
        /// the pack's (older) version.
        std::vector<std::string> uncompared;

        /// Refused at audit record `seq` (none: the pack as a whole) for `why`.
        Verdict &refuse(std::optional<std::int64_t> seq, std::string why);
    };
    /// Recomputes every record's hash, checks that the operation's records link to one another
    /// (and the span of records written before such links without a gap), and that the
    /// operation record, history and approvals agree with the operation's records.
    /// Never throws: a pack that is not a pack is a verdict too.
    static Verdict verify(const nlohmann::json &pack);
    /// The pack in `text`; discarded, with `problem` said, when it is not JSON or names a member
    /// twice in one object.
    static nlohmann::json parse(const std::string &text, std::string &problem);
    /// verify(), then against `store`: its chain verifies and holds the pack's head; the pack's
    /// records are the ledger's and none of the operation's up to the head is left out; the
    /// operation record (at the pack's version), every history event and approval are the
    /// ledger's. Throws only what the store throws.
    static Verdict verifyAgainst(LedgerStore &store, const nlohmann::json &pack);
    static nlohmann::json toJson(const Verdict &verdict);
};

} // namespace idempo
