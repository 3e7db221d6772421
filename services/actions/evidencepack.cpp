// SPDX-License-Identifier: Apache-2.0
#include "evidencepack.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "auditchain.h"
#include "error.h"
#include "evidencepackrows.h"
#include "recordjson.h"

namespace idempo {

using namespace packrows;

namespace {

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

/// The approval id a history event names when a decision made it ("reject by bob (approval
/// ap-1): …", the same text on both stores), empty otherwise.
std::string decisionApprovalId(const std::string &detail)
{
    const auto at = detail.find(" (approval ");
    const auto end = at == std::string::npos ? at : detail.find("): ", at);
    if (end == std::string::npos)
        return {};
    const std::string verb = detail.substr(0, detail.find(' '));
    if (verb != "redispatch" && verb != "confirm" && verb != "reject")
        return {};
    return detail.substr(at + 11, end - at - 11);
}

/// Whether the pack's unhashed parts agree with its hashed audit records: the operation's
/// state and version with the newest record's after-state, and every decision the history or
/// the approvals show with an audit record. Empty when they do; else what disagrees.
std::string agreementProblem(const nlohmann::json &pack, const std::vector<AuditRecord> &mine)
{
    if (!pack.contains("operation") || !pack["operation"].is_object())
        return "the pack has no \"operation\" record";
    const nlohmann::json &op = pack["operation"];
    const std::string opState = textOf(op, "state", "the operation");
    const std::int64_t opVersion = integerOf(op, "operation_version", "the operation");
    for (auto r = mine.rbegin(); r != mine.rend(); ++r) {
        const nlohmann::json after = nlohmann::json::parse(r->entry.afterState, nullptr, false);
        if (!after.is_object() || !after.contains("state") || !after.contains("version") ||
            !after["version"].is_number_integer())
            continue;
        const std::string state =
            after["state"].is_string() ? after["state"].get<std::string>() : std::string();
        const std::int64_t version = after["version"].get<std::int64_t>();
        const std::string recorded = "audit record " + std::to_string(r->seq) + " left it in " +
                                     state + " at version " + std::to_string(version);
        if (opVersion < version || (opVersion == version && opState != state))
            return "the operation record (" + opState + ", version " + std::to_string(opVersion) +
                   ") contradicts its newest audit record: " + recorded;
        // At that version the snapshot holds more of the record (operationSnapshot()).
        if (opVersion == version) {
            const nlohmann::json receipt =
                after.value("receipt", std::string()).empty()
                    ? nlohmann::json()
                    : nlohmann::json::parse(after.value("receipt", std::string()), nullptr, false);
            const std::pair<const char *, nlohmann::json> held[] = {
                {"fencing_token", after.value("fencing_token", nlohmann::json())},
                {"attempt", after.value("attempt", nlohmann::json())},
                {"max_attempts", after.value("max_attempts", nlohmann::json())},
                {"error_class", after.value("error_class", nlohmann::json())},
                {"receipt", receipt}};
            for (const auto &[name, value] : held)
                if (!op.contains(name) || op[name] != value)
                    return "the operation record's \"" + std::string(name) +
                           "\" contradicts its newest audit record: " + recorded + " with " + name +
                           " " + value.dump();
        }
        break;
    }
    std::set<std::string> audited;
    bool reconcileAudited = false;
    for (const AuditRecord &r : mine) {
        if (!r.entry.approvalId.empty())
            audited.insert(r.entry.approvalId);
        reconcileAudited = reconcileAudited || r.entry.action == "reconcile";
    }
    std::set<std::string> shown;
    if (pack.contains("history") && pack["history"].is_array())
        for (const nlohmann::json &e : pack["history"]) {
            const std::string detail =
                e.is_object() && e.contains("detail") && e["detail"].is_string()
                    ? e["detail"].get<std::string>()
                    : std::string();
            const std::string id = decisionApprovalId(detail);
            shown.insert(id);
            if (!id.empty() && !audited.count(id))
                return "the history shows a decision (approval " + id +
                       ") but the pack holds no audit record of it";
            if (detail.starts_with("reconciled by ") && !reconcileAudited)
                return "the history shows a reconciliation but the pack holds no audit record "
                       "of one";
        }
    // An applied decision moved the operation: the history shows it.
    for (const AuditRecord &r : mine) {
        if (r.entry.approvalId.empty() ||
            (r.entry.action != "approve" && r.entry.action != "reject"))
            continue;
        const nlohmann::json detail = nlohmann::json::parse(r.entry.detail, nullptr, false);
        if (detail.is_object() && detail.value("status", std::string()) == "applied" &&
            !shown.count(r.entry.approvalId))
            return "audit record " + std::to_string(r.seq) + " applied approval " +
                   r.entry.approvalId + ", but the pack's history shows no event of it";
    }
    // Each approval says what its hashed record says, and no decision record lacks its approval.
    std::map<std::string, const AuditRecord *> decisions;
    for (const AuditRecord &r : mine)
        if (!r.entry.approvalId.empty() &&
            (r.entry.action == "approve" || r.entry.action == "reject"))
            decisions[r.entry.approvalId] = &r;
    std::set<std::string> listed;
    if (pack.contains("approvals") && pack["approvals"].is_array())
        for (const nlohmann::json &a : pack["approvals"]) {
            const std::string id = textOf(a, "approval_id", "an approval");
            const auto found = decisions.find(id);
            if (found == decisions.end())
                return "the approvals show " + id + " but the pack holds no audit record of it";
            const AuditRecord &r = *found->second;
            const nlohmann::json detail = nlohmann::json::parse(r.entry.detail, nullptr, false);
            const auto said = [&detail](const char *name) {
                return detail.is_object() && detail.contains(name) && detail[name].is_string()
                           ? detail[name].get<std::string>()
                           : std::string();
            };
            const std::string status = textOf(a, "status", "approval " + id);
            const bool statusAgrees =
                status == said("status") || (said("status") == "pending" && status == "seconded");
            if (textOf(a, "decision", "approval " + id) != said("decision") ||
                textOf(a, "operator", "approval " + id) != r.entry.who ||
                textOf(a, "role", "approval " + id) != r.entry.role ||
                textOf(a, "reason", "approval " + id) != r.entry.reason || !statusAgrees)
                return "approval " + id + " does not say what audit record " +
                       std::to_string(r.seq) + " says (" + said("decision") + " by " + r.entry.who +
                       " (" + r.entry.role + "), " + said("status") + ")";
            if (!listed.insert(id).second)
                return "approval " + id + " is listed twice";
        }
    for (const auto &[id, r] : decisions)
        if (!listed.count(id))
            return "audit record " + std::to_string(r->seq) + " records approval " + id +
                   ", which the pack's approvals leave out";
    return {};
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

EvidencePack::Verdict EvidencePack::verify(const nlohmann::json &pack)
{
    Verdict v;
    try {
        if (!pack.is_object() || !pack.contains("format") || pack["format"] != Format)
            return v.refuse(std::nullopt, std::string("not an evidence pack (no \"format\": \"") +
                                              Format + "\")");
        if (pack.contains("version") && pack["version"] == 1)
            return v.refuse(std::nullopt,
                            "older pack format (version 1): it links each record only to the next "
                            "one, so it cannot show that no audit record of the operation was left "
                            "out; export the pack again (idempo evidence KEY -o FILE)");
        if (!pack.contains("version") || (pack["version"] != 2 && pack["version"] != Version))
            return v.refuse(
                std::nullopt,
                "pack version " +
                    (pack.contains("version") ? pack["version"].dump() : std::string("missing")) +
                    " is not one this build reads (2 or " + std::to_string(Version) + ")");
        onlyMembers(pack,
                    {"format", "version", "exported_at", "exported_by", "ledger", "namespace",
                     "key", "operation", "history", "approvals", "run", "audit_records", "chain"},
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
                                         (runId.empty() ? std::string("it has none") : runId) +
                                         ")");
        }
        // Version 2 proved every record to the head by the chain; 3 by target links.
        const bool toHead = pack["version"] == 2;
        const std::string target =
            textOf(pack, "namespace", "the pack") + "/" + textOf(pack, "key", "the pack");
        if (!pack.contains("chain") || !pack["chain"].is_object() ||
            !pack["chain"].contains("head") || !pack["chain"].contains("links") ||
            !pack["chain"]["links"].is_array())
            return v.refuse(std::nullopt, "the pack has no chain proof (\"chain\": {head, links})");
        const nlohmann::json &chain = pack["chain"];
        onlyMembers(chain, {"head", "links"}, "the chain proof");
        onlyMembers(chain["head"], {"seq", "hash"}, "the chain head");
        const AuditHead head{integerOf(chain["head"], "seq", "the chain head"),
                             textOf(chain["head"], "hash", "the chain head")};
        if (!pack.contains("audit_records") || !pack["audit_records"].is_array())
            return v.refuse(std::nullopt, "the pack has no \"audit_records\" array");
        // Every record of the pack, the operation's and the links, by seq.
        std::map<std::int64_t, std::pair<AuditRecord, bool>> span; // seq → (record, mine)
        std::vector<AuditRecord> mine;
        for (const nlohmann::json &j : pack["audit_records"]) {
            const std::string where =
                "audit record " + (j.is_object() && j.contains("seq") ? j["seq"].dump() : "?");
            AuditRecord r = parseRecord(j, where);
            const std::string name = "audit record " + std::to_string(r.seq);
            if (!mine.empty() && r.seq <= mine.back().seq)
                return v.refuse(r.seq, name + " is out of seq order in the pack");
            if (r.entry.target != target)
                return v.refuse(r.seq, name + " targets " + r.entry.target + ", not " + target);
            if (r.seq > head.seq)
                return v.refuse(r.seq, name +
                                           " lies beyond the chain head the pack names (record " +
                                           std::to_string(head.seq) + ")");
            span[r.seq] = {r, true};
            mine.push_back(std::move(r));
        }
        for (const nlohmann::json &j : chain["links"]) {
            const std::string where =
                "chain link " + (j.is_object() && j.contains("seq") ? j["seq"].dump() : "?");
            AuditRecord r = parseRecord(j, where);
            const std::string name = "chain record " + std::to_string(r.seq);
            if (r.entry.target == target)
                return v.refuse(r.seq, name + " targets " + target +
                                           " but is filed among the chain links, not the audit "
                                           "records");
            if (!span.emplace(r.seq, std::make_pair(r, false)).second)
                return v.refuse(r.seq, name + " is in the pack twice");
        }
        if (mine.empty() && !span.empty())
            return v.refuse(span.begin()->first,
                            "the pack holds chain links but no audit record of " + target);
        for (const auto &[seq, entry] : span)
            if (auditHash(entry.first) != entry.first.hash)
                return v.refuse(seq, (entry.second ? "audit record " : "chain record ") +
                                         std::to_string(seq) +
                                         " does not match its hash: it was edited");
        // The operation's records among themselves: each linked one names the one before it.
        for (std::size_t i = 0; i < mine.size(); ++i) {
            const AuditRecord &r = mine[i];
            const std::string name = "audit record " + std::to_string(r.seq);
            if (r.targetPrevHash.empty()) {
                if (i > 0 && !mine[i - 1].targetPrevHash.empty())
                    return v.refuse(r.seq, name +
                                               " carries no link to the operation's previous "
                                               "record, though audit record " +
                                               std::to_string(mine[i - 1].seq) + " before it does");
                continue;
            }
            if (i == 0 && r.targetPrevHash != AuditGenesisHash)
                return v.refuse(r.seq, name + " links to an earlier record of " + target +
                                           " that the pack does not hold: a record was removed");
            if (i > 0 && r.targetPrevHash != mine[i - 1].hash)
                return v.refuse(r.seq, name + " does not point at audit record " +
                                           std::to_string(mine[i - 1].seq) +
                                           "'s hash, the operation's record before it in the pack: "
                                           "a record of the operation was removed or replaced");
        }
        // The span the chain proves: from the operation's first record to its newest unlinked
        // one (version 3), or to the head (version 2); without a gap.
        std::optional<std::int64_t> spanEnd;
        if (toHead && !mine.empty())
            spanEnd = head.seq;
        for (const AuditRecord &r : mine)
            if (!toHead && r.targetPrevHash.empty())
                spanEnd = r.seq;
        if (spanEnd) {
            const std::int64_t from = mine.front().seq;
            std::int64_t expected = from;
            std::string lastHash;
            for (const auto &[seq, entry] : span) {
                const AuditRecord &r = entry.first;
                if (seq > *spanEnd) {
                    if (!entry.second)
                        return v.refuse(seq, "chain record " + std::to_string(seq) +
                                                 " lies beyond the span the chain proof covers "
                                                 "(records " +
                                                 std::to_string(from) + " to " +
                                                 std::to_string(*spanEnd) + ")");
                    continue;
                }
                const std::string name =
                    (entry.second ? "audit record " : "chain record ") + std::to_string(seq);
                if (seq != expected)
                    return v.refuse(expected, "chain record" +
                                                  (seq - expected > 1
                                                       ? "s " + std::to_string(expected) + " to " +
                                                             std::to_string(seq - 1) + " are"
                                                       : " " + std::to_string(expected) + " is") +
                                                  " missing from the pack: a record was removed "
                                                  "(the pack must hold every record from " +
                                                  std::to_string(from) + " to " +
                                                  std::to_string(*spanEnd) + ")");
                if (seq == 1 && r.prevHash != AuditGenesisHash)
                    return v.refuse(seq, name + " is the first of the chain but does not point at "
                                                "the genesis hash");
                if (seq != from && r.prevHash != lastHash)
                    return v.refuse(seq, name + " does not point at record " +
                                             std::to_string(seq - 1) +
                                             "'s hash: a record before it was replaced");
                lastHash = r.hash;
                ++expected;
            }
            if (expected - 1 != *spanEnd)
                return v.refuse(expected, "the chain proof stops at record " +
                                              std::to_string(expected - 1) + ", before record " +
                                              std::to_string(*spanEnd) + ": a record was removed");
            if (toHead && lastHash != head.hash)
                return v.refuse(head.seq, "chain record " + std::to_string(head.seq) +
                                              " is the chain head the pack names, but its hash is "
                                              "not the head's");
        } else if (!span.empty() && std::any_of(span.begin(), span.end(),
                                                [](const auto &e) { return !e.second.second; })) {
            return v.refuse(std::nullopt, "the pack holds chain links, but the operation's records "
                                          "are all linked to one another and need none");
        }
        v.records = static_cast<std::int64_t>(mine.size());
        v.links = static_cast<std::int64_t>(span.size() - mine.size());
        v.linked = !mine.empty() && !mine.front().targetPrevHash.empty();
        if (std::string problem = agreementProblem(pack, mine); !problem.empty())
            return v.refuse(std::nullopt, std::move(problem));
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
