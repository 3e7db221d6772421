// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace idempo {

/// The message one agent's step sends to the next (design.md "Queues"). The consumer claims
/// `idempotencyKey` before acting, so a redelivered message is answered from the ledger
/// instead of being executed twice.
struct QueueEnvelope
{
    std::string runId;  ///< execution (run) id; not empty
    std::string stepId; ///< the step the message asks for; not empty
    std::string sourceAgent;
    std::string targetAgent;
    nlohmann::json payload;        ///< the step's input
    std::int64_t producedAtMs = 0; ///< produced_at: milliseconds since the Unix epoch (UTC), >= 0
    std::string
        idempotencyKey; ///< the operation key (operationkey.h), normally run_id:step_id[:target]

    /// The wire form: an object with run_id, step_id, source_agent, target_agent, payload,
    /// produced_at and idempotency_key. Throws like fromJson() when a field breaks its rule,
    /// so an envelope that a consumer would refuse is never sent.
    nlohmann::json toJson() const;

    /// Reads the wire form; other members are ignored, so producers may add fields. Throws
    /// Error(InvalidArgument) naming a missing or mistyped member, an empty run_id or step_id,
    /// or a produced_at that is negative, fractional or beyond INT64_MAX; Error(InvalidKey) when
    /// idempotency_key breaks the key rules. resources/schema/envelope.schema.json states the
    /// same rules for other languages (tests/services/core/tst_envelopeschema.cpp holds them
    /// equal).
    static QueueEnvelope fromJson(const nlohmann::json &json);
};

} // namespace idempo
