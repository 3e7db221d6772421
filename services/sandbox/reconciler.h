// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sandboxcontext.h"

namespace idempo::sandbox {

/// Settles what no worker can: protected writes whose lease lapsed (moved to unknown_outcome
/// through a claim, which fences the lapsed holder) and operations in unknown_outcome. Each is
/// looked up at its provider by operation key when the provider can: an effect found →
/// succeeded with the provider's reference as receipt (and the next step's message, in one
/// outbox write); no effect → received, with the step's message sent again under the same
/// key; not confirmed yet → left for the next pass. A provider without lookup cannot settle
/// it: confirmation_required, for a person. Every move carries its evidence in the history.
class Reconciler final
{
public:
    explicit Reconciler(SandboxContext &context);

    struct Pass
    {
        int actions = 0; ///< operations moved on
        int waiting =
            0; ///< operations whose provider has not confirmed yet, or live leases to watch
    };

    /// One pass over the namespace, in operation-key order, on the scheduler's thread.
    Pass run();

private:
    std::vector<Operation> listByKey(OperationState state);
    void revokeLapsed(const Operation &op, Pass &pass);
    void settle(const Operation &op, Pass &pass);

    SandboxContext &m_ctx;
};

} // namespace idempo::sandbox
