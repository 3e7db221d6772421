// SPDX-License-Identifier: Apache-2.0
#include "ledgerfigures.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vocabulary.h"

namespace idempo {
namespace {

/// The nearest-rank `p` quantile of `sorted` (ascending, not empty): a duration one of the
/// operations really took, never an interpolation between two.
std::int64_t nearestRank(const std::vector<std::int64_t> &sorted, double p)
{
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

std::optional<std::int64_t> ageMs(std::int64_t nowMs, std::optional<std::int64_t> sinceMs)
{
    if (!sinceMs)
        return std::nullopt;
    return std::max<std::int64_t>(0, nowMs - *sinceMs);
}

nlohmann::json seconds(std::optional<std::int64_t> ms)
{
    return ms ? nlohmann::json(static_cast<double>(*ms) / 1000.0) : nlohmann::json();
}

} // namespace

std::int64_t LedgerFigures::count(OperationState state) const
{
    for (const auto &[s, n] : metrics.byState)
        if (s == state)
            return n;
    return 0;
}

LedgerFigures LedgerFigures::read(LedgerStore &store, const std::string &ns)
{
    LedgerFigures f;
    f.ns = ns;
    f.metrics = store.metrics(ns);
    const LedgerMetrics &m = f.metrics;
    for (const auto &[state, n] : m.byState)
        f.operations += n;
    for (const auto &[outcome, n] : m.suppressionsByOutcome)
        f.suppressionsTotal += n;
    f.suppressionRatePerSecond = static_cast<double>(m.suppressionsRecent) /
                                 (static_cast<double>(LedgerMetrics::RecentWindowMs) / 1000.0);
    f.oldestConfirmationAgeMs = ageMs(m.nowMs, m.oldestConfirmationMs);
    f.oldestUnknownOutcomeAgeMs = ageMs(m.nowMs, m.oldestUnknownOutcomeMs);
    f.oldestRetryAgeMs = ageMs(m.nowMs, m.oldestRetryMs);

    std::vector<std::int64_t> took = m.finalDurationsMs;
    std::sort(took.begin(), took.end());
    if (!took.empty()) {
        f.timeToFinalP50Ms = nearestRank(took, 0.5);
        f.timeToFinalP95Ms = nearestRank(took, 0.95);
        f.timeToFinalMaxMs = took.back();
    }
    for (std::int64_t ms : took) {
        const auto bucket = std::upper_bound(FinalBucketsMs.begin(), FinalBucketsMs.end(), ms) -
                            FinalBucketsMs.begin();
        ++f.timeToFinalBuckets[static_cast<std::size_t>(bucket)];
    }
    return f;
}

nlohmann::json LedgerFigures::toJson() const
{
    nlohmann::json states = nlohmann::json::object();
    for (int i = 0; i < OperationStateCount; ++i)
        states[std::string(stateName(static_cast<OperationState>(i)))] = 0;
    for (const auto &[state, n] : metrics.byState)
        states[std::string(stateName(state))] = n;
    nlohmann::json suppressions = nlohmann::json::object();
    for (const auto &[outcome, n] : metrics.suppressionsByOutcome)
        suppressions[std::string(claimOutcomeName(outcome))] = n;
    return {
        {"namespace", ns.empty() ? nlohmann::json() : nlohmann::json(ns)},
        {"operations", operations},
        {"operations_by_state", states},
        {"suppressions_by_outcome", suppressions},
        {"suppressions_total", suppressionsTotal},
        {"suppressions_last_hour", metrics.suppressionsInWindow},
        {"suppressions_last_5m", metrics.suppressionsRecent},
        {"suppression_rate_per_s", suppressionRatePerSecond},
        {"leases_live", metrics.leasesLive},
        {"leases_lapsed", metrics.leasesLapsed},
        {"confirmations_waiting", count(OperationState::ConfirmationRequired)},
        {"oldest_confirmation_age_s", seconds(oldestConfirmationAgeMs)},
        {"unknown_outcome", count(OperationState::UnknownOutcome)},
        {"oldest_unknown_outcome_age_s", seconds(oldestUnknownOutcomeAgeMs)},
        {"retries_waiting", metrics.retriesWaiting},
        {"oldest_retry_age_s", seconds(oldestRetryAgeMs)},
        {"time_to_final",
         {{"window_s", LedgerMetrics::WindowMs / 1000},
          {"finals", metrics.finalsInWindow},
          {"sampled", metrics.finalDurationsMs.size()},
          {"p50_s", seconds(timeToFinalP50Ms)},
          {"p95_s", seconds(timeToFinalP95Ms)},
          {"max_s", seconds(timeToFinalMaxMs)}}},
        {"runs_halted", metrics.runsHalted},
        {"events", metrics.events},
    };
}

} // namespace idempo
