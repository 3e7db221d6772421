// SPDX-License-Identifier: Apache-2.0
#include "retrypolicy.h"

#include <algorithm>
#include <cmath>

#include <QRandomGenerator>

namespace idempo {

RetryPolicy::RetryPolicy()
    : RetryPolicy([] { return QRandomGenerator::global()->generateDouble(); })
{
}

RetryPolicy::RetryPolicy(RandomSource random) : m_random(std::move(random)) {}

std::int64_t RetryPolicy::nominalDelayMs(int attempt) const
{
    const double delay =
        static_cast<double>(baseDelayMs) * std::pow(multiplier, std::max(0, attempt - 1));
    return static_cast<std::int64_t>(std::min(delay, static_cast<double>(maxDelayMs)));
}

FailureDecision RetryPolicy::decide(ErrorClass errorClass, ToolKind kind, int attempt,
                                    int maxAttempts, std::optional<std::int64_t> retryAfterMs) const
{
    switch (errorClass) {
    case ErrorClass::Validation:
    case ErrorClass::Auth:
    case ErrorClass::PolicyDenied:
        return {OperationState::FailedTerminal, std::nullopt};
    case ErrorClass::UnknownOutcome:
        if (kind == ToolKind::ProtectedWrite)
            return {OperationState::UnknownOutcome, std::nullopt};
        break;
    case ErrorClass::Transient:
    case ErrorClass::RateLimited:
    case ErrorClass::StaleLease:
        break;
    }
    if (attempt >= maxAttempts)
        return {OperationState::ConfirmationRequired, std::nullopt};

    const double factor = 1.0 + jitter * (2.0 * m_random() - 1.0);
    auto delay = static_cast<std::int64_t>(static_cast<double>(nominalDelayMs(attempt)) * factor);
    if (errorClass == ErrorClass::RateLimited && retryAfterMs)
        delay = std::max(delay, *retryAfterMs);
    return {OperationState::FailedRetryable, delay};
}

} // namespace idempo
