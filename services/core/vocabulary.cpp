// SPDX-License-Identifier: Apache-2.0
#include "vocabulary.h"

#include <array>
#include <utility>

namespace idempo {
namespace {

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<OperationState, OperationStateCount> kStates{{
    {OperationState::Received, "received"},
    {OperationState::AwaitingApproval, "awaiting_approval"},
    {OperationState::Dispatching, "dispatching"},
    {OperationState::Succeeded, "succeeded"},
    {OperationState::FailedRetryable, "failed_retryable"},
    {OperationState::UnknownOutcome, "unknown_outcome"},
    {OperationState::ConfirmationRequired, "confirmation_required"},
    {OperationState::FailedTerminal, "failed_terminal"},
}};

constexpr NameTable<ToolKind, 3> kKinds{{
    {ToolKind::Read, "read"},
    {ToolKind::IdempotentWrite, "idempotent_write"},
    {ToolKind::ProtectedWrite, "protected_write"},
}};

constexpr NameTable<ClaimOutcome, 7> kOutcomes{{
    {ClaimOutcome::Claimed, "claimed"},
    {ClaimOutcome::Replayed, "replayed"},
    {ClaimOutcome::InProgress, "in_progress"},
    {ClaimOutcome::RetryLater, "retry_later"},
    {ClaimOutcome::ReconcileRequired, "reconcile_required"},
    {ClaimOutcome::PayloadMismatch, "payload_mismatch"},
    {ClaimOutcome::BudgetExhausted, "budget_exhausted"},
}};

constexpr NameTable<ErrorClass, 7> kErrorClasses{{
    {ErrorClass::Transient, "transient"},
    {ErrorClass::RateLimited, "rate_limited"},
    {ErrorClass::Validation, "validation"},
    {ErrorClass::Auth, "auth"},
    {ErrorClass::PolicyDenied, "policy_denied"},
    {ErrorClass::UnknownOutcome, "unknown_outcome"},
    {ErrorClass::StaleLease, "stale_lease"},
}};

template <typename E, std::size_t N> std::string_view nameOf(const NameTable<E, N> &table, E value)
{
    for (const auto &[v, name] : table)
        if (v == value)
            return name;
    return {};
}

template <typename E, std::size_t N>
std::optional<E> valueOf(const NameTable<E, N> &table, std::string_view name)
{
    for (const auto &[v, n] : table)
        if (n == name)
            return v;
    return std::nullopt;
}

} // namespace

std::string_view stateName(OperationState state)
{
    return nameOf(kStates, state);
}
std::string_view toolKindName(ToolKind kind)
{
    return nameOf(kKinds, kind);
}
std::string_view claimOutcomeName(ClaimOutcome outcome)
{
    return nameOf(kOutcomes, outcome);
}
std::string_view errorClassName(ErrorClass errorClass)
{
    return nameOf(kErrorClasses, errorClass);
}

std::optional<OperationState> parseState(std::string_view name)
{
    return valueOf(kStates, name);
}
std::optional<ToolKind> parseToolKind(std::string_view name)
{
    return valueOf(kKinds, name);
}
std::optional<ClaimOutcome> parseClaimOutcome(std::string_view name)
{
    return valueOf(kOutcomes, name);
}
std::optional<ErrorClass> parseErrorClass(std::string_view name)
{
    return valueOf(kErrorClasses, name);
}

bool isFinal(OperationState state)
{
    return state == OperationState::Succeeded || state == OperationState::FailedTerminal;
}

} // namespace idempo
