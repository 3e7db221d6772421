// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <functional>

#include "operation.h"

namespace idempo {

/// The write a claim makes.
enum class ClaimWrite
{
    None,     ///< answer only (plus the suppression record)
    Create,   ///< new record (or one whose retention expired): dispatching, or awaiting_approval
    Dispatch, ///< existing record to dispatching with a new fencing token and attempt + 1
    Revoke,   ///< lapsed lease on a protected write: to unknown_outcome with a new token
};

struct ClaimPlan
{
    ClaimOutcome outcome;
    ClaimWrite write;
    /// The record fingerprints another projection than the request: its fingerprints cannot
    /// be compared (outcome payload_mismatch, nothing written, no suppression recorded).
    bool projectionDiffers = false;
};

/// The claim rules, as one pure function of the existing record and the store's clock.
/// Both stores follow it (PostgreSQL in one SQL statement; the contract tests hold them equal):
/// - no record, or its retention expired: a new operation (`claimed`, or `in_progress` when
///   it needs approval);
/// - otherwise the projection and the fingerprint are checked first: a record that fingerprints
///   another set of pointers → projectionDiffers, nothing changes and nothing is recorded (the
///   engine then fingerprints by the record's projection or refuses); a different fingerprint →
///   `payload_mismatch`, nothing changes;
/// - succeeded / failed_terminal → `replayed`;
/// - awaiting_approval / confirmation_required, or dispatching with a live lease → `in_progress`;
/// - unknown_outcome → `reconcile_required`;
/// - received / failed_retryable before next_attempt_at → `retry_later`; at or after it →
/// `claimed`;
/// - dispatching with a lapsed lease: `read` / `idempotent_write` are taken over (`claimed`,
///   new token); a `protected_write` moves to unknown_outcome (`reconcile_required`).
ClaimPlan planClaim(const Operation *existing, const ClaimRequest &request, std::int64_t nowMs);

/// True when the record's retention expiry has passed at `nowMs`.
bool isExpired(const Operation &operation, std::int64_t nowMs);

/// A new record for `request`, created at `nowMs` (not yet dispatched: state received, or
/// awaiting_approval when the request needs approval).
Operation newOperation(const ClaimRequest &request, std::int64_t nowMs);

/// Moves `op` to dispatching under `token` for `owner` with a lease of `leaseMs` from `nowMs`:
/// a claim, a retry after backoff, or a lapsed-lease takeover. Counts the attempt.
void startDispatch(Operation &op, const std::string &owner, std::int64_t leaseMs,
                   std::int64_t nowMs, std::int64_t token);

/// A lapsed lease on a protected write: to unknown_outcome under `token`, which fences off the
/// lapsed holder.
void revokeLease(Operation &op, std::int64_t nowMs, std::int64_t token);

/// Checks a compare-and-set against the current record. Throws Error(NotFound) when there is
/// none; Error(StaleLease) when the fencing token is not current, or a worker write (from
/// dispatching) finds the lease gone; Error(IllegalTransition) when the state moved or the
/// transition table forbids from → to; Error(InvalidArgument) for a heartbeat without a lease.
void checkTransition(const Operation *current, const TransitionRequest &request);

/// Applies an accepted transition to `op` at `nowMs`. `issueToken` returns a new fencing
/// token; it is called when the operation is dispatched anew.
void applyTransition(Operation &op, const TransitionRequest &request, std::int64_t nowMs,
                     const std::function<std::int64_t()> &issueToken);

} // namespace idempo
