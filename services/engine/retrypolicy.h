// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "vocabulary.h"

namespace idempo {

/// Where a failed attempt goes next, and after how long (milliseconds) it may be claimed again.
struct FailureDecision
{
    OperationState next = OperationState::FailedRetryable;
    std::optional<std::int64_t> retryDelayMs;
};

/// Classified retries with exponential backoff (design.md "Errors and retries").
/// Attempt n (1-based) that fails retryably waits baseDelayMs · multiplier^(n-1), scaled by a
/// jitter factor in [1 - jitter, 1 + jitter], capped at maxDelayMs: about 1 s, 4 s, 16 s.
/// `rate_limited` waits at least the provider's Retry-After. `validation`, `auth` and
/// `policy_denied` stop at once (failed_terminal). `unknown_outcome` on a protected write goes
/// to unknown_outcome (reconcile first); on reads and idempotent writes it is retried.
/// A retryable failure of the last allowed attempt goes to confirmation_required.
class RetryPolicy final
{
public:
    /// Returns a uniformly distributed number in [0, 1); injectable for reproducible jitter.
    using RandomSource = std::function<double()>;

    RetryPolicy();
    explicit RetryPolicy(RandomSource random);

    FailureDecision decide(ErrorClass errorClass, ToolKind kind, int attempt, int maxAttempts,
                           std::optional<std::int64_t> retryAfterMs) const;

    /// The backoff before attempt `attempt + 1`, without jitter, in milliseconds.
    std::int64_t nominalDelayMs(int attempt) const;

    std::int64_t baseDelayMs = 1'000;
    double multiplier = 4.0;
    double jitter = 0.2;
    std::int64_t maxDelayMs = 300'000;

private:
    RandomSource m_random;
};

} // namespace idempo
