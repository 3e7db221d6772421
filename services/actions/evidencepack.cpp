// SPDX-License-Identifier: Apache-2.0
#include "evidencepack.h"

#include <map>
#include <set>
#include <stdexcept>

#include "auditchain.h"
#include "error.h"
#include "recordjson.h"

namespace idempo {
namespace {

constexpr int kPage = 1000;

/// An audit record as the chain hashes it: every field as its stored text.
nlohmann::json recordJson(const AuditRecord &r)
{
    const AuditEntry &e = r.entry;
    return {{"seq", r.seq},
            {"at_ms", r.atMs},
            {"at", timestampJson(r.atMs)},
            {"who", e.who},
            {"role", e.role},
            {"action", e.action},
            {"target", e.target},
            {"reason", e.reason},
            {"before_state", e.beforeState},
            {"after_state", e.afterState},
            {"approval_id", e.approvalId},
            {"detail", e.detail},
            {"prev_hash", r.prevHash},
            {"hash", r.hash}};
}

nlohmann::json approvalJson(const ApprovalRecord &a)
{
    return {{"approval_id", a.approvalId},
            {"revision", a.revision},
            {"decision", a.decision},
            {"reason", a.reason},
            {"operator", a.operatorName},
            {"role", a.role},
            {"external_reference", a.externalReference},
            {"proposal", a.proposal},
            {"status", a.status},
            {"operation_version", a.operationVersion},
            {"created_at", timestampJson(a.createdAtMs)}};
}

/// The record member `name` of `j` as text; throws the problem when absent or not text.
std::string textOf(const nlohmann::json &j, const char *name, const std::string &where)
{
    if (!j.contains(name) || !j[name].is_string())
        throw std::runtime_error(where + " has no text member \"" + name + "\"");
    return j[name].get<std::string>();
}

std::int64_t integerOf(const nlohmann::json &j, const char *name, const std::string &where)
{
    if (!j.contains(name) || !j[name].is_number_integer())
        throw std::runtime_error(where + " has no whole-number member \"" + name + "\"");
    return j[name].get<std::int64_t>();
}

AuditRecord parseRecord(const nlohmann::json &j, const std::string &where)
{
    AuditRecord r;
    r.seq = integerOf(j, "seq", where);
    r.atMs = integerOf(j, "at_ms", where);
    r.entry = {textOf(j, "who", where),         textOf(j, "role", where),
               textOf(j, "action", where),      textOf(j, "target", where),
               textOf(j, "reason", where),      textOf(j, "before_state", where),
               textOf(j, "after_state", where), textOf(j, "approval_id", where),
               textOf(j, "detail", where)};
    r.prevHash = textOf(j, "prev_hash", where);
    r.hash = textOf(j, "hash", where);
    return r;
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

    AuditFilter mine;
    mine.target = ns + "/" + key;
    mine.limit = kPage;
    nlohmann::json records = nlohmann::json::array();
    nlohmann::json links = nlohmann::json::array();
    std::set<std::int64_t> seqs;
    std::vector<std::int64_t> successors;
    for (;;) {
        const std::vector<AuditRecord> page = store.auditRecords(mine);
        for (const AuditRecord &r : page) {
            if (r.seq > head.seq)
                continue;
            records.push_back(recordJson(r));
            seqs.insert(r.seq);
            if (r.seq < head.seq)
                successors.push_back(r.seq + 1);
        }
        if (static_cast<int>(page.size()) < kPage)
            break;
        mine.afterSeq = page.back().seq;
    }
    for (const std::int64_t seq : successors) {
        if (seqs.count(seq))
            continue; // the next record is in the pack already
        const std::vector<AuditRecord> next = store.auditLog(seq - 1, 1);
        if (next.empty() || next.front().seq != seq)
            throw Error(ErrorCode::Internal,
                        "audit record " + std::to_string(seq) + " is missing from the chain");
        links.push_back(
            {{"seq", seq}, {"prev_hash", next.front().prevHash}, {"hash", next.front().hash}});
    }

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

EvidencePack::Verdict EvidencePack::verify(const nlohmann::json &pack)
{
    Verdict v;
    const auto fail = [&v](std::optional<std::int64_t> seq, std::string problem) {
        v.ok = false;
        v.badSeq = seq;
        v.problem = std::move(problem);
        return v;
    };
    try {
        if (!pack.is_object() || !pack.contains("format") || pack["format"] != Format)
            return fail(std::nullopt,
                        std::string("not an evidence pack (no \"format\": \"") + Format + "\")");
        if (!pack.contains("version") || pack["version"] != Version)
            return fail(
                std::nullopt,
                "pack version " +
                    (pack.contains("version") ? pack["version"].dump() : std::string("missing")) +
                    " is not one this build reads (" + std::to_string(Version) + ")");
        const std::string target =
            textOf(pack, "namespace", "the pack") + "/" + textOf(pack, "key", "the pack");
        if (!pack.contains("chain") || !pack["chain"].is_object() ||
            !pack["chain"].contains("head") || !pack["chain"].contains("links") ||
            !pack["chain"]["links"].is_array())
            return fail(std::nullopt, "the pack has no chain proof (\"chain\": {head, links})");
        const nlohmann::json &chain = pack["chain"];
        const AuditHead head{integerOf(chain["head"], "seq", "the chain head"),
                             textOf(chain["head"], "hash", "the chain head")};
        std::map<std::int64_t, std::pair<std::string, std::string>> links; // seq → (prev, hash)
        for (const nlohmann::json &l : chain["links"])
            links[integerOf(l, "seq", "a chain link")] = {textOf(l, "prev_hash", "a chain link"),
                                                          textOf(l, "hash", "a chain link")};
        if (!pack.contains("audit_records") || !pack["audit_records"].is_array())
            return fail(std::nullopt, "the pack has no \"audit_records\" array");
        std::vector<AuditRecord> records;
        for (const nlohmann::json &j : pack["audit_records"]) {
            const std::string where =
                "audit record " + (j.is_object() && j.contains("seq") ? j["seq"].dump() : "?");
            records.push_back(parseRecord(j, where));
        }
        for (std::size_t i = 0; i < records.size(); ++i) {
            const AuditRecord &r = records[i];
            const std::string name = "audit record " + std::to_string(r.seq);
            if (i > 0 && r.seq <= records[i - 1].seq)
                return fail(r.seq, name + " is out of seq order in the pack");
            if (r.entry.target != target)
                return fail(r.seq, name + " targets " + r.entry.target + ", not " + target);
            if (auditHash(r) != r.hash)
                return fail(r.seq, name + " does not match its hash: it was edited");
            if (r.seq > head.seq)
                return fail(r.seq, name + " lies beyond the chain head the pack names (record " +
                                       std::to_string(head.seq) + ")");
            if (r.seq == 1 && r.prevHash != AuditGenesisHash)
                return fail(r.seq, name + " is the first of the chain but does not point at the "
                                          "genesis hash");
            if (i > 0 && records[i - 1].seq + 1 == r.seq && records[i - 1].hash != r.prevHash)
                return fail(r.seq, name + " does not point at record " +
                                       std::to_string(records[i - 1].seq) + "'s hash");
            if (r.seq == head.seq) {
                if (head.hash != r.hash)
                    return fail(r.seq, name + " is the chain head the pack names, but its hash "
                                              "is not the head's");
            } else {
                const bool nextInPack = i + 1 < records.size() && records[i + 1].seq == r.seq + 1;
                const auto link = links.find(r.seq + 1);
                if (!nextInPack && link == links.end())
                    return fail(r.seq, name + " has no link to the record after it (" +
                                           std::to_string(r.seq + 1) + ") in the chain proof");
                if (!nextInPack && link->second.first != r.hash)
                    return fail(r.seq, name + " is not the record that chain record " +
                                           std::to_string(r.seq + 1) +
                                           " points at: it was replaced");
            }
            ++v.records;
        }
    } catch (const std::exception &e) {
        return fail(std::nullopt, std::string("the pack is malformed: ") + e.what());
    }
    return v;
}

nlohmann::json EvidencePack::toJson(const Verdict &v)
{
    return {{"ok", v.ok},
            {"records", v.records},
            {"bad_seq", v.badSeq ? nlohmann::json(*v.badSeq) : nlohmann::json()},
            {"problem", v.problem.empty() ? nlohmann::json() : nlohmann::json(v.problem)}};
}

} // namespace idempo
