// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "operation.h"
#include "runbudget.h"

namespace idempo {

/// One run as the Runs list shows it, folded from its operations.
struct RunSummary
{
    std::string ns; ///< runs are keyed by (namespace, run id): the same id in two is two runs
    std::string runId;
    std::int64_t firstOperationId = 0;
    std::array<int, OperationStateCount> byState{};
    std::int64_t startedAtMs = 0;
    std::int64_t lastChangeAtMs = 0;
    /// The run's budgets and their use; unset for a run the ledger keeps no record of.
    std::optional<RunRecord> record;

    /// Adds one operation of the run.
    void add(const Operation &op);
    /// Adds another partial summary of the same run.
    void merge(const RunSummary &other);
    int steps() const;
    /// Operations not yet final (succeeded, failed_terminal).
    int open() const;
    bool halted() const { return record && record->state == RunState::Halted; }
    /// The state that most needs a person: confirmation first, succeeded last.
    OperationState headline() const;
    bool operator==(const RunSummary &) const = default;

    /// The (namespace, run id) identity, as one string.
    std::string identity() const { return ns + '\x1f' + runId; }

    /// Folds operations into runs, in order of first appearance; records without a run are skipped.
    static std::vector<RunSummary> fold(const std::vector<Operation> &ops);
};

} // namespace idempo
