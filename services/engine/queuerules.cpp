// SPDX-License-Identifier: Apache-2.0
#include "queuerules.h"

#include <nlohmann/json.hpp>

#include "canonicaljson.h"
#include "error.h"

namespace idempo {
namespace {

nlohmann::json parseField(const std::string &text, const char *what)
{
    if (text.size() > MaxQueueMessageBytes) {
        throw Error(ErrorCode::PayloadTooLarge,
                    std::string(what) + " is " + std::to_string(text.size()) +
                        " bytes; the limit is " + std::to_string(MaxQueueMessageBytes) + " bytes");
    }
    try {
        return parseStrictJson(text);
    } catch (const Error &e) {
        throw Error(e.code(), std::string(what) + ": " + e.what());
    }
}

} // namespace

OutgoingMessage prepareMessage(const std::string &messageJson, const std::string &headersJson)
{
    OutgoingMessage out;
    out.message = canonicalJson(parseField(messageJson, "message"));
    if (!headersJson.empty()) {
        const nlohmann::json headers = parseField(headersJson, "headers");
        if (!headers.is_object())
            throw Error(ErrorCode::InvalidJson, "headers must be a JSON object");
        out.headers = canonicalJson(headers);
    }
    return out;
}

void checkDuration(std::int64_t ms, const char *what)
{
    if (ms < 0 || ms > MaxDurationMs) {
        throw Error(ErrorCode::InvalidArgument, std::string(what) + " must be 0.." +
                                                    std::to_string(MaxDurationMs) +
                                                    " ms (ten years), not " + std::to_string(ms));
    }
}

void checkBatch(int count, const char *what)
{
    if (count < 1 || count > MaxQueueBatch) {
        throw Error(ErrorCode::InvalidArgument, std::string(what) + " must be 1.." +
                                                    std::to_string(MaxQueueBatch) + ", not " +
                                                    std::to_string(count));
    }
}

ReadStanding readStanding(int receiptReadCount, int currentReadCount)
{
    if (currentReadCount == receiptReadCount)
        return ReadStanding::Latest;
    return currentReadCount > receiptReadCount ? ReadStanding::ReadAgain : ReadStanding::NotYetRead;
}

void checkReceipt(const ReadReceipt &receipt)
{
    if (receipt.msgId < 1 || receipt.readCount < 1)
        throw Error(ErrorCode::InvalidArgument,
                    "a delivery is named by its msg_id and the read_ct its read answered (1 or "
                    "more), not msg_id " +
                        std::to_string(receipt.msgId) + " read_ct " +
                        std::to_string(receipt.readCount));
}

Error readAgain(const std::string &queue, const ReadReceipt &receipt, int currentReadCount,
                const char *action)
{
    return Error(ErrorCode::StaleLease,
                 "message " + std::to_string(receipt.msgId) + " of queue '" + queue +
                     "' was read again (read " + std::to_string(currentReadCount) +
                     ") after read " + std::to_string(receipt.readCount) +
                     ": its visibility timeout lapsed and another consumer has it; the " + action +
                     " is refused");
}

Error notYetRead(const std::string &queue, const ReadReceipt &receipt, int currentReadCount)
{
    return Error(ErrorCode::InvalidArgument,
                 "message " + std::to_string(receipt.msgId) + " of queue '" + queue +
                     "' has not been read " + std::to_string(receipt.readCount) +
                     " times (read_ct " + std::to_string(currentReadCount) + ")");
}

Error noSuchMessage(const std::string &queue, std::int64_t msgId)
{
    return Error(ErrorCode::NotFound,
                 "queue '" + queue + "' holds no message " + std::to_string(msgId));
}

std::string deadLetterHeaders(const std::string &headers, const DeadLetterProvenance &provenance)
{
    nlohmann::json merged =
        headers.empty() ? nlohmann::json::object() : nlohmann::json::parse(headers);
    // send() only accepts objects, but a pgmq queue written by other clients may hold any
    // JSON here; it is kept beside the provenance rather than dropped.
    if (!merged.is_object())
        merged = {{"original_headers", std::move(merged)}};
    const bool nacked = provenance.lastErrorClass.has_value();
    merged["dlq"] = {
        {"source_queue", provenance.sourceQueue},
        {"source_msg_id", provenance.sourceMsgId},
        {"read_ct", provenance.readCount},
        {"last_error_class",
         nacked ? nlohmann::json(errorClassName(*provenance.lastErrorClass)) : nlohmann::json()},
        {"last_error_detail",
         nacked ? nlohmann::json(provenance.lastErrorDetail) : nlohmann::json()},
        {"dead_lettered_at", provenance.deadLetteredAtMs},
    };
    return canonicalJson(merged);
}

DeadLetter deadLetterFrom(QueueMessage message)
{
    DeadLetter letter;
    const nlohmann::json headers = nlohmann::json::parse(
        message.headers.empty() ? std::string("{}") : message.headers, nullptr, false);
    letter.message = std::move(message);
    if (!headers.is_object() || !headers.contains("dlq"))
        return letter;
    try {
        const nlohmann::json &dlq = headers.at("dlq");
        DeadLetterProvenance p;
        p.sourceQueue = dlq.at("source_queue").get<std::string>();
        p.sourceMsgId = dlq.at("source_msg_id").get<std::int64_t>();
        p.readCount = dlq.at("read_ct").get<int>();
        if (const nlohmann::json &cls = dlq.at("last_error_class"); !cls.is_null())
            p.lastErrorClass = parseErrorClass(cls.get<std::string>());
        if (const nlohmann::json &detail = dlq.at("last_error_detail"); !detail.is_null())
            p.lastErrorDetail = detail.get<std::string>();
        p.deadLetteredAtMs = dlq.at("dead_lettered_at").get<std::int64_t>();
        letter.provenance = std::move(p);
    } catch (const nlohmann::json::exception &) {
        // Not a header this module wrote (the message was sent to the dead-letter queue
        // directly): no provenance rather than a guessed one.
    }
    return letter;
}

} // namespace idempo
