// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandboxcontext.h"

namespace idempo::sandbox {

/// The "before" picture: a consumer with no idempotency layer. It executes every delivery,
/// passes no key to providers, sends the next step's message itself and acks last, retrying
/// timeouts like any failure. The same faults hit it at the same places as EngineConsumer, so
/// the two runs differ only in the layer; the effect journal shows the duplicates it makes.
class NaiveConsumer final
{
public:
    explicit NaiveConsumer(SandboxContext &context);

    void deliver(int thread, RunState &run, const QueueMessage &message);
    void resume(int thread, RunState &run, const ParkedWorker &parked);

private:
    void perform(int thread, RunState &run, int stepIndex, const QueueMessage &message,
                 const nlohmann::json &payload, int worker, std::optional<Fault> fault);
    void redeliverAfter(int thread, const QueueMessage &message, std::int64_t delayMs);

    SandboxContext &m_ctx;
};

} // namespace idempo::sandbox
