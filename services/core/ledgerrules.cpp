// SPDX-License-Identifier: Apache-2.0
#include "ledgerrules.h"

#include "canonicaljson.h"
#include "error.h"
#include "transitiontable.h"

namespace idempo {

bool isExpired(const Operation &operation, std::int64_t nowMs)
{
    return operation.retentionExpiresAtMs && *operation.retentionExpiresAtMs <= nowMs;
}

ClaimPlan planClaim(const Operation *existing, const ClaimRequest &request, std::int64_t nowMs)
{
    if (!existing || isExpired(*existing, nowMs)) {
        return {request.requiresApproval ? ClaimOutcome::InProgress : ClaimOutcome::Claimed,
                ClaimWrite::Create};
    }
    if (projectionSet(existing->fingerprintFields) != projectionSet(request.fingerprintFields))
        return {ClaimOutcome::PayloadMismatch, ClaimWrite::None, true};
    if (existing->fingerprint != request.fingerprint)
        return {ClaimOutcome::PayloadMismatch, ClaimWrite::None};

    switch (existing->state) {
    case OperationState::Succeeded:
    case OperationState::FailedTerminal:
        return {ClaimOutcome::Replayed, ClaimWrite::None};
    case OperationState::AwaitingApproval:
    case OperationState::ConfirmationRequired:
        return {ClaimOutcome::InProgress, ClaimWrite::None};
    case OperationState::UnknownOutcome:
        return {ClaimOutcome::ReconcileRequired, ClaimWrite::None};
    case OperationState::Received:
    case OperationState::FailedRetryable:
        if (existing->nextAttemptAtMs && *existing->nextAttemptAtMs > nowMs)
            return {ClaimOutcome::RetryLater, ClaimWrite::None};
        return {ClaimOutcome::Claimed, ClaimWrite::Dispatch};
    case OperationState::Dispatching:
        if (existing->leaseExpiresAtMs && *existing->leaseExpiresAtMs > nowMs)
            return {ClaimOutcome::InProgress, ClaimWrite::None};
        if (existing->kind == ToolKind::ProtectedWrite)
            return {ClaimOutcome::ReconcileRequired, ClaimWrite::Revoke};
        return {ClaimOutcome::Claimed, ClaimWrite::Dispatch};
    }
    return {ClaimOutcome::InProgress, ClaimWrite::None};
}

Operation newOperation(const ClaimRequest &request, std::int64_t nowMs)
{
    Operation op;
    op.ns = request.ns;
    op.key = request.key;
    op.runId = request.runId;
    op.stepId = request.stepId;
    op.target = request.target;
    op.kind = request.kind;
    op.payload = request.payload;
    op.fingerprint = request.fingerprint;
    op.fingerprintFields = request.fingerprintFields;
    op.maxAttempts = request.maxAttempts;
    op.state =
        request.requiresApproval ? OperationState::AwaitingApproval : OperationState::Received;
    op.value = request.value;
    op.createdAtMs = op.updatedAtMs = nowMs;
    op.version = 1;
    return op;
}

void startDispatch(Operation &op, const std::string &owner, std::int64_t leaseMs,
                   std::int64_t nowMs, std::int64_t token)
{
    op.state = OperationState::Dispatching;
    op.fencingToken = token;
    op.attempt += 1;
    op.leaseOwner = owner;
    op.leaseExpiresAtMs = nowMs + leaseMs;
    op.nextAttemptAtMs.reset();
    op.updatedAtMs = nowMs;
}

void revokeLease(Operation &op, std::int64_t nowMs, std::int64_t token)
{
    op.errorDetail = "lease of " + op.leaseOwner + " lapsed during a protected write";
    op.errorClass = ErrorClass::UnknownOutcome;
    op.state = OperationState::UnknownOutcome;
    op.fencingToken = token;
    op.leaseExpiresAtMs.reset();
    op.updatedAtMs = nowMs;
}

void checkTransition(const Operation *current, const TransitionRequest &request)
{
    if (!current)
        throw Error(ErrorCode::NotFound,
                    "no operation '" + request.key + "' in namespace '" + request.ns + "'");
    if (current->fencingToken != request.fencingToken) {
        throw Error(ErrorCode::StaleLease, "fencing token " + std::to_string(request.fencingToken) +
                                               " is not the operation's current token (" +
                                               std::to_string(current->fencingToken) + ")");
    }
    if (current->state != request.from) {
        const std::string is(stateName(current->state));
        if (request.from == OperationState::Dispatching)
            throw Error(ErrorCode::StaleLease,
                        "the lease is no longer held: the operation is " + is);
        throw Error(ErrorCode::IllegalTransition,
                    "the operation is " + is + ", not " + std::string(stateName(request.from)));
    }
    if (!isTransitionAllowed(request.from, request.to)) {
        throw Error(ErrorCode::IllegalTransition, std::string(stateName(request.from)) + " -> " +
                                                      std::string(stateName(request.to)) +
                                                      " is not an allowed transition");
    }
    if (request.to == OperationState::Dispatching && (!request.leaseMs || *request.leaseMs <= 0))
        throw Error(ErrorCode::InvalidArgument, "a dispatch or heartbeat needs a positive lease");
}

void applyTransition(Operation &op, const TransitionRequest &request, std::int64_t nowMs,
                     const std::function<std::int64_t()> &issueToken)
{
    const OperationState from = op.state;
    op.state = request.to;
    op.updatedAtMs = nowMs;
    op.version += 1;
    op.nextAttemptAtMs.reset();
    op.retentionExpiresAtMs.reset();
    if (request.to == OperationState::Dispatching) {
        if (from == OperationState::Dispatching)
            op.leaseExpiresAtMs = nowMs + *request.leaseMs;
        else
            startDispatch(op, request.actor, *request.leaseMs, nowMs, issueToken());
    } else {
        op.leaseExpiresAtMs.reset();
    }
    if (request.result)
        op.result = *request.result;
    if (request.receipt)
        op.receipt = *request.receipt;
    if (request.errorClass)
        op.errorClass = request.errorClass;
    if (request.errorDetail)
        op.errorDetail = *request.errorDetail;
    if (request.to == OperationState::Succeeded && !request.errorClass) {
        op.errorClass.reset();
        op.errorDetail.clear();
    }
    if (request.retryDelayMs)
        op.nextAttemptAtMs = nowMs + *request.retryDelayMs;
    if (request.extraAttempts)
        op.maxAttempts = op.attempt + *request.extraAttempts;
    if (isFinal(request.to))
        op.retentionExpiresAtMs = nowMs + request.retentionMs;
}

} // namespace idempo
