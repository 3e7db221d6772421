// SPDX-License-Identifier: Apache-2.0
#include "queueenvelope.h"

#include <cmath>
#include <limits>

#include "error.h"
#include "operationkey.h"

namespace idempo {
namespace {

void validate(const QueueEnvelope &e)
{
    if (e.runId.empty())
        throw Error(ErrorCode::InvalidArgument, "envelope run_id is empty");
    if (e.stepId.empty())
        throw Error(ErrorCode::InvalidArgument, "envelope step_id is empty");
    if (e.producedAtMs < 0)
        throw Error(ErrorCode::InvalidArgument, "envelope produced_at is negative");
    try {
        validateOperationKey(e.idempotencyKey);
    } catch (const Error &error) {
        throw Error(error.code(), std::string("envelope idempotency_key: ") + error.what());
    }
}

const nlohmann::json &member(const nlohmann::json &json, const char *name)
{
    const auto it = json.find(name);
    if (it == json.end())
        throw Error(ErrorCode::InvalidArgument, std::string("envelope has no ") + name);
    return *it;
}

std::string stringMember(const nlohmann::json &json, const char *name)
{
    const nlohmann::json &value = member(json, name);
    if (!value.is_string())
        throw Error(ErrorCode::InvalidArgument,
                    std::string("envelope ") + name + " must be a string");
    return value.get<std::string>();
}

/// produced_at as JSON Schema reads "integer": any number without a fractional part (1000,
/// 1000.0, 1e3), here at most INT64_MAX; negative ones are left to validate().
std::int64_t producedAtMember(const nlohmann::json &value)
{
    const char *integer = "envelope produced_at must be an integer (milliseconds since the epoch)";
    if (value.is_number_unsigned()) {
        if (value.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            throw Error(ErrorCode::InvalidArgument,
                        "envelope produced_at is beyond the largest time it can hold");
        return value.get<std::int64_t>();
    }
    if (value.is_number_integer())
        return value.get<std::int64_t>();
    if (!value.is_number_float())
        throw Error(ErrorCode::InvalidArgument, integer);
    const double d = value.get<double>();
    if (std::trunc(d) != d)
        throw Error(ErrorCode::InvalidArgument, integer);
    // 2^63 is the first double beyond INT64_MAX.
    if (d >= 9223372036854775808.0)
        throw Error(ErrorCode::InvalidArgument,
                    "envelope produced_at is beyond the largest time it can hold");
    return d < 0 ? -1 : static_cast<std::int64_t>(d);
}

} // namespace

nlohmann::json QueueEnvelope::toJson() const
{
    validate(*this);
    return {{"run_id", runId},
            {"step_id", stepId},
            {"source_agent", sourceAgent},
            {"target_agent", targetAgent},
            {"payload", payload},
            {"produced_at", producedAtMs},
            {"idempotency_key", idempotencyKey}};
}

QueueEnvelope QueueEnvelope::fromJson(const nlohmann::json &json)
{
    if (!json.is_object())
        throw Error(ErrorCode::InvalidArgument, "an envelope must be a JSON object");
    QueueEnvelope e;
    e.runId = stringMember(json, "run_id");
    e.stepId = stringMember(json, "step_id");
    e.sourceAgent = stringMember(json, "source_agent");
    e.targetAgent = stringMember(json, "target_agent");
    e.payload = member(json, "payload");
    e.producedAtMs = producedAtMember(member(json, "produced_at"));
    e.idempotencyKey = stringMember(json, "idempotency_key");
    validate(e);
    return e;
}

} // namespace idempo
