// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "operation.h"

namespace idempo {

/// A run's steps and attempts over time, built from its operations and their histories: what
/// the Gantt timeline paints. Times in epoch milliseconds.
struct RunTimeline
{
    /// One stretch of time a step spent in one state.
    struct Span
    {
        std::int64_t startMs = 0;
        std::int64_t endMs = 0;
        OperationState state = OperationState::Received;
        int attempt = 0;
        std::int64_t fencingToken = 0;
        std::string actor;
        std::string detail;
        std::optional<ErrorClass> errorClass;
    };
    /// A moment worth a glance: a lease taken over, a reconciliation, a final answer.
    struct Marker
    {
        enum class Kind
        {
            Takeover,
            Reconciliation,
            Final
        };
        Kind kind = Kind::Final;
        std::int64_t atMs = 0;
        std::string detail;
    };
    /// One step (operation) of the run: a lane of the chart.
    struct Lane
    {
        std::string key;
        std::string stepId;
        ToolKind kind = ToolKind::ProtectedWrite;
        OperationState state = OperationState::Received;
        std::vector<Span> spans;
        std::vector<Marker> markers;
    };

    std::string runId;
    std::vector<Lane> lanes;
    std::int64_t startMs = 0;
    std::int64_t endMs = 0;
    /// The first dispatch of a protected write: from here on the run must not repeat effects.
    std::optional<std::int64_t> writeBoundaryMs;

    /// Builds the timeline; `histories[i]` belongs to `ops[i]`. Open spans end at `nowMs`.
    static RunTimeline build(const std::string &runId, const std::vector<Operation> &ops,
                             const std::vector<std::vector<OperationEvent>> &histories,
                             std::int64_t nowMs);
};

} // namespace idempo
