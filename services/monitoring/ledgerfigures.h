// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ledgerstore.h"

namespace idempo {

/// The figures of one namespace (or every namespace) that `idempo metrics` reports and the
/// console's Overview shows: one computation over LedgerStore::metrics(), so a scrape and the
/// console never disagree. Ages are judged on the store's clock (LedgerMetrics::nowMs).
struct LedgerFigures final
{
    /// Upper bounds (ms) of the time-to-final buckets the console charts; the last bucket is
    /// open-ended.
    static constexpr std::array<std::int64_t, 7> FinalBucketsMs{
        1'000, 5'000, 30'000, 60'000, 300'000, 1'800'000, 3'600'000};

    std::string ns; ///< empty: every namespace
    LedgerMetrics metrics;
    std::int64_t operations = 0; ///< in every state
    std::int64_t suppressionsTotal = 0;
    /// Suppressions per second over LedgerMetrics::RecentWindowMs: the duplicate-detection rate.
    double suppressionRatePerSecond = 0;
    /// How long the oldest record has waited in its state; unset when none waits there.
    std::optional<std::int64_t> oldestConfirmationAgeMs;
    std::optional<std::int64_t> oldestUnknownOutcomeAgeMs;
    std::optional<std::int64_t> oldestRetryAgeMs;
    /// Creation to final state over the window's sample, nearest-rank; unset without a sample.
    std::optional<std::int64_t> timeToFinalP50Ms;
    std::optional<std::int64_t> timeToFinalP95Ms;
    std::optional<std::int64_t> timeToFinalMaxMs;
    std::array<int, FinalBucketsMs.size() + 1> timeToFinalBuckets{};

    /// Operations in `state`.
    std::int64_t count(OperationState state) const;

    /// Reads the figures of namespace `ns` (empty: every namespace) in one LedgerStore::metrics().
    static LedgerFigures read(LedgerStore &store, const std::string &ns);

    /// The figures as `idempo metrics --json` prints them: counts, ages and times in seconds
    /// (milliseconds as fractions), null for an age with nothing waiting.
    nlohmann::json toJson() const;
};

} // namespace idempo
