// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <span>
#include <string_view>

#include "vocabulary.h"

namespace idempo {

/// One allowed state change and what triggers it.
struct Transition
{
    OperationState from;
    OperationState to;
    std::string_view trigger;
};

/// The operation state machine of design.md as data. Every pair not listed is forbidden;
/// succeeded and failed_terminal have no way out (only retention expiry removes them).
/// dispatching → dispatching is a lease renewal (heartbeat) or a takeover (new token).
std::span<const Transition> transitionTable();

/// True when `from → to` is in the table.
bool isTransitionAllowed(OperationState from, OperationState to);

} // namespace idempo
