// SPDX-License-Identifier: Apache-2.0
// EvidencePack::verifyAgainst(): a pack that verifies offline, checked against the ledger.
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "auditverify.h"
#include "evidencepack.h"
#include "evidencepackrows.h"
#include "recordjson.h"

namespace idempo {

using namespace packrows;

EvidencePack::Verdict EvidencePack::verifyAgainst(LedgerStore &store, const nlohmann::json &pack)
{
    Verdict v = verify(pack);
    if (!v.ok)
        return v;
    v.againstLedger = true;
    try {
        const std::string ns = pack["namespace"].get<std::string>();
        const std::string key = pack["key"].get<std::string>();
        const std::string target = ns + "/" + key;
        const AuditHead head{pack["chain"]["head"]["seq"].get<std::int64_t>(),
                             pack["chain"]["head"]["hash"].get<std::string>()};
        // The ledger's chain verifies end to end and still holds the pack's head.
        const AuditVerify::Result chain =
            AuditVerify(store).run(head.seq > 0 ? head.hash : std::string());
        if (!chain.chainIntact)
            return v.refuse(chain.firstBad,
                            "the ledger's audit chain does not verify: " + chain.problem);
        if (head.seq > 0 && chain.anchorSeq != head.seq)
            return v.refuse(std::nullopt,
                            "the pack's chain head (record " + std::to_string(head.seq) +
                                ", hash " + head.hash + ") is no record of this ledger's chain (" +
                                std::to_string(chain.records) +
                                " records, all intact): the pack is another ledger's, or this "
                                "ledger's records up to it were rewritten");
        v.ledgerRecords = chain.records;

        // The operation's records up to the head are the pack's, none left out; later ones
        // were appended since the export.
        const std::vector<AuditRecord> ledgerMine =
            targetRecords(store, target, std::numeric_limits<std::int64_t>::max());
        const nlohmann::json &packed = pack["audit_records"];
        std::size_t at = 0;
        for (const AuditRecord &r : ledgerMine) {
            if (r.seq > head.seq) {
                ++v.appendedSince;
                continue;
            }
            if (at >= packed.size() || packed[at]["seq"] != r.seq)
                return v.refuse(r.seq, "the ledger holds audit record " + std::to_string(r.seq) +
                                           " of " + target + ", which the pack leaves out");
            if (packed[at]["hash"] != r.hash)
                return v.refuse(r.seq, "audit record " + std::to_string(r.seq) +
                                           " of the pack is not the ledger's record " +
                                           std::to_string(r.seq));
            ++at;
        }
        if (at < packed.size())
            return v.refuse(packed[at]["seq"].get<std::int64_t>(),
                            "audit record " + packed[at]["seq"].dump() +
                                " of the pack is no record of " + target + " in the ledger");
        std::map<std::int64_t, std::string> links;
        for (const nlohmann::json &l : pack["chain"]["links"])
            links[l["seq"].get<std::int64_t>()] = l["hash"].get<std::string>();
        if (!links.empty())
            forChain(store, links.begin()->first, links.rbegin()->first, [&](const AuditRecord &r) {
                const auto link = links.find(r.seq);
                if (link != links.end() && link->second != r.hash && v.ok)
                    v.refuse(r.seq, "chain record " + std::to_string(r.seq) +
                                        " of the pack is not the ledger's record " +
                                        std::to_string(r.seq));
            });
        if (!v.ok)
            return v;

        // The rows the chain does not hash: what the ledger holds now, the operation at the
        // pack's version, its history from the first event and every approval.
        const std::optional<Operation> op = store.find(ns, key);
        if (!op)
            return v.refuse(std::nullopt,
                            "the ledger holds no operation " + key + " in namespace " + ns);
        const nlohmann::json now = operationJson(*op);
        const std::int64_t packedVersion =
            pack["operation"]["operation_version"].get<std::int64_t>();
        if (packedVersion < 1 || op->version < packedVersion ||
            now["id"] != pack["operation"]["id"])
            return v.refuse(std::nullopt, "the ledger's operation " + target +
                                              " is not the pack's: it has id " + now["id"].dump() +
                                              " at version " + std::to_string(op->version) +
                                              ", the pack id " + pack["operation"]["id"].dump() +
                                              " at version " + std::to_string(packedVersion));
        v.versionNow = op->version;
        v.versionPacked = packedVersion;
        const std::vector<OperationEvent> events = store.history(ns, key);
        // Every move writes one event and one version, so the pack's version tells how many
        // events it must hold and which one left the operation as the pack shows it (a ledger
        // whose history predates that rule is judged on the prefix alone).
        const bool onePerVersion = static_cast<std::int64_t>(events.size()) == op->version;
        const nlohmann::json &history = pack["history"];
        if (history.size() > events.size() ||
            (onePerVersion && static_cast<std::int64_t>(history.size()) != packedVersion))
            return v.refuse(
                std::nullopt,
                "the pack's history holds " + std::to_string(history.size()) +
                    " events; the ledger's operation had " +
                    std::to_string(onePerVersion ? packedVersion
                                                 : static_cast<std::int64_t>(events.size())) +
                    " at version " + std::to_string(packedVersion) + ": events were cut or added");
        for (std::size_t i = 0; i < history.size(); ++i)
            if (history[i] != eventJson(events[i]))
                return v.refuse(std::nullopt,
                                "history event " + std::to_string(i + 1) +
                                    " of the pack differs from the ledger's (" +
                                    firstDifference(history[i], eventJson(events[i])) + ")");
        // The operation: every field at the same version; at an older one, what no move changes,
        // and what the event that made that version recorded.
        const nlohmann::json &packedOp = pack["operation"];
        const auto differs = [&](const std::string &name, const nlohmann::json &ledgerSays) {
            return packedOp.value(name, nlohmann::json()) != ledgerSays;
        };
        std::set<std::string> compared;
        const auto compare = [&](const std::string &name, const nlohmann::json &ledgerSays,
                                 const std::string &where) -> bool {
            compared.insert(name);
            if (!packedOp.contains(name)) {
                v.refuse(std::nullopt, "the operation record has no \"" + name + "\"");
                return false;
            }
            if (!differs(name, ledgerSays))
                return true;
            v.refuse(std::nullopt, "the operation record's \"" + name + "\" differs from " + where);
            return false;
        };
        static const char *const kFixed[] = {"id",
                                             "namespace",
                                             "key",
                                             "run_id",
                                             "step_id",
                                             "target",
                                             "tool_kind",
                                             "payload",
                                             "payload_fingerprint",
                                             "fingerprint_fields",
                                             "created_at",
                                             "schema_version",
                                             "value"};
        for (const auto &[name, value] : packedOp.items())
            if (!now.contains(name))
                return v.refuse(std::nullopt, "the operation record has a member \"" + name +
                                                  "\" the ledger's does not");
        if (op->version == packedVersion) {
            for (const auto &[name, value] : now.items())
                if (!compare(name, value,
                             "the ledger's at the same version " + std::to_string(op->version)))
                    return v;
        } else {
            for (const char *name : kFixed)
                if (!compare(name, now.value(name, nlohmann::json()),
                             "the ledger's (it never changes after the claim)"))
                    return v;
            if (onePerVersion) {
                const nlohmann::json made = eventJson(events[packedVersion - 1]);
                const std::string where = "what history event " + std::to_string(packedVersion) +
                                          " of the ledger recorded for version " +
                                          std::to_string(packedVersion);
                if (!compare("state", made["to"], where) ||
                    !compare("fencing_token", made["fencing_token"], where) ||
                    !compare("attempt", made["attempt"], where) ||
                    !compare("error_class", made["error_class"], where) ||
                    !compare("updated_at", made["at"], where))
                    return v;
            }
            compared.insert("operation_version");
            for (const auto &[name, value] : now.items())
                if (!compared.count(name))
                    v.uncompared.push_back(name);
        }
        std::map<std::string, nlohmann::json> approvals;
        for (const ApprovalRecord &a : store.approvals(ns, key))
            approvals[a.approvalId] = approvalJson(a);
        for (const nlohmann::json &a : pack["approvals"]) {
            const auto found = approvals.find(a["approval_id"].get<std::string>());
            if (found == approvals.end())
                return v.refuse(std::nullopt, "approval " + a["approval_id"].get<std::string>() +
                                                  " of the pack is not in the ledger");
            nlohmann::json ledgerSays = found->second;
            // A first approval of two is seconded after the export.
            if (a["status"] == "pending" && ledgerSays["status"] == "seconded")
                ledgerSays["status"] = "pending";
            if (a != ledgerSays)
                return v.refuse(std::nullopt, "approval " + found->first +
                                                  " of the pack differs from the ledger's (" +
                                                  firstDifference(a, ledgerSays) + ")");
        }
    } catch (const std::exception &e) {
        return v.refuse(std::nullopt, std::string("the pack is malformed: ") + e.what());
    }
    return v;
}

} // namespace idempo
