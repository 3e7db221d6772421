// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandboxcontext.h"

namespace idempo::sandbox {

/// The consumer with Idempo's idempotency layer: it claims each envelope's operation key before
/// acting, acts only on `claimed`, passes the key and fencing token to providers that take
/// them, records the outcome (completing a step and sending the next step's message in one
/// outbox transaction) and acks the message only once the ledger holds what happened. Faults
/// are injected at the windows the fault plan opens. Called for one run at a time per thread.
class EngineConsumer final
{
public:
    explicit EngineConsumer(SandboxContext &context);

    /// Handles one delivery of `message` (an envelope of `run`) on pool thread `thread`.
    void deliver(int thread, RunState &run, const QueueMessage &message);

    /// Resumes a worker that stalled (paused-worker fault).
    void resume(int thread, RunState &run, const ParkedWorker &parked);

private:
    struct Attempt
    {
        int thread = 0;
        RunState *run = nullptr;
        int stepIndex = 0;
        QueueMessage message;
        nlohmann::json payload;
        std::string key;
        int worker = 0; ///< the virtual worker (its clock may be skewed)
        std::string owner;
        std::int64_t token = 0;
        const WorkflowStep &step() const
        {
            return run->scenario->steps()[static_cast<std::size_t>(stepIndex)];
        }
    };

    void execute(const Attempt &a, std::optional<Fault> fault);
    ProviderAnswer callProvider(const Attempt &a, std::string &decision);
    void finish(const Attempt &a, const ProviderAnswer &answer, const std::string &decision,
                bool crashAfterRecord);
    void afterFailure(const Attempt &a, const Operation &op);
    void twinPlanner(const Attempt &a, const ClaimInput &claim);
    void ack(int thread, const QueueMessage &message);
    void redeliverAt(int thread, const QueueMessage &message, std::optional<std::int64_t> atMs);

    SandboxContext &m_ctx;
};

} // namespace idempo::sandbox
