// SPDX-License-Identifier: Apache-2.0
#include "actionpreviews.h"

namespace idempo {
namespace {

/// The text at `key` of `object`; empty when it is missing or not text.
std::string text(const nlohmann::json &object, const char *key)
{
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::string> optionalText(const nlohmann::json &object, const char *key)
{
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string())
        return std::nullopt;
    return it->get<std::string>();
}

/// The elements of the array at `key` (none when it is missing or not an array).
const nlohmann::json &elements(const nlohmann::json &object, const char *key)
{
    static const nlohmann::json none = nlohmann::json::array();
    const auto it = object.find(key);
    return it != object.end() && it->is_array() ? *it : none;
}

std::vector<std::int64_t> ids(const nlohmann::json &object, const char *key)
{
    std::vector<std::int64_t> out;
    for (const nlohmann::json &id : elements(object, key))
        out.push_back(id.get<std::int64_t>());
    return out;
}

ApprovalPreview::Event eventOf(const nlohmann::json &e)
{
    ApprovalPreview::Event event;
    event.at = text(e, "at");
    event.from = text(e, "from");
    event.to = text(e, "to");
    event.attempt = e.value("attempt", 0);
    event.actor = text(e, "actor");
    event.errorClass = text(e, "error_class");
    event.detail = text(e, "detail");
    return event;
}

} // namespace

ApprovalPreview ApprovalPreview::read(const ActionPreview &preview)
{
    const nlohmann::json &d = preview.details;
    ApprovalPreview p;
    p.sentence = preview.sentence;
    p.from = text(d, "from");
    p.to = text(d, "to");
    p.fourEyes = d.value("four_eyes", false);
    p.referenceRates = optionalText(d, "reference_rates");
    if (const auto evidence = d.find("evidence"); evidence != d.end() && !evidence->is_null())
        p.evidence = evidence->is_string() ? evidence->get<std::string>() : evidence->dump();
    if (const auto op = d.find("operation"); op != d.end())
        p.payload = op->value("payload", nlohmann::json());
    for (const nlohmann::json &e : elements(d, "history"))
        p.history.push_back(eventOf(e));
    return p;
}

ReconcilePreview ReconcilePreview::read(const ActionPreview &preview)
{
    const nlohmann::json &d = preview.details;
    ReconcilePreview p;
    p.sentence = preview.sentence;
    p.count = d.value("count", std::int64_t{0});
    for (const nlohmann::json &row : elements(d, "operations")) {
        Item item;
        item.key = text(row, "key");
        item.state = text(row, "state");
        item.evidence = row.value("evidence", nlohmann::json());
        item.to = optionalText(row, "to");
        p.operations.push_back(std::move(item));
    }
    return p;
}

ReplayPreview ReplayPreview::read(const ActionPreview &preview)
{
    const nlohmann::json &d = preview.details;
    ReplayPreview p;
    p.sentence = preview.sentence;
    p.replayId = text(d, "replay_id");
    p.queue = text(d, "queue");
    p.set = d.value("set", std::int64_t{0});
    p.count = d.value("count", std::int64_t{0});
    p.unknownIds = ids(d, "unknown_ids");
    p.replayedBefore = ids(d, "replayed_before");
    if (const auto byClass = d.find("by_class"); byClass != d.end() && byClass->is_object())
        for (const auto &[name, n] : byClass->items())
            p.byClass[name] = n.get<std::int64_t>();
    for (const nlohmann::json &row : elements(d, "items")) {
        Item item;
        item.msgId = row.value("msg_id", std::int64_t{0});
        item.ns = text(row, "namespace");
        item.key = text(row, "key");
        item.replayClass = text(row, "class");
        item.detail = text(row, "detail");
        item.generation = row.value("generation", 0);
        p.items.push_back(std::move(item));
    }
    return p;
}

RunActionPreview RunActionPreview::read(const ActionPreview &preview)
{
    const nlohmann::json &d = preview.details;
    RunActionPreview p;
    p.sentence = preview.sentence;
    p.run = d.value("run", nlohmann::json());
    p.action = text(d, "action");
    p.fourEyes = d.value("four_eyes", false);
    p.requestId = text(d, "request_id");
    p.after = d.value("after", nlohmann::json());
    return p;
}

BulkPreview BulkPreview::read(const ActionPreview &preview)
{
    const nlohmann::json &d = preview.details;
    BulkPreview p;
    p.sentence = preview.sentence;
    p.action = text(d, "action");
    p.count = d.value("count", std::int64_t{0});
    p.changed = d.value("changed", std::int64_t{0});
    p.notTaken = d.value("not_taken", std::int64_t{0});
    p.alreadyDone = d.value("already_done", std::int64_t{0});
    for (const nlohmann::json &row : elements(d, "targets")) {
        Target t;
        t.ns = text(row, "namespace");
        t.key = text(row, "key");
        t.version = row.value("version", std::int64_t{0});
        t.state = text(row, "state");
        t.changed = row.value("changed", false);
        t.taken = row.value("taken", true);
        t.alreadyDone = row.value("already_done", false);
        p.targets.push_back(std::move(t));
    }
    return p;
}

} // namespace idempo
