// SPDX-License-Identifier: Apache-2.0
#include "evidencepack.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "auditchain.h"
#include "error.h"
#include "evidencepackagreement.h"
#include "evidencepackrows.h"
#include "recordjson.h"

namespace idempo {

using namespace packrows;

namespace {

/// Throws the first member of object `j` not in `known`: a member no check covers would be shown
/// to a reader as if it were verified.
void onlyMembers(const nlohmann::json &j, std::initializer_list<const char *> known,
                 const std::string &where)
{
    if (!j.is_object())
        throw std::runtime_error(where + " is not an object");
    for (const auto &[name, value] : j.items())
        if (std::none_of(known.begin(), known.end(), [&](const char *k) { return name == k; }))
            throw std::runtime_error(where + " has a member \"" + name + "\" that no check covers");
}

AuditRecord parseRecord(const nlohmann::json &j, const std::string &where)
{
    onlyMembers(j,
                {"seq", "at_ms", "at", "who", "role", "action", "target", "reason", "before_state",
                 "after_state", "approval_id", "detail", "prev_hash", "target_prev_hash", "hash"},
                where);
    AuditRecord r;
    r.seq = integerOf(j, "seq", where);
    r.atMs = integerOf(j, "at_ms", where);
    r.entry = {textOf(j, "who", where),         textOf(j, "role", where),
               textOf(j, "action", where),      textOf(j, "target", where),
               textOf(j, "reason", where),      textOf(j, "before_state", where),
               textOf(j, "after_state", where), textOf(j, "approval_id", where),
               textOf(j, "detail", where)};
    r.prevHash = textOf(j, "prev_hash", where);
    // Absent in version 2 packs, whose records predate target links.
    if (j.contains("target_prev_hash"))
        r.targetPrevHash = textOf(j, "target_prev_hash", where);
    r.hash = textOf(j, "hash", where);
    // The readable time is not hashed: it must say what the hashed at_ms says.
    if (j.contains("at") && j["at"] != timestampJson(r.atMs))
        throw std::runtime_error(where + "'s \"at\" is not its at_ms");
    return r;
}

/// Refuses what is no pack, or a pack of a version this build does not read.
void requireReadableFormat(const nlohmann::json &pack)
{
    if (!pack.is_object() || !pack.contains("format") || pack["format"] != EvidencePack::Format)
        throw PackRefusal{std::nullopt, std::string("not an evidence pack (no \"format\": \"") +
                                            EvidencePack::Format + "\")"};
    if (pack.contains("version") && pack["version"] == 1)
        throw PackRefusal{std::nullopt,
                          "older pack format (version 1): it links each record only to the next "
                          "one, so it cannot show that no audit record of the operation was left "
                          "out; export the pack again (idempo evidence KEY -o FILE)"};
    if (!pack.contains("version") ||
        (pack["version"] != 2 && pack["version"] != EvidencePack::Version))
        throw PackRefusal{std::nullopt, "pack version " +
                                            (pack.contains("version") ? pack["version"].dump()
                                                                      : std::string("missing")) +
                                            " is not one this build reads (2 or " +
                                            std::to_string(EvidencePack::Version) + ")"};
}

/// Throws the first member of the pack no check covers, and the first of what the exporter
/// states that does not have its one shape; and a run record not of the operation's run.
void checkStatedParts(const nlohmann::json &pack)
{
    onlyMembers(pack,
                {"format", "version", "exported_at", "exported_by", "ledger", "namespace", "key",
                 "operation", "history", "approvals", "run", "audit_records", "chain"},
                "the pack");
    // What the exporter states is not proven, but it has one shape.
    if (pack.contains("exported_by"))
        onlyMembers(pack["exported_by"], {"name", "role"}, "\"exported_by\"");
    for (const char *stated : {"exported_at", "ledger"})
        if (pack.contains(stated) && !pack[stated].is_string())
            throw std::runtime_error(std::string("\"") + stated + "\" is not text");
    if (pack.contains("exported_by"))
        for (const char *part : {"name", "role"})
            textOf(pack["exported_by"], part, "\"exported_by\"");
    // A run record is the operation's run's, or null for an operation without one.
    if (pack.contains("run") && pack.contains("operation") && pack["operation"].is_object()) {
        const std::string runId = pack["operation"].value("run_id", std::string());
        const nlohmann::json &run = pack["run"];
        if (!run.is_null() &&
            (runId.empty() || !run.is_object() || run.value("run_id", std::string()) != runId))
            throw std::runtime_error("the run record is not the operation's run (" +
                                     (runId.empty() ? std::string("it has none") : runId) + ")");
    }
}

/// The chain head the pack's chain proof names; refuses a pack without a proof.
AuditHead chainHead(const nlohmann::json &pack)
{
    if (!pack.contains("chain") || !pack["chain"].is_object() || !pack["chain"].contains("head") ||
        !pack["chain"].contains("links") || !pack["chain"]["links"].is_array())
        throw PackRefusal{std::nullopt, "the pack has no chain proof (\"chain\": {head, links})"};
    const nlohmann::json &chain = pack["chain"];
    onlyMembers(chain, {"head", "links"}, "the chain proof");
    onlyMembers(chain["head"], {"seq", "hash"}, "the chain head");
    return {integerOf(chain["head"], "seq", "the chain head"),
            textOf(chain["head"], "hash", "the chain head")};
}

/// The pack's records: the operation's (its "audit_records") and the chain links between them.
struct PackRecords
{
    std::map<std::int64_t, std::pair<AuditRecord, bool>> span; ///< seq → (record, mine), all
    std::vector<AuditRecord> mine;                             ///< the operation's, by seq
};

/// "audit record N" or "chain link N" for a record of the pack, as far as it can be read.
std::string placeOf(const char *kind, const nlohmann::json &j)
{
    return std::string(kind) + " " + (j.is_object() && j.contains("seq") ? j["seq"].dump() : "?");
}

/// Reads the pack's records of `target` up to `head` and its chain links, refusing records out
/// of order, of another target, beyond the head, filed in the wrong place or in the pack twice.
PackRecords readRecords(const nlohmann::json &pack, const std::string &target,
                        const AuditHead &head)
{
    if (!pack.contains("audit_records") || !pack["audit_records"].is_array())
        throw PackRefusal{std::nullopt, "the pack has no \"audit_records\" array"};
    PackRecords records;
    for (const nlohmann::json &j : pack["audit_records"]) {
        AuditRecord r = parseRecord(j, placeOf("audit record", j));
        const std::string name = "audit record " + std::to_string(r.seq);
        if (!records.mine.empty() && r.seq <= records.mine.back().seq)
            throw PackRefusal{r.seq, name + " is out of seq order in the pack"};
        if (r.entry.target != target)
            throw PackRefusal{r.seq, name + " targets " + r.entry.target + ", not " + target};
        if (r.seq > head.seq)
            throw PackRefusal{r.seq, name + " lies beyond the chain head the pack names (record " +
                                         std::to_string(head.seq) + ")"};
        records.span[r.seq] = {r, true};
        records.mine.push_back(std::move(r));
    }
    for (const nlohmann::json &j : pack["chain"]["links"]) {
        AuditRecord r = parseRecord(j, placeOf("chain link", j));
        const std::string name = "chain record " + std::to_string(r.seq);
        if (r.entry.target == target)
            throw PackRefusal{r.seq, name + " targets " + target +
                                         " but is filed among the chain links, not the audit "
                                         "records"};
        if (!records.span.emplace(r.seq, std::make_pair(r, false)).second)
            throw PackRefusal{r.seq, name + " is in the pack twice"};
    }
    if (records.mine.empty() && !records.span.empty())
        throw PackRefusal{records.span.begin()->first,
                          "the pack holds chain links but no audit record of " + target};
    return records;
}

/// Refuses the first record of the pack whose hash is not its own.
void checkHashes(const std::map<std::int64_t, std::pair<AuditRecord, bool>> &span)
{
    for (const auto &[seq, entry] : span)
        if (auditHash(entry.first) != entry.first.hash)
            throw PackRefusal{seq, (entry.second ? "audit record " : "chain record ") +
                                       std::to_string(seq) +
                                       " does not match its hash: it was edited"};
}

/// The operation's records among themselves: each linked one names the one before it.
void checkTargetLinks(const std::vector<AuditRecord> &mine, const std::string &target)
{
    for (std::size_t i = 0; i < mine.size(); ++i) {
        const AuditRecord &r = mine[i];
        const std::string name = "audit record " + std::to_string(r.seq);
        if (r.targetPrevHash.empty()) {
            if (i > 0 && !mine[i - 1].targetPrevHash.empty())
                throw PackRefusal{r.seq, name +
                                             " carries no link to the operation's previous "
                                             "record, though audit record " +
                                             std::to_string(mine[i - 1].seq) + " before it does"};
            continue;
        }
        if (i == 0 && r.targetPrevHash != AuditGenesisHash)
            throw PackRefusal{r.seq, name + " links to an earlier record of " + target +
                                         " that the pack does not hold: a record was removed"};
        if (i > 0 && r.targetPrevHash != mine[i - 1].hash)
            throw PackRefusal{r.seq, name + " does not point at audit record " +
                                         std::to_string(mine[i - 1].seq) +
                                         "'s hash, the operation's record before it in the pack: "
                                         "a record of the operation was removed or replaced"};
    }
}

/// The span the chain proves, from the operation's first record `from` to `spanEnd`: every
/// record of it in the pack, each pointing at the one before it, and no link beyond it; to the
/// head (`toHead`), the last is the head the pack names.
void checkSpanWithoutGap(const PackRecords &records, std::int64_t from, std::int64_t spanEnd,
                         const AuditHead &head, bool toHead)
{
    std::int64_t expected = from;
    std::string lastHash;
    for (const auto &[seq, entry] : records.span) {
        const AuditRecord &r = entry.first;
        if (seq > spanEnd) {
            if (!entry.second)
                throw PackRefusal{seq, "chain record " + std::to_string(seq) +
                                           " lies beyond the span the chain proof covers "
                                           "(records " +
                                           std::to_string(from) + " to " + std::to_string(spanEnd) +
                                           ")"};
            continue;
        }
        const std::string name =
            (entry.second ? "audit record " : "chain record ") + std::to_string(seq);
        if (seq != expected)
            throw PackRefusal{expected,
                              "chain record" +
                                  (seq - expected > 1 ? "s " + std::to_string(expected) + " to " +
                                                            std::to_string(seq - 1) + " are"
                                                      : " " + std::to_string(expected) + " is") +
                                  " missing from the pack: a record was removed (the pack must "
                                  "hold every record from " +
                                  std::to_string(from) + " to " + std::to_string(spanEnd) + ")"};
        if (seq == 1 && r.prevHash != AuditGenesisHash)
            throw PackRefusal{seq, name + " is the first of the chain but does not point at the "
                                          "genesis hash"};
        if (seq != from && r.prevHash != lastHash)
            throw PackRefusal{seq, name + " does not point at record " + std::to_string(seq - 1) +
                                       "'s hash: a record before it was replaced"};
        lastHash = r.hash;
        ++expected;
    }
    if (expected - 1 != spanEnd)
        throw PackRefusal{expected, "the chain proof stops at record " +
                                        std::to_string(expected - 1) + ", before record " +
                                        std::to_string(spanEnd) + ": a record was removed"};
    if (toHead && lastHash != head.hash)
        throw PackRefusal{head.seq, "chain record " + std::to_string(head.seq) +
                                        " is the chain head the pack names, but its hash is not "
                                        "the head's"};
}

/// The span the chain proves: from the operation's first record to its newest unlinked one
/// (version 3), or to the head (version 2, `toHead`); without a gap. Operation records all
/// linked to one another need no chain links.
void checkChainSpan(const PackRecords &records, const AuditHead &head, bool toHead)
{
    std::optional<std::int64_t> spanEnd;
    if (toHead && !records.mine.empty())
        spanEnd = head.seq;
    for (const AuditRecord &r : records.mine)
        if (!toHead && r.targetPrevHash.empty())
            spanEnd = r.seq;
    if (spanEnd)
        checkSpanWithoutGap(records, records.mine.front().seq, *spanEnd, head, toHead);
    else if (records.span.size() > records.mine.size())
        throw PackRefusal{std::nullopt, "the pack holds chain links, but the operation's records "
                                        "are all linked to one another and need none"};
}

} // namespace

nlohmann::json EvidencePack::build(LedgerStore &store, const std::string &ns,
                                   const std::string &key)
{
    const std::optional<Operation> op = store.find(ns, key);
    if (!op)
        throw Error(ErrorCode::NotFound, "no operation " + key + " in namespace " + ns);
    // The head first: records appended meanwhile lie beyond it and stay out of the pack.
    AuditFilter newest;
    newest.newestFirst = true;
    newest.limit = 1;
    const std::vector<AuditRecord> last = store.auditRecords(newest);
    const AuditHead head = last.empty() ? AuditHead{0, AuditGenesisHash}
                                        : AuditHead{last.front().seq, last.front().hash};

    const std::string target = ns + "/" + key;
    std::vector<AuditRecord> mine = targetRecords(store, target, head.seq);
    // Records written before target links show no gap on their own: the chain from the
    // operation's first record to its newest unlinked one goes in whole, so the verifier walks
    // that span without a gap. Linked records need nothing else.
    nlohmann::json links = nlohmann::json::array();
    if (!mine.empty() && mine.front().targetPrevHash.empty()) {
        std::int64_t spanEnd = mine.front().seq;
        for (const AuditRecord &r : mine)
            if (r.targetPrevHash.empty())
                spanEnd = r.seq;
        forChain(store, mine.front().seq, spanEnd, [&](const AuditRecord &r) {
            if (r.entry.target != target)
                links.push_back(recordJson(r));
        });
    }
    nlohmann::json records = nlohmann::json::array();
    for (const AuditRecord &r : mine)
        records.push_back(recordJson(r));

    nlohmann::json history = nlohmann::json::array();
    for (const OperationEvent &e : store.history(ns, key))
        history.push_back(eventJson(e));
    nlohmann::json approvals = nlohmann::json::array();
    for (const ApprovalRecord &a : store.approvals(ns, key))
        approvals.push_back(approvalJson(a));
    nlohmann::json run = nullptr;
    if (!op->runId.empty())
        if (const std::optional<RunRecord> r = store.findRun(ns, op->runId))
            run = runJson(*r);
    const ActorIdentity actor = store.actor();
    const std::int64_t now = store.nowMs();
    return {{"format", Format},
            {"version", Version},
            {"exported_at", timestampJson(now)},
            {"exported_by", {{"name", actor.name}, {"role", actor.role}}},
            {"ledger", store.describe()},
            {"namespace", ns},
            {"key", key},
            {"operation", operationJson(*op)},
            {"history", history},
            {"approvals", approvals},
            {"run", run},
            {"audit_records", records},
            {"chain", {{"head", {{"seq", head.seq}, {"hash", head.hash}}}, {"links", links}}}};
}

EvidencePack::Figures EvidencePack::figures(const nlohmann::json &pack)
{
    const auto malformed = [](const std::string &what) {
        return Error(ErrorCode::InvalidArgument, "malformed evidence pack: " + what);
    };
    if (!pack.is_object())
        throw malformed("it is not an object");
    const auto records = pack.find("audit_records");
    if (records == pack.end() || !records->is_array())
        throw malformed("it has no \"audit_records\" array");
    const auto chain = pack.find("chain");
    if (chain == pack.end() || !chain->is_object() || !chain->contains("head") ||
        !chain->at("head").is_object())
        throw malformed("it has no chain head (\"chain\": {\"head\": …})");
    const nlohmann::json &head = chain->at("head");
    const auto seq = head.find("seq");
    if (seq == head.end() || !seq->is_number_integer() || seq->get<std::int64_t>() < 0)
        throw malformed(
            "the chain head's \"seq\" is " +
            (seq == head.end() ? std::string("missing") : "not a record number: " + seq->dump()));
    return {static_cast<std::int64_t>(records->size()), seq->get<std::int64_t>()};
}

EvidencePack::Verdict EvidencePack::verify(const nlohmann::json &pack)
{
    Verdict v;
    try {
        requireReadableFormat(pack);
        checkStatedParts(pack);
        // Version 2 proved every record to the head by the chain; 3 by target links.
        const bool toHead = pack["version"] == 2;
        const std::string target =
            textOf(pack, "namespace", "the pack") + "/" + textOf(pack, "key", "the pack");
        const AuditHead head = chainHead(pack);
        const PackRecords records = readRecords(pack, target, head);
        checkHashes(records.span);
        checkTargetLinks(records.mine, target);
        checkChainSpan(records, head, toHead);
        v.records = static_cast<std::int64_t>(records.mine.size());
        v.links = static_cast<std::int64_t>(records.span.size() - records.mine.size());
        v.linked = !records.mine.empty() && !records.mine.front().targetPrevHash.empty();
        if (std::string problem = agreementProblem(pack, records.mine); !problem.empty())
            return v.refuse(std::nullopt, std::move(problem));
    } catch (const PackRefusal &r) {
        return v.refuse(r.seq, r.why);
    } catch (const std::exception &e) {
        return v.refuse(std::nullopt, std::string("the pack is malformed: ") + e.what());
    }
    return v;
}

nlohmann::json EvidencePack::parse(const std::string &text, std::string &problem)
{
    // A member named twice reads as its first to a person and as its last to a parser: refused.
    std::vector<std::set<std::string>> objects;
    const auto callback = [&](int, nlohmann::json::parse_event_t event, nlohmann::json &parsed) {
        using Event = nlohmann::json::parse_event_t;
        if (event == Event::object_start)
            objects.emplace_back();
        else if (event == Event::object_end && !objects.empty())
            objects.pop_back();
        else if (event == Event::key && !objects.empty() &&
                 !objects.back().insert(parsed.get<std::string>()).second && problem.empty())
            problem = "the member \"" + parsed.get<std::string>() +
                      "\" is named twice in one object: a reader sees the first, a parser the last";
        return true;
    };
    nlohmann::json pack = nlohmann::json::parse(text, callback, false);
    if (pack.is_discarded() && problem.empty())
        problem = "the file is not JSON";
    return problem.empty() ? pack : nlohmann::json(nlohmann::json::value_t::discarded);
}

EvidencePack::Verdict &EvidencePack::Verdict::refuse(std::optional<std::int64_t> seq,
                                                     std::string why)
{
    ok = false;
    badSeq = seq;
    problem = std::move(why);
    return *this;
}

nlohmann::json EvidencePack::toJson(const Verdict &v)
{
    nlohmann::json j = {
        {"ok", v.ok},
        {"records", v.records},
        {"links", v.links},
        {"linked", v.linked},
        {"bad_seq", v.badSeq ? nlohmann::json(*v.badSeq) : nlohmann::json()},
        {"problem", v.problem.empty() ? nlohmann::json() : nlohmann::json(v.problem)}};
    if (v.againstLedger)
        j["ledger"] = {
            {"chain_records", v.ledgerRecords},
            {"appended_since", v.appendedSince},
            {"uncompared", v.uncompared},
            {"operation_version", v.versionNow ? nlohmann::json(*v.versionNow) : nlohmann::json()}};
    return j;
}

} // namespace idempo
