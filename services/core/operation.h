// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "amount.h"
#include "payloadmatch.h"
#include "runbudget.h"
#include "vocabulary.h"

namespace idempo {

/// Version of the record layout written by this build; every row carries it.
inline constexpr int RecordSchemaVersion = 1;

/// One business operation in the ledger, identified by (namespace, key).
/// Times are milliseconds since the Unix epoch (UTC) on the store's clock.
/// JSON-valued fields (payload, result, receipt) hold RFC 8785 canonical text; empty when unset.
struct Operation
{
    std::int64_t id = 0; ///< store row id; keyset cursor for listings
    std::string ns;      ///< tenant / namespace that scopes the key
    std::string key;     ///< operation (idempotency) key
    std::string runId;
    std::string stepId;
    std::string target;
    ToolKind kind = ToolKind::ProtectedWrite;
    OperationState state = OperationState::Received;
    std::string payload;
    std::string fingerprint; ///< lowercase hex SHA-256 (canonicaljson.h)
    std::vector<std::string>
        fingerprintFields; ///< JSON Pointers of the projection; empty = whole payload
    int attempt = 0;       ///< dispatches so far
    int maxAttempts = 3;
    std::string leaseOwner;
    std::optional<std::int64_t> leaseExpiresAtMs;
    std::int64_t fencingToken = 0; ///< monotonic per key; 0 = never dispatched
    std::optional<std::int64_t> nextAttemptAtMs;
    std::optional<ErrorClass> errorClass;
    std::string errorDetail;
    std::string result;
    std::string receipt; ///< provider's proof of the effect (external reference)
    std::int64_t createdAtMs = 0;
    std::int64_t updatedAtMs = 0;
    std::optional<std::int64_t> retentionExpiresAtMs; ///< set on final states only
    std::int64_t version = 0;                         ///< operation version: +1 on every change
    int schemaVersion = RecordSchemaVersion;
    std::optional<Amount> value; ///< what the operation moves, as declared by its first claim
};

/// One entry of an operation's append-only history. `fromState` is empty for the record's creation.
struct OperationEvent
{
    std::int64_t id = 0;
    std::string ns;
    std::string key;
    std::int64_t atMs = 0;
    std::optional<OperationState> fromState;
    OperationState toState = OperationState::Received;
    std::int64_t fencingToken = 0;
    int attempt = 0;
    std::string actor;
    std::optional<ErrorClass> errorClass;
    std::string detail;
};

/// A claim answered without executing (design.md "suppression").
struct Suppression
{
    std::int64_t id = 0;
    std::string ns;
    std::string key;
    std::int64_t atMs = 0;
    ClaimOutcome outcome = ClaimOutcome::Replayed;
    OperationState state = OperationState::Received; ///< the record's state when suppressed
    std::string source;                              ///< the claiming owner / delivery source
    std::string fingerprint;                         ///< fingerprint the duplicate carried
};

/// A validated claim, as the engine hands it to a store. Times in milliseconds.
struct ClaimRequest
{
    std::string ns;
    std::string key;
    std::string runId;
    std::string stepId;
    std::string target;
    ToolKind kind = ToolKind::ProtectedWrite;
    std::string payload; ///< canonical JSON text
    std::string fingerprint;
    std::vector<std::string> fingerprintFields;
    std::string owner;
    std::int64_t leaseMs = 30'000;
    int maxAttempts = 3;
    bool requiresApproval =
        false; ///< a new record waits in awaiting_approval instead of dispatching
    std::optional<Amount>
        value; ///< recorded when the claim creates the record; later claims keep the first
    /// What this dispatch may spend and the model tokens it may use, charged to the run's
    /// budgets (runbudget.h) when the claim dispatches; nothing without a run id.
    std::optional<Amount> cost;
    std::int64_t tokens = 0;
};

/// The answer to a claim: the outcome and the record as it stands after the claim.
/// For payload_mismatch the record is the existing one, unchanged.
struct ClaimResult
{
    ClaimOutcome outcome = ClaimOutcome::Claimed;
    Operation operation;
    /// From a store only (the engine never returns it): the record fingerprints another
    /// projection (`operation.fingerprintFields`), so nothing was compared, written or recorded.
    bool projectionDiffers = false;
    /// budget_exhausted: which budget of the run, with its figures. The record is the existing
    /// one, unchanged, or for a key never claimed an unsaved one (id 0, state received).
    std::optional<BudgetExhaustion> exhausted;
};

/// A compare-and-set state change: applied only if the record is in `from` with `fencingToken`.
/// Fields left unset keep their value. Durations in milliseconds.
struct TransitionRequest
{
    std::string ns;
    std::string key;
    OperationState from = OperationState::Dispatching;
    std::int64_t fencingToken = 0;
    OperationState to = OperationState::Succeeded;
    std::string actor;
    std::string detail; ///< free text kept in the event history
    std::optional<std::string> result;
    std::optional<std::string> receipt;
    std::optional<ErrorClass> errorClass;
    std::optional<std::string> errorDetail;
    std::optional<std::int64_t> retryDelayMs; ///< sets next_attempt_at = now + delay
    std::optional<std::int64_t>
        leaseMs;                      ///< to == dispatching: lease length (heartbeat or dispatch)
    std::optional<int> extraAttempts; ///< a new attempt budget: max = attempt + extra
    std::int64_t retentionMs = 0;     ///< to a final state: retention from now
};

/// The order of a listing, which its keyset cursor follows.
enum class ListOrder
{
    Id,                ///< oldest first: id ascending
    ValueDescending,   ///< valueRank() descending (records without a value last), then id ascending
    IdDescending,      ///< newest first: id descending
    ValueAscending,    ///< valueRank() ascending (records without a value first), then id ascending
    UpdatedAscending,  ///< updated_at_ms ascending (untouched longest first), then id ascending
    UpdatedDescending, ///< updated_at_ms descending (latest change first), then id ascending
    KeyAscending, ///< operation_key in byte order, then id ascending (one key in two namespaces)
};

/// Filter and keyset cursor for listings; results are ordered as `order` says.
struct ListFilter
{
    /// The value a record without one sorts as in ValueDescending: below every real amount.
    static constexpr std::int64_t NoValue = NoValueRank;

    std::string ns; ///< empty = every namespace
    std::optional<OperationState> state;
    std::string runId;
    std::string keyPrefix;
    std::optional<std::int64_t> updatedBeforeMs; ///< only records not touched since (age filter)
    /// Payload fields every record holds (payloadmatch.h); checked by the store, which refuses
    /// a bad pointer before it runs anything.
    std::vector<PayloadMatch> payload;
    std::string customer;     ///< the payload's customer (PayloadCustomerPointer); empty = any
    std::int64_t afterId = 0; ///< keyset cursor: the last id of the previous page
    ListOrder order = ListOrder::Id;
    /// The value orders' factors (valueRank()): empty ranks amounts of every currency by their
    /// minor units; the reference rates (ReferenceRates::factors()) rank them in one currency.
    std::vector<ValueFactor> valueFactors;
    /// ValueDescending cursor, with afterId: the previous page's last valueRank() under
    /// valueFactors (NoValue for none); unset on a first page.
    std::optional<std::int64_t> afterValueMinor;
    int limit = 100;
    /// The cursors of the other orders, each with afterId (unset on a first page): the previous
    /// page's last value for ValueAscending is afterValueMinor; its last updated_at_ms for
    /// UpdatedAscending / UpdatedDescending; its last key for KeyAscending. IdDescending reads
    /// afterId alone (0 on a first page).
    std::optional<std::int64_t> afterUpdatedMs;
    std::optional<std::string> afterKey;
};

/// Ledger totals of one namespace (or all), as each store reads them in SQL: the raw figures
/// LedgerFigures (ledgerfigures.h) turns into what `idempo metrics` and the console's Overview
/// show. Times are on the store's clock, read once as `nowMs`.
struct LedgerMetrics
{
    /// How far back the windowed figures look: suppressions and operations that reached a final
    /// state (succeeded, failed_terminal) within the last hour.
    static constexpr std::int64_t WindowMs = 3'600'000;
    /// The recent window of the suppression rate: the last five minutes.
    static constexpr std::int64_t RecentWindowMs = 300'000;
    /// At most this many of the window's final operations are read for the time to final.
    static constexpr int FinalSampleLimit = 10'000;

    std::int64_t nowMs = 0; ///< the store's clock when the figures were read
    std::vector<std::pair<OperationState, std::int64_t>> byState;
    std::vector<std::pair<ClaimOutcome, std::int64_t>> suppressionsByOutcome;
    std::int64_t leasesLive = 0;
    std::int64_t leasesLapsed = 0;
    /// The last change of the oldest confirmation_required / unknown_outcome record: the moment
    /// it entered the state, since a record waiting there changes only by leaving it.
    std::optional<std::int64_t> oldestConfirmationMs;
    std::optional<std::int64_t> oldestUnknownOutcomeMs;
    /// Operations waiting to be tried again (failed_retryable, or received with a next attempt
    /// time) and the last change of the oldest of them.
    std::int64_t retriesWaiting = 0;
    std::optional<std::int64_t> oldestRetryMs;
    std::int64_t suppressionsInWindow = 0; ///< recorded within WindowMs
    std::int64_t suppressionsRecent = 0;   ///< recorded within RecentWindowMs
    std::int64_t finalsInWindow = 0;       ///< operations that reached a final state in WindowMs
    /// Creation to final state of the window's latest finals (at most FinalSampleLimit), latest
    /// first.
    std::vector<std::int64_t> finalDurationsMs;
    std::int64_t runsHalted = 0;
    std::int64_t events = 0;
};

} // namespace idempo
