// SPDX-License-Identifier: Apache-2.0
#include "runsummary.h"

#include <algorithm>
#include <unordered_map>

namespace idempo {

void RunSummary::add(const Operation &op)
{
    if (firstOperationId == 0 || op.id < firstOperationId)
        firstOperationId = op.id;
    ++byState[static_cast<std::size_t>(op.state)];
    startedAtMs = startedAtMs == 0 ? op.createdAtMs : std::min(startedAtMs, op.createdAtMs);
    lastChangeAtMs = std::max(lastChangeAtMs, op.updatedAtMs);
}

void RunSummary::merge(const RunSummary &other)
{
    if (firstOperationId == 0 ||
        (other.firstOperationId != 0 && other.firstOperationId < firstOperationId))
        firstOperationId = other.firstOperationId;
    for (std::size_t i = 0; i < byState.size(); ++i)
        byState[i] += other.byState[i];
    startedAtMs = startedAtMs == 0 ? other.startedAtMs : std::min(startedAtMs, other.startedAtMs);
    lastChangeAtMs = std::max(lastChangeAtMs, other.lastChangeAtMs);
    if (other.record)
        record = other.record;
}

int RunSummary::steps() const
{
    int n = 0;
    for (int c : byState)
        n += c;
    return n;
}

int RunSummary::open() const
{
    return steps() - byState[static_cast<std::size_t>(OperationState::Succeeded)] -
           byState[static_cast<std::size_t>(OperationState::FailedTerminal)];
}

OperationState RunSummary::headline() const
{
    static constexpr OperationState order[] = {
        OperationState::ConfirmationRequired, OperationState::UnknownOutcome,
        OperationState::AwaitingApproval,     OperationState::Dispatching,
        OperationState::FailedRetryable,      OperationState::Received,
        OperationState::FailedTerminal,       OperationState::Succeeded,
    };
    for (OperationState s : order)
        if (byState[static_cast<std::size_t>(s)] > 0)
            return s;
    return OperationState::Received;
}

std::vector<RunSummary> RunSummary::fold(const std::vector<Operation> &ops)
{
    std::vector<RunSummary> runs;
    std::unordered_map<std::string, std::size_t> at;
    for (const Operation &op : ops) {
        if (op.runId.empty())
            continue;
        auto [it, fresh] = at.try_emplace(op.ns + '\x1f' + op.runId, runs.size());
        if (fresh) {
            runs.emplace_back();
            runs.back().ns = op.ns;
            runs.back().runId = op.runId;
        }
        runs[it->second].add(op);
    }
    return runs;
}

} // namespace idempo
