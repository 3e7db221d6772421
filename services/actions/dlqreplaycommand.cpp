// SPDX-License-Identifier: Apache-2.0
#include "dlqreplaycommand.h"

#include <algorithm>
#include <map>
#include <set>

#include "canonicaljson.h"
#include "error.h"
#include "ledgerrules.h"
#include "pacedrun.h"
#include "queueenvelope.h"
#include "queuename.h"

namespace idempo {
namespace {

bool replayable(ReplayClass c)
{
    return c == ReplayClass::AlreadyCompleted || c == ReplayClass::WillExecute;
}

nlohmann::json itemJson(const ReplayItem &item)
{
    return {{"msg_id", item.msgId},  {"key", item.key},
            {"namespace", item.ns},  {"class", replayClassName(item.replayClass)},
            {"detail", item.detail}, {"generation", item.generation}};
}

nlohmann::json headersOf(const QueueMessage &m)
{
    if (m.headers.empty())
        return nlohmann::json::object();
    nlohmann::json h = nlohmann::json::parse(m.headers, nullptr, false);
    return h.is_object() ? h : nlohmann::json::object();
}

} // namespace

std::string_view replayClassName(ReplayClass c)
{
    switch (c) {
    case ReplayClass::AlreadyCompleted:
        return "already_completed";
    case ReplayClass::WillExecute:
        return "will_execute";
    case ReplayClass::PayloadMismatch:
        return "payload_mismatch";
    case ReplayClass::ExpiredByRetention:
        return "expired_by_retention";
    case ReplayClass::Unreadable:
        return "unreadable";
    case ReplayClass::AmbiguousNamespace:
        return "ambiguous_namespace";
    }
    return "unreadable";
}

std::int64_t DlqReplayCommand::idleLimitMs(double ratePerSecond)
{
    const double gapMs = 1000.0 / ratePerSecond;
    return static_cast<std::int64_t>(std::clamp(4 * gapMs, static_cast<double>(MinIdleLimitMs),
                                                static_cast<double>(MaxIdleLimitMs)));
}

DlqReplayCommand::DlqReplayCommand(LedgerStore &store, MessageQueue &queue, ActorIdentity actor,
                                   Request request, Options options)
    : m_store(store), m_queue(queue), m_actor(std::move(actor)), m_request(std::move(request)),
      m_options(std::move(options))
{
    std::sort(m_request.ids.begin(), m_request.ids.end());
    m_request.ids.erase(std::unique(m_request.ids.begin(), m_request.ids.end()),
                        m_request.ids.end());
    if (m_request.replayId.empty())
        m_request.replayId = "rp-" + payloadFingerprint({{"queue", m_request.queue},
                                                         {"ns", m_request.ns},
                                                         {"ids", m_request.ids},
                                                         {"operator", m_actor.name}})
                                         .substr(0, 32);
}

std::vector<std::int64_t> DlqReplayCommand::resolveFilter(MessageQueue &queue,
                                                          const std::string &queueName,
                                                          const std::string &filter)
{
    const auto eq = filter.find('=');
    const std::string field = filter.substr(0, eq);
    const std::string value = eq == std::string::npos ? std::string() : filter.substr(eq + 1);
    if (filter != "all" &&
        !((field == "error_class" || field == "key_prefix") && eq != std::string::npos))
        throw Error(ErrorCode::InvalidArgument,
                    "unknown filter '" + filter +
                        "': expected all, error_class=CLASS or key_prefix=PREFIX");
    // An empty prefix would take every dead letter: "all" says that on purpose.
    if (filter != "all" && value.empty())
        throw Error(ErrorCode::InvalidArgument, "filter '" + filter +
                                                    "' has no value after '=': write " + field +
                                                    "=VALUE, or all for every dead letter");
    std::vector<std::int64_t> ids;
    std::int64_t after = 0;
    for (;;) {
        const std::vector<DeadLetter> page = queue.deadLetters(queueName, after, 1000);
        for (const DeadLetter &d : page) {
            bool match = filter == "all";
            if (field == "error_class")
                match = d.provenance.lastErrorClass &&
                        errorClassName(*d.provenance.lastErrorClass) == value;
            if (field == "key_prefix") {
                const nlohmann::json body =
                    nlohmann::json::parse(d.message.message, nullptr, false);
                const auto key = body.is_object() ? body.find("idempotency_key") : body.end();
                match = key != body.end() && key->is_string() &&
                        key->get<std::string>().starts_with(value);
            }
            if (match)
                ids.push_back(d.message.msgId);
        }
        if (page.size() < 1000)
            break;
        after = page.back().message.msgId;
    }
    return ids;
}

std::vector<DeadLetter> DlqReplayCommand::frozenLetters()
{
    const std::set<std::int64_t> wanted(m_request.ids.begin(), m_request.ids.end());
    std::vector<DeadLetter> letters;
    if (wanted.empty())
        return letters;
    std::int64_t after = *wanted.begin() - 1;
    while (after < *wanted.rbegin()) {
        const std::vector<DeadLetter> page = m_queue.deadLetters(m_request.queue, after, 1000);
        for (const DeadLetter &d : page)
            if (wanted.count(d.message.msgId))
                letters.push_back(d);
        if (page.size() < 1000)
            break;
        after = page.back().message.msgId;
    }
    return letters;
}

ReplayItem DlqReplayCommand::classify(const DeadLetter &letter, std::int64_t nowMs)
{
    ReplayItem item;
    item.msgId = letter.message.msgId;
    const nlohmann::json headers = headersOf(letter.message);
    if (const auto r = headers.find("replay"); r != headers.end() && r->is_object() &&
                                               r->contains("generation") &&
                                               (*r)["generation"].is_number_integer())
        item.generation = (*r)["generation"].get<int>();
    QueueEnvelope envelope;
    try {
        envelope = QueueEnvelope::fromJson(nlohmann::json::parse(letter.message.message));
    } catch (const std::exception &e) {
        item.replayClass = ReplayClass::Unreadable;
        item.detail = e.what();
        return item;
    }
    item.key = envelope.idempotencyKey;
    item.ns = m_request.ns;
    if (item.ns.empty()) {
        const std::vector<std::string> found = namespacesOf(item.key);
        if (found.size() > 1) {
            item.replayClass = ReplayClass::AmbiguousNamespace;
            item.detail = "key recorded in " + std::to_string(found.size()) + " namespaces (";
            for (std::size_t i = 0; i < found.size(); ++i)
                item.detail += (i ? ", " : "") + found[i];
            item.detail += "): replay it naming its namespace";
            return item;
        }
        item.ns = found.empty() ? std::string("default") : found.front();
    }
    const std::optional<Operation> op = m_store.find(item.ns, envelope.idempotencyKey);
    if (op && !isExpired(*op, nowMs)) {
        const std::string where = " in namespace " + item.ns;
        if (payloadFingerprint(envelope.payload, op->fingerprintFields) != op->fingerprint) {
            item.replayClass = ReplayClass::PayloadMismatch;
            item.detail = "the payload differs from the one operation " + op->key + where +
                          " was recorded with";
        } else if (isFinal(op->state)) {
            item.replayClass = ReplayClass::AlreadyCompleted;
            item.detail = "operation is " + std::string(stateName(op->state)) + where +
                          ": the claim will replay its result";
        } else {
            item.replayClass = ReplayClass::WillExecute;
            item.detail = "operation is " + std::string(stateName(op->state)) + where;
        }
        return item;
    }
    if (nowMs - envelope.producedAtMs >= m_options.retentionMs) {
        item.replayClass = ReplayClass::ExpiredByRetention;
        item.detail = "produced longer ago than the ledger's retention: a duplicate could no "
                      "longer be recognised";
        return item;
    }
    item.replayClass = ReplayClass::WillExecute;
    item.detail = "no operation recorded yet in namespace " + item.ns;
    return item;
}

std::vector<std::string> DlqReplayCommand::namespacesOf(const std::string &key)
{
    std::vector<std::string> found;
    ListFilter filter;
    filter.keyPrefix = key;
    filter.limit = 200;
    for (;;) {
        const std::vector<Operation> page = m_store.list(filter);
        for (const Operation &op : page)
            if (op.key == key && std::find(found.begin(), found.end(), op.ns) == found.end())
                found.push_back(op.ns);
        if (static_cast<int>(page.size()) < filter.limit)
            break;
        filter.afterId = page.back().id;
    }
    return found;
}

std::vector<ReplayItem> DlqReplayCommand::dryRun()
{
    m_items.clear();
    const std::int64_t now = m_store.nowMs();
    for (const DeadLetter &letter : frozenLetters())
        m_items.push_back(classify(letter, now));
    std::set<std::int64_t> missing(m_request.ids.begin(), m_request.ids.end());
    for (const ReplayItem &item : m_items)
        missing.erase(item.msgId);
    m_replayedBefore.clear();
    if (!missing.empty()) {
        // An id a replay of this queue froze before left the dead-letter queue through it (a
        // cancelled replay run again); any other missing id names no dead letter at all.
        for (const std::int64_t id : frozenBefore(missing)) {
            m_replayedBefore.push_back(id);
            missing.erase(id);
        }
    }
    m_unknown.assign(missing.begin(), missing.end());
    m_classified = true;
    return m_items;
}

std::vector<std::int64_t> DlqReplayCommand::frozenBefore(const std::set<std::int64_t> &ids)
{
    std::set<std::int64_t> found;
    const std::string target = "queue:" + m_request.queue;
    std::int64_t after = 0;
    for (;;) {
        const std::vector<AuditRecord> page = m_store.auditLog(after, 1000);
        for (const AuditRecord &r : page) {
            if (r.entry.action != "dlq_replay" || r.entry.target != target)
                continue;
            const nlohmann::json detail = nlohmann::json::parse(r.entry.detail, nullptr, false);
            const auto frozen = detail.is_object() ? detail.find("ids") : detail.end();
            if (frozen == detail.end() || !frozen->is_array())
                continue;
            for (const nlohmann::json &id : *frozen)
                if (id.is_number_integer() && ids.count(id.get<std::int64_t>()))
                    found.insert(id.get<std::int64_t>());
        }
        if (page.size() < 1000 || found.size() == ids.size())
            break;
        after = page.back().seq;
    }
    return {found.begin(), found.end()};
}

std::string DlqReplayCommand::unknownIdsProblem(const std::vector<std::int64_t> &unknown) const
{
    constexpr std::size_t Named = 20;
    std::string ids;
    for (std::size_t i = 0; i < unknown.size() && i < Named; ++i)
        ids += (i == 0 ? "" : ", ") + std::to_string(unknown[i]);
    if (unknown.size() > Named)
        ids += " and " + std::to_string(unknown.size() - Named) + " more";
    return std::string(unknown.size() == 1 ? "msg_id " : "msg_ids ") + ids +
           (unknown.size() == 1 ? " is" : " are") + " not in the dead-letter queue of " +
           m_request.queue + ": a replay set names only dead letters";
}

std::vector<std::string> DlqReplayCommand::validate()
{
    std::vector<std::string> problems;
    if (!roleMay(m_actor.role, Capability::Replay))
        problems.push_back(roleRefusal(m_actor.role, Capability::Replay));
    if (m_request.ids.empty())
        problems.push_back(
            "the replay set is empty: select messages or a filter that matches some");
    if (const auto rate =
            PacedRun::rateProblem(m_request.ratePerSecond, MaxRatePerSecond, "messages"))
        problems.push_back(*rate);
    if (QueueName(m_request.queue).isDeadLetterName())
        problems.push_back("'" + m_request.queue +
                           "' is a dead-letter queue: name its source queue");
    dryRun();
    if (!m_unknown.empty())
        problems.push_back(unknownIdsProblem(m_unknown));
    return problems;
}

ActionPreview DlqReplayCommand::describe()
{
    if (!m_classified)
        dryRun();
    std::map<std::string, int> byClass;
    for (const ReplayClass c : {ReplayClass::AlreadyCompleted, ReplayClass::WillExecute,
                                ReplayClass::PayloadMismatch, ReplayClass::ExpiredByRetention,
                                ReplayClass::Unreadable, ReplayClass::AmbiguousNamespace})
        byClass[std::string(replayClassName(c))] = 0;
    nlohmann::json items = nlohmann::json::array();
    std::int64_t count = 0;
    for (const ReplayItem &item : m_items) {
        ++byClass[std::string(replayClassName(item.replayClass))];
        count += replayable(item.replayClass) ? 1 : 0;
        items.push_back(itemJson(item));
    }
    const std::string sentence =
        "Replay " + std::to_string(count) + " dead letter" + (count == 1 ? "" : "s") + " to " +
        m_request.queue + ": " + std::to_string(byClass["will_execute"]) + " will execute, " +
        std::to_string(byClass["already_completed"]) + " will be suppressed as replays; " +
        std::to_string(static_cast<std::int64_t>(m_items.size()) - count) +
        " stay in the dead-letter queue";
    return {sentence,
            {{"replay_id", m_request.replayId},
             {"queue", m_request.queue},
             {"set", m_request.ids.size()},
             {"count", count},
             {"unknown_ids", m_unknown},
             {"replayed_before", m_replayedBefore},
             {"by_class", byClass},
             {"items", items}}};
}

ReplayOutcome DlqReplayCommand::execute()
{
    if (!roleMay(m_actor.role, Capability::Replay))
        throw Error(ErrorCode::Refused, roleRefusal(m_actor.role, Capability::Replay));
    if (m_request.reason.empty())
        throw Error(ErrorCode::Refused, "a reason is required");
    if (const auto rate =
            PacedRun::rateProblem(m_request.ratePerSecond, MaxRatePerSecond, "messages"))
        throw Error(ErrorCode::InvalidArgument, *rate);
    const ActionPreview preview = describe();
    if (!m_unknown.empty())
        throw Error(ErrorCode::Refused, unknownIdsProblem(m_unknown));
    const std::int64_t count = preview.details.at("count").get<std::int64_t>();
    if (!m_request.confirmCount || *m_request.confirmCount != count)
        throw Error(ErrorCode::Refused,
                    "confirm the count: " + std::to_string(count) + " message" +
                        (count == 1 ? "" : "s") + " would be replayed" +
                        (m_request.confirmCount ? ", not " + std::to_string(*m_request.confirmCount)
                                                : std::string()));
    const std::int64_t notReplayed = static_cast<std::int64_t>(m_items.size()) - count;
    if (count == 0) {
        // Nothing to requeue: no replay happens, so there is nothing to audit either.
        return {m_request.replayId, 0, 0, notReplayed, false, 0, 0};
    }

    const auto audit = [&](const char *action, nlohmann::json detail) {
        AuditEntry entry;
        entry.who = m_actor.name;
        entry.role = m_actor.role;
        entry.action = action;
        entry.target = "queue:" + m_request.queue;
        entry.reason = m_request.reason;
        detail["replay_id"] = m_request.replayId;
        entry.detail = canonicalJson(detail);
        return m_store
            .applyAction({m_request.ns.empty() ? std::string("default") : m_request.ns, {}, {}},
                         [&](const ActionState &) {
                             ActionPlan plan;
                             plan.audit = entry;
                             return plan;
                         })
            .audit->seq;
    };
    // Refused (InProgress) while another live replay of the queue holds one of the ids.
    const std::int64_t startSeq =
        audit("dlq_replay", {{"ids", m_request.ids},
                             {"count", count},
                             {"by_class", preview.details.at("by_class")},
                             {"rate_per_s", m_request.ratePerSecond},
                             {"idle_limit_ms", idleLimitMs(m_request.ratePerSecond)}});

    PacedRun run(m_request.ratePerSecond, count,
                 {m_options.sleep, m_options.progress, m_options.cancelled});
    std::int64_t requeued = 0;
    std::int64_t taken = 0;
    const std::vector<DeadLetter> letters = frozenLetters();
    for (const ReplayItem &item : m_items) {
        if (!replayable(item.replayClass))
            continue;
        if (!run.next())
            break;
        const auto letter = std::find_if(letters.begin(), letters.end(), [&](const DeadLetter &d) {
            return d.message.msgId == item.msgId;
        });
        std::optional<std::int64_t> sent;
        if (letter != letters.end()) {
            nlohmann::json headers = headersOf(letter->message);
            const nlohmann::json provenance =
                headers.contains("dlq") ? headers["dlq"] : nlohmann::json();
            headers.erase("dlq");
            headers["replay"] = {{"replay_id", m_request.replayId},
                                 {"begun_seq", startSeq},
                                 {"of_msg_id", item.msgId},
                                 {"generation", item.generation + 1},
                                 {"dead_letter", provenance}};
            sent = m_queue.requeueDeadLetter(m_request.queue, item.msgId, canonicalJson(headers));
        }
        ++(sent ? requeued : taken);
        run.done();
    }
    const bool cancelled = run.cancelled();
    const std::int64_t endSeq = audit("dlq_replay_finished", {{"begun_seq", startSeq},
                                                              {"requeued", requeued},
                                                              {"taken_by_other_replay", taken},
                                                              {"not_replayed", notReplayed},
                                                              {"cancelled", cancelled}});
    return {m_request.replayId, requeued, taken, notReplayed, cancelled, startSeq, endSeq};
}

} // namespace idempo
