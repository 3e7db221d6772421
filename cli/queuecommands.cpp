// SPDX-License-Identifier: Apache-2.0
// The queue commands: `queue` over the message queues and `dlq` over their dead letters
// (`dlq replay` is a guarded action: dlqreplaycommand.h validates, describes and executes it).
#include <atomic>
#include <csignal>
#include <limits>

#include <unistd.h>

#include "context.h"
#include "dlqreplaycommand.h"
#include "error.h"
#include "guardedactionbuilder.h"
#include "optionvalue.h"
#include "output.h"
#include "queueenvelope.h"
#include "queuename.h"
#include "queuerules.h"
#include "recordjson.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

std::string queueName(const Context &c)
{
    return c.positional(2, "NAME").toStdString();
}

std::int64_t messageId(const Context &c)
{
    return parseWholeNumber("MSG_ID", c.positional(3, "MSG_ID").toStdString(), 1, MaxWholeNumber);
}

/// --read-ct: the read_ct `queue read` answered, naming the delivery an ack, nack or archive is
/// of; unset when not given.
std::optional<int> readCount(const Context &c)
{
    if (!c.parser.isSet(QStringLiteral("read-ct")))
        return std::nullopt;
    return static_cast<int>(
        c.integerOption(QStringLiteral("read-ct"), 1, std::numeric_limits<int>::max()));
}

nlohmann::json queueMessageJson(const QueueMessage &m)
{
    return {{"msg_id", m.msgId},
            {"read_ct", m.readCount},
            {"enqueued_at", timestampJson(m.enqueuedAtMs)},
            {"last_read_at", timestampJson(m.lastReadAtMs)},
            {"vt", timestampJson(m.vtMs)},
            {"message", nlohmann::json::parse(m.message)},
            {"headers", m.headers.empty() ? nlohmann::json() : nlohmann::json::parse(m.headers)}};
}

std::string describe(const QueueMessage &m)
{
    return "msg " + std::to_string(m.msgId) + "  read_ct=" + std::to_string(m.readCount) +
           "  vt=" + when(m.vtMs) + "  " + escapedJson(m.message) +
           (m.headers.empty() ? "" : "  headers=" + escapedJson(m.headers));
}

int cmdQueueCreate(Context &c)
{
    QueueOptions options;
    options.maxReads = static_cast<int>(c.integerOption(
        QStringLiteral("max-reads"), 1, std::numeric_limits<int>::max(), options.maxReads));
    const QueueInfo info = c.queue().createQueue(queueName(c), options);
    c.print({{"queue", info.name},
             {"max_reads", info.maxReads.value_or(0)},
             {"dead_letter_queue", info.deadLetterQueue},
             {"created_at", timestampJson(info.createdAtMs)}},
            "queue " + info.name + " ready: max reads " +
                std::to_string(info.maxReads.value_or(0)) + ", dead letters go to " +
                info.deadLetterQueue);
    return ExitOk;
}

/// `queue send --envelope`: the message must be an envelope as `worker` and `dlq replay` read it
/// (docs/envelope.md, resources/schema/envelope.schema.json), judged by the engine's own parser.
void requireEnvelope(const std::string &message)
{
    const nlohmann::json parsed = nlohmann::json::parse(message, nullptr, false);
    if (parsed.is_discarded())
        throw Error(ErrorCode::InvalidJson, "--envelope: the message is not JSON text");
    try {
        QueueEnvelope::fromJson(parsed);
    } catch (const Error &e) {
        throw Error(
            e.code() == ErrorCode::InvalidKey ? ErrorCode::InvalidKey : ErrorCode::InvalidJson,
            std::string("--envelope: the message is not a queue envelope (docs/envelope.md): ") +
                e.what());
    }
}

int cmdQueueSend(Context &c)
{
    const std::string name = queueName(c);
    if (!c.parser.isSet(QStringLiteral("message")))
        throw UsageError{"missing --message JSON (or @FILE)"};
    const std::string message = c.jsonArgument(QStringLiteral("message"));
    if (c.parser.isSet(QStringLiteral("envelope")))
        requireEnvelope(message);
    const std::string headers = c.parser.isSet(QStringLiteral("headers"))
                                    ? c.jsonArgument(QStringLiteral("headers"))
                                    : std::string();
    const std::int64_t delayMs = c.parser.isSet(QStringLiteral("delay"))
                                     ? c.secondsOption(QStringLiteral("delay"), 0, MaxSeconds)
                                     : 0;
    const std::int64_t msgId = c.queue().send(name, message, headers, delayMs);
    c.print({{"queue", name}, {"msg_id", msgId}},
            "sent message " + std::to_string(msgId) + " to " + name);
    return ExitOk;
}

int cmdQueueRead(Context &c)
{
    const std::string name = queueName(c);
    const std::int64_t vtMs = c.parser.isSet(QStringLiteral("vt"))
                                  ? c.secondsOption(QStringLiteral("vt"), 0, MaxSeconds)
                                  : 30'000;
    const std::int64_t quantity = c.integerOption(QStringLiteral("qty"), 1, MaxQueueBatch, 1);
    const auto messages = c.queue().read(name, vtMs, static_cast<int>(quantity));
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const QueueMessage &m : messages) {
        rows.push_back(queueMessageJson(m));
        human += describe(m) + '\n';
    }
    if (!human.empty())
        human.pop_back();
    c.print({{"queue", name}, {"messages", rows}},
            human.empty() ? "no visible message in " + name : human);
    return ExitOk;
}

int cmdQueueAck(Context &c)
{
    const std::string name = queueName(c);
    const std::int64_t msgId = messageId(c);
    const std::optional<int> read = readCount(c);
    if (!read)
        throw UsageError{"missing --read-ct N: an ack names the delivery it acknowledges (the "
                         "read_ct `queue read` answered)"};
    c.queue().ack(name, {msgId, *read});
    c.print({{"queue", name}, {"msg_id", msgId}, {"read_ct", *read}, {"acked", true}},
            "acknowledged read " + std::to_string(*read) + " of message " + std::to_string(msgId) +
                " of " + name + " (deleted)");
    return ExitOk;
}

int cmdQueueArchive(Context &c)
{
    const std::string name = queueName(c);
    const std::int64_t msgId = messageId(c);
    const std::optional<int> read = readCount(c);
    if (read)
        c.queue().archive(name, ReadReceipt{msgId, *read});
    else if (!c.queue().archive(name, msgId))
        throw Error(ErrorCode::NotFound,
                    "queue '" + name + "' holds no message " + std::to_string(msgId));
    c.print({{"queue", name},
             {"msg_id", msgId},
             {"read_ct", read ? nlohmann::json(*read) : nlohmann::json()},
             {"archived", true}},
            "archived message " + std::to_string(msgId) + " of " + name);
    return ExitOk;
}

int cmdQueueNack(Context &c)
{
    const std::string name = queueName(c);
    const std::int64_t msgId = messageId(c);
    if (!c.parser.isSet(QStringLiteral("class")))
        throw UsageError{"missing --class (transient, rate_limited, validation, auth, "
                         "policy_denied, unknown_outcome)"};
    const auto errorClass = parseErrorClass(c.parser.value(QStringLiteral("class")).toStdString());
    if (!errorClass)
        throw UsageError{"unknown --class " +
                         quotedValue(c.parser.value(QStringLiteral("class")).toStdString())};
    const std::string detail = c.parser.value(QStringLiteral("detail")).toStdString();
    const std::int64_t retryMs = c.parser.isSet(QStringLiteral("retry-after"))
                                     ? c.secondsOption(QStringLiteral("retry-after"), 0, MaxSeconds)
                                     : 0;
    const std::optional<int> read = readCount(c);
    const QueueMessage m =
        read ? c.queue().nack(name, ReadReceipt{msgId, *read}, *errorClass, detail, retryMs)
             : c.queue().nack(name, msgId, *errorClass, detail, retryMs);
    c.print({{"queue", name},
             {"message", queueMessageJson(m)},
             {"error_class", errorClassName(*errorClass)},
             {"error_detail", detail}},
            "message " + std::to_string(msgId) + " of " + name + " failed (" +
                std::string(errorClassName(*errorClass)) +
                (detail.empty() ? "" : ": " + escapedText(detail)) + "); visible again at " +
                when(m.vtMs));
    return ExitOk;
}

int cmdQueueList(Context &c)
{
    const std::string name = queueName(c);
    const int limit = pageLimit(c);
    const auto messages = c.queue().browse(name, afterId(c), limit);
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const QueueMessage &m : messages) {
        rows.push_back(queueMessageJson(m));
        human += describe(m) + '\n';
    }
    const bool full = static_cast<int>(messages.size()) == limit;
    if (full)
        human += "(more: --after " + std::to_string(messages.back().msgId) + ")\n";
    if (!human.empty())
        human.pop_back();
    c.print({{"queue", name},
             {"messages", rows},
             {"next_after", full ? nlohmann::json(messages.back().msgId) : nlohmann::json()}},
            human.empty() ? "no messages in " + name : human);
    return ExitOk;
}

int cmdQueueMetrics(Context &c)
{
    const QueueMetrics m = c.queue().metrics(queueName(c));
    const auto age = [](std::optional<std::int64_t> ms) {
        return ms ? nlohmann::json(*ms) : nlohmann::json();
    };
    const auto ageText = [](std::optional<std::int64_t> ms) {
        return ms ? std::to_string(*ms) + " ms" : std::string("-");
    };
    // pgmq's metric names, with ages in milliseconds instead of seconds.
    c.print({{"queue_name", m.queue},
             {"queue_length", m.length},
             {"queue_visible_length", m.visibleLength},
             {"newest_msg_age_ms", age(m.newestMessageAgeMs)},
             {"oldest_msg_age_ms", age(m.oldestMessageAgeMs)},
             {"total_messages", m.totalMessages},
             {"scrape_time", timestampJson(m.scrapeTimeMs)}},
            m.queue + ": " + std::to_string(m.length) + " message(s), " +
                std::to_string(m.visibleLength) + " visible, " + std::to_string(m.totalMessages) +
                " sent in all\noldest " + ageText(m.oldestMessageAgeMs) + ", newest " +
                ageText(m.newestMessageAgeMs));
    return ExitOk;
}

int cmdQueue(Context &c)
{
    return dispatch(
        c, "queue",
        {{QStringLiteral("create"), {1, {QStringLiteral("max-reads")}, cmdQueueCreate}},
         {QStringLiteral("send"),
          {1,
           {QStringLiteral("message"), QStringLiteral("headers"), QStringLiteral("delay"),
            QStringLiteral("envelope")},
           cmdQueueSend}},
         {QStringLiteral("read"), {1, {QStringLiteral("vt"), QStringLiteral("qty")}, cmdQueueRead}},
         {QStringLiteral("ack"), {2, {QStringLiteral("read-ct")}, cmdQueueAck}},
         {QStringLiteral("archive"), {2, {QStringLiteral("read-ct")}, cmdQueueArchive}},
         {QStringLiteral("nack"),
          {2,
           {QStringLiteral("class"), QStringLiteral("detail"), QStringLiteral("retry-after"),
            QStringLiteral("read-ct")},
           cmdQueueNack}},
         {QStringLiteral("list"),
          {1, {QStringLiteral("after"), QStringLiteral("limit")}, cmdQueueList}},
         {QStringLiteral("metrics"), {1, {}, cmdQueueMetrics}}});
}

int cmdDlqList(Context &c)
{
    const std::string name = queueName(c);
    const int limit = pageLimit(c);
    const auto letters = c.queue().deadLetters(name, afterId(c), limit);
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const DeadLetter &d : letters) {
        const DeadLetterProvenance &p = d.provenance;
        nlohmann::json row = queueMessageJson(d.message);
        row["source_queue"] = p.sourceQueue;
        row["source_msg_id"] = p.sourceMsgId;
        row["source_read_ct"] = p.readCount;
        row["last_error_class"] =
            p.lastErrorClass ? nlohmann::json(errorClassName(*p.lastErrorClass)) : nlohmann::json();
        row["last_error_detail"] =
            p.lastErrorClass ? nlohmann::json(p.lastErrorDetail) : nlohmann::json();
        row["dead_lettered_at"] = timestampJson(p.deadLetteredAtMs);
        rows.push_back(std::move(row));
        human += "msg " + std::to_string(d.message.msgId) + "  from " + p.sourceQueue + " msg " +
                 std::to_string(p.sourceMsgId) + " after " + std::to_string(p.readCount) +
                 " read(s)  at " + when(p.deadLetteredAtMs) + "  last error: " +
                 (p.lastErrorClass
                      ? std::string(errorClassName(*p.lastErrorClass)) +
                            (p.lastErrorDetail.empty() ? "" : ": " + escapedText(p.lastErrorDetail))
                      : std::string("none reported")) +
                 "\n  " + escapedJson(d.message.message) + '\n';
    }
    const bool full = static_cast<int>(letters.size()) == limit;
    if (full)
        human += "(more: --after " + std::to_string(letters.back().message.msgId) + ")\n";
    if (!human.empty())
        human.pop_back();
    c.print(
        {{"queue", name},
         {"dead_letter_queue", name + std::string(QueueName::DeadLetterSuffix)},
         {"messages", rows},
         {"next_after", full ? nlohmann::json(letters.back().message.msgId) : nlohmann::json()}},
        human.empty() ? "no dead letters for " + name : human);
    return ExitOk;
}

std::atomic<bool> g_interrupted{false};

int cmdDlqReplay(Context &c)
{
    DlqReplayCommand::Request request;
    request.ns = c.ns;
    const QStringList args = c.parser.positionalArguments();
    request.queue = c.parser.isSet(QStringLiteral("queue"))
                        ? c.parser.value(QStringLiteral("queue")).toStdString()
                        : queueName(c);
    if (c.parser.isSet(QStringLiteral("queue")) && args.size() > 2)
        throw UsageError{"give the queue once: NAME or --queue NAME"};
    const bool byIds = c.parser.isSet(QStringLiteral("ids"));
    if (byIds == c.parser.isSet(QStringLiteral("filter")))
        throw UsageError{"give the set: --ids ID,ID,… or --filter all|error_class=C|key_prefix=P"};
    const bool dryRun = c.parser.isSet(QStringLiteral("dry-run"));
    if (dryRun == c.parser.isSet(QStringLiteral("confirm")))
        throw UsageError{"run --dry-run first, then --confirm COUNT --reason TEXT"};
    if (byIds) {
        for (const QString &id :
             c.parser.value(QStringLiteral("ids")).split(QLatin1Char(','), Qt::SkipEmptyParts))
            request.ids.push_back(parseWholeNumber("each msg_id of --ids",
                                                   id.trimmed().toStdString(), 1, MaxWholeNumber));
    } else {
        request.ids = DlqReplayCommand::resolveFilter(
            c.queue(), request.queue, c.parser.value(QStringLiteral("filter")).toStdString());
    }
    if (c.parser.isSet(QStringLiteral("rate")))
        request.ratePerSecond =
            parseNumber("--rate", c.parser.value(QStringLiteral("rate")).toStdString(), 0.001,
                        DlqReplayCommand::MaxRatePerSecond, "messages per second");
    if (!dryRun) {
        request.confirmCount = c.integerOption(QStringLiteral("confirm"), 0, MaxWholeNumber);
        request.reason = requiredReason(c);
    }
    PacedRun::Hooks hooks;
    const bool bar = !c.json && isatty(STDERR_FILENO);
    if (bar)
        hooks.progress = [](std::int64_t done, std::int64_t total) {
            printProgress("replayed " + std::to_string(done) + "/" + std::to_string(total) +
                          " (Ctrl-C stops after the current message) ");
        };
    hooks.cancelled = [] { return g_interrupted.load(); };
    LedgerStore &store = c.engine().store();
    DlqReplayCommand command = GuardedActionBuilder(c.engine().settings())
                                   .replay(store, c.queue(), store.actor(), request, hooks);
    if (dryRun) {
        const std::vector<std::string> problems = command.validate();
        const ActionPreview preview = command.describe();
        std::string human = preview.sentence + "\nreplay id " + command.replayId() + "\n";
        for (const auto &item : preview.details.at("items"))
            human += "  msg " + item.at("msg_id").dump() + "  " +
                     item.at("class").get<std::string>() + "  " +
                     escapedText(item.at("key").get<std::string>()) + "\n";
        for (const std::string &p : problems)
            human += "cannot replay: " + p + "\n";
        // A command to run next only when it would be taken.
        if (problems.empty())
            human += "(dry run: nothing written; replay with --confirm " +
                     preview.details.at("count").dump() + " --reason TEXT)";
        else
            human += "(dry run: nothing written)";
        nlohmann::json out = {{"dry_run", true},
                              {"action", preview.sentence},
                              {"preview", preview.details},
                              {"problems", problems}};
        c.print(out, human);
        return problems.empty() ? ExitOk : ExitRefused;
    }
    requireValid(command.validate());
    std::signal(SIGINT, [](int) { g_interrupted = true; });
    const nlohmann::json result = command.execute().toJson();
    std::signal(SIGINT, SIG_DFL);
    if (bar)
        printErr("");
    c.print(result, "replay " + command.replayId() + ": " + result.at("requeued").dump() +
                        " requeued, " + result.at("taken_by_other_replay").dump() +
                        " taken by another replay, " + result.at("not_replayed").dump() +
                        " left in the dead-letter queue" +
                        (result.at("cancelled").get<bool>() ? " (cancelled)" : ""));
    return ExitOk;
}

int cmdDlq(Context &c)
{
    const QStringList replayOptions = {QStringLiteral("queue"),   QStringLiteral("ids"),
                                       QStringLiteral("filter"),  QStringLiteral("dry-run"),
                                       QStringLiteral("confirm"), QStringLiteral("reason"),
                                       QStringLiteral("rate")};
    // `dlq replay --queue NAME` has no positional name.
    const bool queueOption = c.parser.isSet(QStringLiteral("queue"));
    return dispatch(
        c, "dlq",
        {{QStringLiteral("list"),
          {1, {QStringLiteral("after"), QStringLiteral("limit")}, cmdDlqList}},
         {QStringLiteral("replay"), {queueOption ? 0 : 1, replayOptions, cmdDlqReplay}}});
}

} // namespace

void addQueueCommands(std::map<QString, Command> &table)
{
    table.insert({
        {QStringLiteral("queue"),
         {3,
          "queue SUBCOMMAND NAME [ARGS]",
          "Message queues with a dead-letter queue each (pgmq's table layout):\n"
          "  create NAME [--max-reads N]        create NAME and NAME_dlq (idempotent)\n"
          "  send NAME --message JSON|@FILE [--headers JSON] [--delay S] [--envelope]\n"
          "  read NAME [--vt S] [--qty N]       deliver visible messages, hidden for S seconds\n"
          "  ack NAME MSG_ID --read-ct N        delete a processed message (that delivery only;\n"
          "                                     repeated, done again; after a later read, "
          "refused)\n"
          "  archive NAME MSG_ID [--read-ct N]  move a message to the archive a_NAME\n"
          "  nack NAME MSG_ID --class C [--detail T] [--retry-after S] [--read-ct N]\n"
          "                                     record a failure; visible again after S seconds\n"
          "  list NAME [--after ID] [--limit N] browse without counting as a read\n"
          "  metrics NAME                       lengths, ages and totals",
          {opt("max-reads", "create: deliveries before a message goes to NAME_dlq (default 5).",
               "N"),
           opt("message", "send: the message, JSON text, @FILE or @- for stdin.", "JSON"),
           opt("headers", "send: a JSON object of headers.", "JSON"),
           opt("delay", "send: seconds before the message becomes visible (default 0).", "S"),
           opt("envelope",
               "send: refuse a message that is not a queue envelope (docs/envelope.md)."),
           opt("vt", "read: visibility timeout in seconds (default 30).", "S"),
           opt("qty", "read: at most this many messages (default 1).", "N"),
           opt("class",
               "nack: transient, rate_limited, validation, auth, policy_denied, unknown_outcome.",
               "CLASS"),
           opt("detail", "nack: what went wrong.", "TEXT"),
           opt("retry-after", "nack: seconds before the message is visible again (default 0).",
               "S"),
           opt("read-ct",
               "ack, archive, nack: the read_ct `queue read` answered: acts on that delivery "
               "only, and refuses (stale_lease) once the message has been read again.",
               "N"),
           opt("after", "list: continue after this msg_id (the previous page's next_after).", "ID"),
           opt("limit", "list: page size (default 50).", "N")},
          cmdQueue}},
        {QStringLiteral("dlq"),
         {2,
          "dlq list|replay NAME [OPTIONS]",
          "Dead letters of queue NAME:\n"
          "  list NAME [--after ID] [--limit N]  with their source and last error, never counting "
          "as a read\n"
          "  replay NAME (--ids ID,… | --filter all|error_class=C|key_prefix=P) --dry-run\n"
          "  replay NAME (--ids … | --filter …) --confirm COUNT --reason TEXT [--rate N]\n"
          "      the dry run classifies each message (already_completed, will_execute, "
          "payload_mismatch,\n"
          "      expired_by_retention); the replay needs the count it printed, keeps every key, "
          "and\n"
          "      requeues at most N messages per second (default 50); Ctrl-C stops it",
          {opt("after", "list: continue after this msg_id (the previous page's next_after).", "ID"),
           opt("limit", "list: page size (default 50).", "N"),
           opt("queue", "replay: the source queue (instead of NAME).", "NAME"),
           opt("ids", "replay: the dead letters' msg_ids, comma-separated.", "IDS"),
           opt("filter",
               "replay: all, error_class=CLASS or key_prefix=PREFIX, resolved to ids once.", "F"),
           opt("dry-run", "replay: classify only, write nothing."),
           opt("confirm", "replay: the count the dry run printed.", "COUNT"),
           opt("reason", "replay: why, for the audit log.", "TEXT"),
           opt("rate", "replay: messages per second (default 50).", "N")},
          cmdDlq}},
    });
}

} // namespace idempo::cli
