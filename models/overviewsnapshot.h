// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ledgerstore.h"
#include "messagequeue.h"

namespace idempo {

/// The Overview's figures at one moment, computed on the worker from the store's read API.
struct OverviewSnapshot
{
    static constexpr int Minutes = 60;
    /// Upper bounds (ms) of the time-to-final buckets; the last bucket is open-ended.
    static constexpr std::array<std::int64_t, 7> FinalBucketsMs{
        1'000, 5'000, 30'000, 60'000, 300'000, 1'800'000, 3'600'000};

    std::int64_t nowMs = 0;
    std::int64_t operations = 0; ///< in every state
    std::int64_t leasesLive = 0;
    std::int64_t leasesLapsed = 0;
    std::int64_t confirmations = 0;
    std::int64_t awaitingApproval = 0;
    std::int64_t unknownOutcome = 0;
    std::optional<std::int64_t> oldestConfirmationAgeMs;
    std::int64_t dlqDepth = 0;
    bool hasQueues = false;
    /// Halted runs (at most HaltedLimit read), the latest halt first.
    std::vector<RunRecord> haltedRuns;
    bool haltedMore = false; ///< more than HaltedLimit are halted
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
    std::array<int, FinalBucketsMs.size() + 1> timeToFinal{};
    int timeToFinalSampled = 0;
    /// Suppressions read since the previous snapshot (their times) and the cursor after them.
    std::vector<std::int64_t> newSuppressionsAtMs;
    std::int64_t suppressionCursor = 0;

    /// True for a ledger that holds nothing yet: no operation, no dead letter.
    bool isEmpty() const { return operations == 0 && dlqDepth == 0; }

    /// Reads everything once. `suppressionCursor` continues an earlier scan.
    static OverviewSnapshot read(LedgerStore &store, MessageQueue *queues,
                                 std::int64_t suppressionCursor);
};

} // namespace idempo
