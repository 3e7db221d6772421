// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledgerfigures.h"
#include "ledgerstore.h"
#include "messagequeue.h"

namespace idempo {

/// The Overview's figures at one moment, computed on the worker from the store's read API.
struct OverviewSnapshot
{
    static constexpr int Minutes = 60;

    std::int64_t nowMs = 0;
    /// The figures `idempo metrics` reports too (ledgerfigures.h), of every namespace.
    LedgerFigures figures;
    std::int64_t dlqDepth = 0;
    bool hasQueues = false;
    /// Halted runs (at most HaltedLimit read; figures counts them all), the latest halt first.
    std::vector<RunRecord> haltedRuns;
    static constexpr int HaltedLimit = 500;
    /// Operations waiting for a person (confirmation_required, awaiting_approval,
    /// unknown_outcome) that carry a value (money.h operationValue), highest declared value
    /// first in the store's order, at most ValuableLimit: what is told of when only
    /// confirmations above a value are notified.
    std::vector<Operation> valuableWaiting;
    static constexpr int ValuableLimit = 200;
    /// The ledger's reference_rates guard setting (money.h), for comparing those values.
    std::optional<std::string> referenceRates;
    std::vector<std::pair<ErrorClass, std::int64_t>> failuresByClass;
    /// Failed attempts waiting for backoff or a person, by minute of their last change
    /// (index Minutes - 1 is the current minute).
    std::array<int, Minutes> retriesPerMinute{};
    std::optional<std::int64_t> backlogAgeMs; ///< age of the oldest record not yet final
    /// Suppressions read since the previous snapshot (their times) and the cursor after them.
    std::vector<std::int64_t> newSuppressionsAtMs;
    std::int64_t suppressionCursor = 0;

    /// True for a ledger that holds nothing yet: no operation, no dead letter.
    bool isEmpty() const { return figures.operations == 0 && dlqDepth == 0; }

    /// Reads everything once. `suppressionCursor` continues an earlier scan.
    static OverviewSnapshot read(LedgerStore &store, MessageQueue *queues,
                                 std::int64_t suppressionCursor);
};

} // namespace idempo
