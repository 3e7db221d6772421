// SPDX-License-Identifier: Apache-2.0
// EvidencePack::verifyAgainst(): a pack that verifies offline, checked against the ledger.
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "auditverify.h"
#include "evidencepack.h"
#include "evidencepackrows.h"
#include "recordjson.h"

namespace idempo {

using namespace packrows;

namespace {

/// Which operation a pack (that verified) is of, and the chain head it was made at.
struct PackSubject
{
    std::string ns;
    std::string key;
    std::string target; ///< "ns/key", as the operation's audit records name it
    AuditHead head;
};

PackSubject subjectOf(const nlohmann::json &pack)
{
    PackSubject s;
    s.ns = pack["namespace"].get<std::string>();
    s.key = pack["key"].get<std::string>();
    s.target = s.ns + "/" + s.key;
    s.head = {pack["chain"]["head"]["seq"].get<std::int64_t>(),
              pack["chain"]["head"]["hash"].get<std::string>()};
    return s;
}

/// The ledger's chain verifies end to end and still holds the pack's head; returns how many
/// records it verified.
std::int64_t checkLedgerChain(LedgerStore &store, const AuditHead &head)
{
    const AuditVerify::Result chain =
        AuditVerify(store).run(head.seq > 0 ? head.hash : std::string());
    if (!chain.chainIntact)
        throw PackRefusal{chain.firstBad,
                          "the ledger's audit chain does not verify: " + chain.problem};
    if (head.seq > 0 && chain.anchorSeq != head.seq)
        throw PackRefusal{std::nullopt,
                          "the pack's chain head (record " + std::to_string(head.seq) + ", hash " +
                              head.hash + ") is no record of this ledger's chain (" +
                              std::to_string(chain.records) +
                              " records, all intact): the pack is another ledger's, or this "
                              "ledger's records up to it were rewritten"};
    return chain.records;
}

/// The operation's records up to the head are the pack's `packed`, none left out; later ones
/// were appended since the export, and are counted in `appendedSince`.
void checkOperationRecords(LedgerStore &store, const nlohmann::json &packed,
                           const PackSubject &subject, std::int64_t &appendedSince)
{
    const std::vector<AuditRecord> ledgerMine =
        targetRecords(store, subject.target, std::numeric_limits<std::int64_t>::max());
    std::size_t at = 0;
    for (const AuditRecord &r : ledgerMine) {
        if (r.seq > subject.head.seq) {
            ++appendedSince;
            continue;
        }
        if (at >= packed.size() || packed[at]["seq"] != r.seq)
            throw PackRefusal{r.seq, "the ledger holds audit record " + std::to_string(r.seq) +
                                         " of " + subject.target + ", which the pack leaves out"};
        if (packed[at]["hash"] != r.hash)
            throw PackRefusal{r.seq, "audit record " + std::to_string(r.seq) +
                                         " of the pack is not the ledger's record " +
                                         std::to_string(r.seq)};
        ++at;
    }
    if (at < packed.size())
        throw PackRefusal{packed[at]["seq"].get<std::int64_t>(),
                          "audit record " + packed[at]["seq"].dump() +
                              " of the pack is no record of " + subject.target + " in the ledger"};
}

/// Every chain link of the pack (`links`) is the ledger's record of its seq.
void checkChainLinks(LedgerStore &store, const nlohmann::json &links)
{
    std::map<std::int64_t, std::string> hashes;
    for (const nlohmann::json &l : links)
        hashes[l["seq"].get<std::int64_t>()] = l["hash"].get<std::string>();
    if (hashes.empty())
        return;
    // The walk goes to the last link even past a difference: the first one is refused.
    std::optional<std::int64_t> differs;
    forChain(store, hashes.begin()->first, hashes.rbegin()->first, [&](const AuditRecord &r) {
        const auto link = hashes.find(r.seq);
        if (link != hashes.end() && link->second != r.hash && !differs)
            differs = r.seq;
    });
    if (differs)
        throw PackRefusal{*differs, "chain record " + std::to_string(*differs) +
                                        " of the pack is not the ledger's record " +
                                        std::to_string(*differs)};
}

/// The ledger's operation beside the pack's record of it.
struct LedgerOperation
{
    Operation op;
    nlohmann::json now;             ///< operationJson(op): what the ledger holds now
    std::int64_t packedVersion = 0; ///< the version the pack's record is of
};

/// The operation the pack is of, as the ledger holds it now: the same operation (by id), at the
/// pack's version or a later one.
LedgerOperation ledgerOperation(LedgerStore &store, const PackSubject &subject,
                                const nlohmann::json &packedOp)
{
    const std::optional<Operation> op = store.find(subject.ns, subject.key);
    if (!op)
        throw PackRefusal{std::nullopt, "the ledger holds no operation " + subject.key +
                                            " in namespace " + subject.ns};
    LedgerOperation ledger{*op, operationJson(*op),
                           packedOp["operation_version"].get<std::int64_t>()};
    if (ledger.packedVersion < 1 || op->version < ledger.packedVersion ||
        ledger.now["id"] != packedOp["id"])
        throw PackRefusal{std::nullopt, "the ledger's operation " + subject.target +
                                            " is not the pack's: it has id " +
                                            ledger.now["id"].dump() + " at version " +
                                            std::to_string(op->version) + ", the pack id " +
                                            packedOp["id"].dump() + " at version " +
                                            std::to_string(ledger.packedVersion)};
    return ledger;
}

/// The pack's `history` is the ledger's `events` from the first one. Every move writes one event
/// and one version, so the pack's version tells how many events it must hold (`onePerVersion`;
/// a ledger whose history predates that rule is judged on the prefix alone).
void checkHistory(const nlohmann::json &history, const std::vector<OperationEvent> &events,
                  std::int64_t packedVersion, bool onePerVersion)
{
    if (history.size() > events.size() ||
        (onePerVersion && static_cast<std::int64_t>(history.size()) != packedVersion))
        throw PackRefusal{
            std::nullopt,
            "the pack's history holds " + std::to_string(history.size()) +
                " events; the ledger's operation had " +
                std::to_string(onePerVersion ? packedVersion
                                             : static_cast<std::int64_t>(events.size())) +
                " at version " + std::to_string(packedVersion) + ": events were cut or added"};
    for (std::size_t i = 0; i < history.size(); ++i)
        if (history[i] != eventJson(events[i]))
            throw PackRefusal{std::nullopt, "history event " + std::to_string(i + 1) +
                                                " of the pack differs from the ledger's (" +
                                                firstDifference(history[i], eventJson(events[i])) +
                                                ")"};
}

/// The pack's operation record held against what the ledger says, field by field, keeping the
/// names it compared.
struct FieldComparison
{
    const nlohmann::json &packedOp;
    std::set<std::string> compared;

    /// Refuses the pack when its record lacks `name` or says other than `ledgerSays`, which
    /// `where` names.
    void compare(const std::string &name, const nlohmann::json &ledgerSays,
                 const std::string &where)
    {
        compared.insert(name);
        if (!packedOp.contains(name))
            throw PackRefusal{std::nullopt, "the operation record has no \"" + name + "\""};
        if (packedOp.value(name, nlohmann::json()) != ledgerSays)
            throw PackRefusal{std::nullopt,
                              "the operation record's \"" + name + "\" differs from " + where};
    }
};

/// At an older version than the ledger's: what no move changes, and, when every move wrote an
/// event (`onePerVersion`), what the event that made the pack's version recorded. The fields
/// left uncompared go to `uncompared`.
void compareOlderVersion(FieldComparison &fields, const LedgerOperation &ledger,
                         const std::vector<OperationEvent> &events, bool onePerVersion,
                         std::vector<std::string> &uncompared)
{
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
    for (const char *name : kFixed)
        fields.compare(name, ledger.now.value(name, nlohmann::json()),
                       "the ledger's (it never changes after the claim)");
    if (onePerVersion) {
        const nlohmann::json made = eventJson(events[ledger.packedVersion - 1]);
        const std::string where = "what history event " + std::to_string(ledger.packedVersion) +
                                  " of the ledger recorded for version " +
                                  std::to_string(ledger.packedVersion);
        // The operation's field, and the event's member that recorded it.
        const std::pair<const char *, const char *> recorded[] = {
            {"state", "to"},
            {"fencing_token", "fencing_token"},
            {"attempt", "attempt"},
            {"error_class", "error_class"},
            {"updated_at", "at"}};
        for (const auto &[name, member] : recorded)
            fields.compare(name, made[member], where);
    }
    fields.compared.insert("operation_version");
    for (const auto &[name, value] : ledger.now.items())
        if (!fields.compared.count(name))
            uncompared.push_back(name);
}

/// The operation: every field at the same version; at an older one, compareOlderVersion().
void checkOperationFields(const nlohmann::json &packedOp, const LedgerOperation &ledger,
                          const std::vector<OperationEvent> &events, bool onePerVersion,
                          std::vector<std::string> &uncompared)
{
    for (const auto &[name, value] : packedOp.items())
        if (!ledger.now.contains(name))
            throw PackRefusal{std::nullopt, "the operation record has a member \"" + name +
                                                "\" the ledger's does not"};
    FieldComparison fields{packedOp, {}};
    if (ledger.op.version != ledger.packedVersion) {
        compareOlderVersion(fields, ledger, events, onePerVersion, uncompared);
        return;
    }
    for (const auto &[name, value] : ledger.now.items())
        fields.compare(name, value,
                       "the ledger's at the same version " + std::to_string(ledger.op.version));
}

/// Every approval of the pack (`packed`) is the ledger's; a first approval of two may have been
/// seconded since the export.
void checkApprovals(LedgerStore &store, const PackSubject &subject, const nlohmann::json &packed)
{
    std::map<std::string, nlohmann::json> approvals;
    for (const ApprovalRecord &a : store.approvals(subject.ns, subject.key))
        approvals[a.approvalId] = approvalJson(a);
    for (const nlohmann::json &a : packed) {
        const auto found = approvals.find(a["approval_id"].get<std::string>());
        if (found == approvals.end())
            throw PackRefusal{std::nullopt, "approval " + a["approval_id"].get<std::string>() +
                                                " of the pack is not in the ledger"};
        nlohmann::json ledgerSays = found->second;
        if (a["status"] == "pending" && ledgerSays["status"] == "seconded")
            ledgerSays["status"] = "pending";
        if (a != ledgerSays)
            throw PackRefusal{std::nullopt, "approval " + found->first +
                                                " of the pack differs from the ledger's (" +
                                                firstDifference(a, ledgerSays) + ")"};
    }
}

} // namespace

EvidencePack::Verdict EvidencePack::verifyAgainst(LedgerStore &store, const nlohmann::json &pack)
{
    Verdict v = verify(pack);
    if (!v.ok)
        return v;
    v.againstLedger = true;
    try {
        const PackSubject subject = subjectOf(pack);
        v.ledgerRecords = checkLedgerChain(store, subject.head);
        checkOperationRecords(store, pack["audit_records"], subject, v.appendedSince);
        checkChainLinks(store, pack["chain"]["links"]);
        // The rows the chain does not hash: what the ledger holds now, the operation at the
        // pack's version, its history from the first event and every approval.
        const LedgerOperation ledger = ledgerOperation(store, subject, pack["operation"]);
        v.versionNow = ledger.op.version;
        v.versionPacked = ledger.packedVersion;
        const std::vector<OperationEvent> events = store.history(subject.ns, subject.key);
        const bool onePerVersion = static_cast<std::int64_t>(events.size()) == ledger.op.version;
        checkHistory(pack["history"], events, ledger.packedVersion, onePerVersion);
        checkOperationFields(pack["operation"], ledger, events, onePerVersion, v.uncompared);
        checkApprovals(store, subject, pack["approvals"]);
    } catch (const PackRefusal &r) {
        return v.refuse(r.seq, r.why);
    } catch (const std::exception &e) {
        return v.refuse(std::nullopt, std::string("the pack is malformed: ") + e.what());
    }
    return v;
}

} // namespace idempo
