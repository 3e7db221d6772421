// SPDX-License-Identifier: Apache-2.0
#include "evidencepackrows.h"

#include <stdexcept>

#include "auditchain.h"
#include "recordjson.h"

namespace idempo::packrows {

nlohmann::json recordJson(const AuditRecord &r)
{
    nlohmann::json j = auditHashedFields(r);
    j["at"] = timestampJson(r.atMs);
    j["hash"] = r.hash;
    return j;
}

std::vector<AuditRecord> targetRecords(LedgerStore &store, const std::string &target,
                                       std::int64_t headSeq)
{
    std::vector<AuditRecord> records;
    AuditFilter filter;
    filter.target = target;
    filter.limit = kPage;
    for (;;) {
        const std::vector<AuditRecord> page = store.auditRecords(filter);
        for (const AuditRecord &r : page) {
            if (r.seq > headSeq)
                return records;
            records.push_back(r);
        }
        if (static_cast<int>(page.size()) < kPage)
            return records;
        filter.afterSeq = page.back().seq;
    }
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

std::string firstDifference(const nlohmann::json &a, const nlohmann::json &b)
{
    if (a.is_object() && b.is_object()) {
        for (const auto &[name, value] : a.items())
            if (b.value(name, nlohmann::json()) != value)
                return "\"" + name + "\"";
        for (const auto &[name, value] : b.items())
            if (!a.contains(name))
                return "\"" + name + "\" is missing";
    }
    return "its whole text";
}

} // namespace idempo::packrows
