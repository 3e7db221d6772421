// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string_view>

namespace idempo {

/// Operation states (design.md "Operation states"). The snake_case names are stored in the
/// ledger and printed by the CLI; the numeric values are not persisted.
enum class OperationState
{
    Received,
    AwaitingApproval,
    Dispatching,
    Succeeded,
    FailedRetryable,
    UnknownOutcome,
    ConfirmationRequired,
    FailedTerminal,
};
inline constexpr int OperationStateCount = 8;

/// How a step may be repeated: `read` freely, `idempotent_write` safely (or the provider
/// honours our key), `protected_write` at most once.
enum class ToolKind
{
    Read,
    IdempotentWrite,
    ProtectedWrite
};

/// What a claim answers; exactly one per claim (design.md "Claim outcomes").
enum class ClaimOutcome
{
    Claimed,
    Replayed,
    InProgress,
    RetryLater,
    ReconcileRequired,
    PayloadMismatch,
    BudgetExhausted, ///< the run is halted: nothing dispatches until a person resumes it
};

/// Classes of a failed attempt (design.md "Errors and retries").
enum class ErrorClass
{
    Transient,
    RateLimited,
    Validation,
    Auth,
    PolicyDenied,
    UnknownOutcome,
    StaleLease
};

std::string_view stateName(OperationState state);
std::string_view toolKindName(ToolKind kind);
std::string_view claimOutcomeName(ClaimOutcome outcome);
std::string_view errorClassName(ErrorClass errorClass);

std::optional<OperationState> parseState(std::string_view name);
std::optional<ToolKind> parseToolKind(std::string_view name);
std::optional<ClaimOutcome> parseClaimOutcome(std::string_view name);
std::optional<ErrorClass> parseErrorClass(std::string_view name);

/// True for `succeeded` and `failed_terminal`: the states whose records carry a retention expiry
/// and whose claims are answered by replay.
bool isFinal(OperationState state);

} // namespace idempo
