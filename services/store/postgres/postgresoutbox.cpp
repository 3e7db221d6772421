// SPDX-License-Identifier: Apache-2.0
#include "postgresoutbox.h"

#include "error.h"
#include "postgresmessagequeue.h"
#include "queuename.h"
#include "queuerules.h"

#include <optional>

namespace idempo {

PgParams pinnedClock(std::int64_t nowMs)
{
    PgParams clock;
    clock.integer(nowMs).integer(0);
    return clock;
}

std::int64_t insertMessage(PgConnection &c, PgParams clock, const QueueName &name,
                           const OutgoingMessage &message, std::int64_t delayMs)
{
    clock.integer(delayMs)
        .text(message.message)
        .optionalText(message.headers.empty() ? std::nullopt
                                              : std::optional<std::string>(message.headers));
    return c
        .execPrepared("send message", "iq_send_" + name.str(),
                      PostgresMessageQueue::sendSql(name.str()), clock)
        .integer(0, 0);
}

std::int64_t sendInTransaction(PgConnection &c, const std::string &queue,
                               const std::string &messageJson, const std::string &headersJson,
                               std::int64_t delayMs, std::int64_t nowMs)
{
    const QueueName name(queue);
    checkDuration(delayMs, "delay");
    const OutgoingMessage message = prepareMessage(messageJson, headersJson);
    if (c.execPrepared("read queue registry", "iq_registry_exists",
                       "SELECT 1 FROM queue_registry WHERE queue_name = $1",
                       PgParams().text(name.str()))
            .rows() == 0)
        throw Error(ErrorCode::NotFound, "no queue '" + name.str() + "'");
    return insertMessage(c, pinnedClock(nowMs), name, message, delayMs);
}

} // namespace idempo
