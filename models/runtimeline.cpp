// SPDX-License-Identifier: Apache-2.0
#include "runtimeline.h"

#include <algorithm>

namespace idempo {

RunTimeline RunTimeline::build(const std::string &runId, const std::vector<Operation> &ops,
                               const std::vector<std::vector<OperationEvent>> &histories,
                               std::int64_t nowMs)
{
    RunTimeline t;
    t.runId = runId;
    t.startMs = nowMs;
    t.endMs = 0;
    for (std::size_t i = 0; i < ops.size() && i < histories.size(); ++i) {
        const Operation &op = ops[i];
        const std::vector<OperationEvent> &events = histories[i];
        Lane lane;
        lane.key = op.key;
        lane.stepId = op.stepId.empty() ? op.key : op.stepId;
        lane.kind = op.kind;
        lane.state = op.state;
        for (std::size_t e = 0; e < events.size(); ++e) {
            const OperationEvent &ev = events[e];
            const bool last = e + 1 == events.size();
            Span span;
            span.startMs = ev.atMs;
            span.endMs = last ? (isFinal(ev.toState) ? ev.atMs : nowMs) : events[e + 1].atMs;
            span.state = ev.toState;
            span.attempt = ev.attempt;
            span.fencingToken = ev.fencingToken;
            span.actor = ev.actor;
            span.detail = ev.detail;
            span.errorClass = ev.errorClass;
            lane.spans.push_back(span);
            if (ev.fromState == OperationState::Dispatching &&
                ev.toState == OperationState::Dispatching && e > 0 &&
                ev.fencingToken != events[e - 1].fencingToken)
                lane.markers.push_back(
                    {Marker::Kind::Takeover, ev.atMs, "lease taken over by " + ev.actor});
            if (ev.fromState == OperationState::UnknownOutcome)
                lane.markers.push_back(
                    {Marker::Kind::Reconciliation, ev.atMs, "reconciled: " + ev.detail});
            if (isFinal(ev.toState))
                lane.markers.push_back(
                    {Marker::Kind::Final, ev.atMs, std::string(stateName(ev.toState))});
            if (ev.toState == OperationState::Dispatching && op.kind == ToolKind::ProtectedWrite &&
                (!t.writeBoundaryMs || ev.atMs < *t.writeBoundaryMs))
                t.writeBoundaryMs = ev.atMs;
            t.startMs = std::min(t.startMs, span.startMs);
            t.endMs = std::max(t.endMs, span.endMs);
        }
        t.lanes.push_back(std::move(lane));
    }
    if (t.endMs <= t.startMs)
        t.endMs = t.startMs + 1000;
    return t;
}

} // namespace idempo
