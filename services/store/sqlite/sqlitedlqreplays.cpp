// SPDX-License-Identifier: Apache-2.0
#include "sqlitedlqreplays.h"

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "canonicaljson.h"
#include "error.h"
#include "recordjson.h"
#include "sqliteledgerrows.h"

namespace idempo::sqlitedlqreplays {
namespace {

using namespace sqliterows;

constexpr std::string_view kQueuePrefix = "queue:";

struct Replay
{
    std::string replayId;
    std::string who;
    std::int64_t begunSeq = 0;
    std::optional<std::int64_t> finishedSeq;
    std::int64_t createdAtMs = 0;
    std::int64_t beatAtMs = 0;
    std::int64_t idleLimitMs = 0;
    std::optional<std::int64_t> takenOverSeq;
    std::int64_t held = 0; ///< how many of the ids asked about it holds
};

const QString kReplayColumns =
    QStringLiteral("replay_id, who, begun_seq, finished_seq, created_at_ms, beat_at_ms, "
                   "idle_limit_ms, taken_over_seq");

Replay readReplay(Statement &q)
{
    return {toStd(q->value(0)),         toStd(q->value(1)),         q->value(2).toLongLong(),
            toOptionalInt(q->value(3)), q->value(4).toLongLong(),   q->value(5).toLongLong(),
            q->value(6).toLongLong(),   toOptionalInt(q->value(7)), 0};
}

std::string iso(std::int64_t ms)
{
    return timestampJson(ms).get<std::string>();
}

nlohmann::json detailOf(const AuditEntry &entry)
{
    nlohmann::json detail = nlohmann::json::parse(entry.detail, nullptr, false);
    if (!detail.is_object() || !detail.contains("replay_id") || !detail["replay_id"].is_string())
        throw Error(ErrorCode::Internal,
                    "the " + entry.action + " audit detail has no \"replay_id\"");
    return detail;
}

std::string queueOf(const AuditEntry &entry)
{
    return entry.target.substr(entry.target.starts_with(kQueuePrefix) ? kQueuePrefix.size() : 0);
}

std::int64_t integerMember(const nlohmann::json &detail, const char *name,
                           const std::string &action)
{
    if (!detail.contains(name) || !detail[name].is_number_integer())
        throw Error(ErrorCode::Internal,
                    "the " + action + " audit detail has no whole number \"" + name + "\"");
    return detail[name].get<std::int64_t>();
}

/// The open replays of `queue` that hold one of `ids` or are `replayId`, oldest first.
std::vector<Replay> openReplays(SqliteConnection &db, const std::string &queue,
                                const std::string &replayId, const nlohmann::json &ids)
{
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kReplayColumns +
                          QStringLiteral(", (SELECT count(*) FROM json_each(r.msg_ids) AS a "
                                         "WHERE a.value IN (SELECT value FROM json_each(?))) "
                                         "FROM dlq_replays AS r WHERE queue_name = ? AND "
                                         "finished_seq IS NULL ORDER BY begun_seq"),
                      {text(ids.dump()), text(queue)}, "read open replays");
    std::vector<Replay> found;
    while (q->next()) {
        Replay r = readReplay(q);
        r.held = q->value(8).toLongLong();
        if (r.held > 0 || r.replayId == replayId)
            found.push_back(std::move(r));
    }
    return found;
}

std::optional<Replay> replayNamed(SqliteConnection &db, const std::string &queue,
                                  const std::string &replayId)
{
    Statement q = run(db,
                      QStringLiteral("SELECT ") + kReplayColumns +
                          QStringLiteral(" FROM dlq_replays WHERE replay_id = ? AND "
                                         "queue_name = ?"),
                      {text(replayId), text(queue)}, "read replay");
    if (!q->next())
        return std::nullopt;
    return readReplay(q);
}

/// Throws unless run `begunSeq` of replay `replayId` still holds it (as idempo.dlq_replay_run).
void requireRun(SqliteConnection &db, const std::string &queue, const std::string &replayId,
                std::optional<std::int64_t> begunSeq)
{
    const std::optional<Replay> r = replayNamed(db, queue, replayId);
    if (r && (r->takenOverSeq || (!r->finishedSeq && begunSeq && *begunSeq != r->begunSeq)))
        throw Error(ErrorCode::Refused,
                    "replay " + replayId + " of queue '" + queue +
                        "' (the run begun at audit seq " +
                        std::to_string(begunSeq.value_or(r->begunSeq)) +
                        ") was taken over as abandoned by the replay begun at audit seq " +
                        std::to_string(r->takenOverSeq.value_or(r->begunSeq)) +
                        " (its dlq_replay record names the run it took over and that run's last "
                        "requeue): this run requeues nothing more");
    if (!r || r->finishedSeq)
        throw Error(ErrorCode::NotFound,
                    "no open replay '" + replayId + "' of queue '" + queue + "'");
}

void checkBegin(SqliteConnection &db, AuditEntry &entry, std::int64_t nowMs)
{
    nlohmann::json detail = detailOf(entry);
    const std::string queue = queueOf(entry);
    const std::string replayId = detail["replay_id"].get<std::string>();
    const std::int64_t idleLimit = integerMember(detail, "idle_limit_ms", entry.action);
    if (idleLimit < 1000 || idleLimit > 604'800'000)
        throw Error(ErrorCode::InvalidArgument,
                    "idle_limit_ms must be from 1000 to 604800000 (one second to seven days), "
                    "not " +
                        std::to_string(idleLimit));
    if (!detail.contains("ids") || !detail["ids"].is_array())
        throw Error(ErrorCode::Internal, "the dlq_replay audit detail has no \"ids\"");
    nlohmann::json abandoned = nlohmann::json::array();
    for (const Replay &r : openReplays(db, queue, replayId, detail["ids"])) {
        if (r.beatAtMs + r.idleLimitMs > nowMs)
            throw Error(ErrorCode::InProgress,
                        "replay " + r.replayId + " of queue '" + queue + "' is open: " + r.who +
                            " has run it since " + iso(r.createdAtMs) + ", last active " +
                            iso(r.beatAtMs) + "; it holds " + std::to_string(r.held) +
                            " of these dead letters. Nothing was written: run this replay again "
                            "once it has finished, or after " +
                            iso(r.beatAtMs + r.idleLimitMs) +
                            " if it requeues nothing more by then (it is then taken over as "
                            "abandoned)");
        abandoned.push_back({{"replay_id", r.replayId},
                             {"who", r.who},
                             {"begun_seq", r.begunSeq},
                             {"begun_at_ms", r.createdAtMs},
                             {"last_requeue_at_ms", r.beatAtMs},
                             {"idle_limit_ms", r.idleLimitMs}});
    }
    if (!abandoned.empty()) {
        detail["took_over"] = abandoned;
        entry.detail = canonicalJson(detail);
    }
}

void recordBegin(SqliteConnection &db, const AuditRecord &record, std::int64_t nowMs)
{
    const nlohmann::json detail = detailOf(record.entry);
    const std::string queue = queueOf(record.entry);
    const std::string replayId = detail["replay_id"].get<std::string>();
    const std::string ids = detail["ids"].dump();
    run(db,
        QStringLiteral("UPDATE dlq_replays SET finished_seq = ?, taken_over_seq = ? WHERE "
                       "queue_name = ? AND finished_seq IS NULL AND replay_id <> ? AND EXISTS "
                       "(SELECT 1 FROM json_each(msg_ids) AS a WHERE a.value IN (SELECT value "
                       "FROM json_each(?)))"),
        {static_cast<qlonglong>(record.seq), static_cast<qlonglong>(record.seq), text(queue),
         text(replayId), text(ids)},
        "close abandoned replays");
    run(db,
        QStringLiteral("INSERT INTO dlq_replays (replay_id, queue_name, who, msg_ids, begun_seq, "
                       "created_at_ms, beat_at_ms, idle_limit_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                       "ON CONFLICT (replay_id) DO UPDATE SET who = excluded.who, msg_ids = "
                       "excluded.msg_ids, begun_seq = excluded.begun_seq, created_at_ms = "
                       "excluded.created_at_ms, beat_at_ms = excluded.beat_at_ms, idle_limit_ms = "
                       "excluded.idle_limit_ms, finished_seq = NULL, taken_over_seq = NULL"),
        {text(replayId), text(queue), text(record.entry.who), text(ids),
         static_cast<qlonglong>(record.seq), static_cast<qlonglong>(nowMs),
         static_cast<qlonglong>(nowMs),
         static_cast<qlonglong>(integerMember(detail, "idle_limit_ms", record.entry.action))},
        "open replay");
}

} // namespace

void checkAudit(SqliteConnection &db, AuditEntry &entry, std::int64_t nowMs)
{
    if (entry.action == "dlq_replay") {
        checkBegin(db, entry, nowMs);
    } else if (entry.action == "dlq_replay_finished") {
        const nlohmann::json detail = detailOf(entry);
        requireRun(db, queueOf(entry), detail["replay_id"].get<std::string>(),
                   integerMember(detail, "begun_seq", entry.action));
    }
}

void recordAudit(SqliteConnection &db, const AuditRecord &record, std::int64_t nowMs)
{
    if (record.entry.action == "dlq_replay") {
        recordBegin(db, record, nowMs);
    } else if (record.entry.action == "dlq_replay_finished") {
        run(db, QStringLiteral("UPDATE dlq_replays SET finished_seq = ? WHERE replay_id = ?"),
            {static_cast<qlonglong>(record.seq),
             text(detailOf(record.entry)["replay_id"].get<std::string>())},
            "close replay");
    }
}

void checkRequeue(SqliteConnection &db, const std::string &queue, const std::string &headersJson,
                  std::int64_t nowMs)
{
    const nlohmann::json headers = nlohmann::json::parse(headersJson, nullptr, false);
    const auto replay = headers.is_object() ? headers.find("replay") : headers.end();
    if (replay == headers.end() || !replay->is_object() || !replay->contains("replay_id") ||
        !(*replay)["replay_id"].is_string())
        return;
    const std::string replayId = (*replay)["replay_id"].get<std::string>();
    if (!replayNamed(db, queue, replayId))
        return;
    const auto begun = replay->find("begun_seq");
    requireRun(db, queue, replayId,
               begun != replay->end() && begun->is_number_integer()
                   ? std::optional(begun->get<std::int64_t>())
                   : std::nullopt);
    run(db, QStringLiteral("UPDATE dlq_replays SET beat_at_ms = ? WHERE replay_id = ?"),
        {static_cast<qlonglong>(nowMs), text(replayId)}, "stamp replay");
}

} // namespace idempo::sqlitedlqreplays
