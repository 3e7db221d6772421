// SPDX-License-Identifier: Apache-2.0
#include "transitiontable.h"

#include <algorithm>
#include <array>

namespace idempo {
namespace {

using S = OperationState;

constexpr std::array kTable{
    Transition{S::Received, S::Dispatching, "claim"},
    Transition{S::Received, S::FailedTerminal, "operator rejects"},
    Transition{S::AwaitingApproval, S::Received, "approved"},
    Transition{S::AwaitingApproval, S::FailedTerminal, "rejected"},
    Transition{S::Dispatching, S::Dispatching, "heartbeat or lapsed-lease takeover"},
    Transition{S::Dispatching, S::Succeeded, "complete"},
    Transition{S::Dispatching, S::FailedRetryable, "retryable failure"},
    Transition{S::Dispatching, S::UnknownOutcome, "answer lost or protected lease lapsed"},
    Transition{S::Dispatching, S::ConfirmationRequired, "attempts exhausted"},
    Transition{S::Dispatching, S::FailedTerminal, "non-retryable failure"},
    Transition{S::FailedRetryable, S::Dispatching, "claim after backoff"},
    Transition{S::FailedRetryable, S::ConfirmationRequired, "run budget exhausted"},
    Transition{S::FailedRetryable, S::FailedTerminal, "operator rejects"},
    Transition{S::UnknownOutcome, S::Succeeded, "reconciled: effect found"},
    Transition{S::UnknownOutcome, S::Received, "reconciled: no effect, dispatch again"},
    Transition{S::UnknownOutcome, S::ConfirmationRequired, "reconciliation inconclusive"},
    Transition{S::UnknownOutcome, S::FailedTerminal, "reconciled: provider rejected"},
    Transition{S::ConfirmationRequired, S::Succeeded, "operator confirms with evidence"},
    Transition{S::ConfirmationRequired, S::Received, "operator approves re-dispatch"},
    Transition{S::ConfirmationRequired, S::FailedTerminal, "operator rejects"},
};

} // namespace

std::span<const Transition> transitionTable()
{
    return kTable;
}

bool isTransitionAllowed(OperationState from, OperationState to)
{
    return std::any_of(kTable.begin(), kTable.end(),
                       [&](const Transition &t) { return t.from == from && t.to == to; });
}

} // namespace idempo
