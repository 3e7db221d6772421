// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ledgerstore.h"
#include "retrypolicy.h"

namespace idempo {

/// A claim as callers state it: raw JSON text, before validation and fingerprinting.
struct ClaimInput
{
    std::string ns = "default";
    std::string key;
    std::string payloadJson; ///< any JSON text (RFC 8259)
    ToolKind kind = ToolKind::ProtectedWrite;
    std::string owner;                   ///< lease owner; defaults to host:pid
    std::optional<std::int64_t> leaseMs; ///< default Engine::Settings::leaseMs
    std::string runId;
    std::string stepId;
    std::string target;
    /// JSON Pointers of the projection a new record fingerprints (empty = the whole payload).
    /// An existing record's own projection decides: empty here takes it; naming another is refused.
    std::vector<std::string> fingerprintFields;
    std::optional<int> maxAttempts; ///< default Engine::Settings::maxAttempts
    bool requiresApproval = false;
    /// What the operation moves (approval thresholds, review order). Recorded by the claim that
    /// creates the record; a later claim's value is ignored, as the payload decides identity.
    std::optional<Amount> value;
    /// What this dispatch may spend and the model tokens it may use, charged to the run's
    /// budgets when the claim dispatches (runbudget.h); both need a run id.
    std::optional<Amount> cost;
    std::int64_t tokens = 0;
};

/// The engine: validates input, fingerprints payloads (RFC 8785 + SHA-256), applies the retry
/// policy and drives a LedgerStore. Thread-safe when its store is. Logs operation keys and
/// outcomes through spdlog, never payload contents.
class Engine final
{
public:
    /// The shortest retention accepted, milliseconds: a duplicate arriving after retention is a
    /// new operation, and redeliveries within an hour are common.
    static constexpr std::int64_t MinRetentionMs = 3600'000;
    /// The longest lease, milliseconds (the shortest is 1 ms).
    static constexpr std::int64_t MaxLeaseMs = 24 * 3600'000;
    /// The highest attempt limit a claim may set.
    static constexpr int MaxAttempts = 100;
    /// The most tokens one claim may declare.
    static constexpr std::int64_t MaxClaimTokens = 1'000'000'000'000;

    struct Settings
    {
        std::int64_t leaseMs = 30'000; ///< default lease, milliseconds
        std::int64_t retentionMs =
            24 * 3600'000; ///< how long final records are kept, ms (>= MinRetentionMs)
        int maxAttempts = 3;
        std::size_t maxPayloadBytes = 1024 * 1024; ///< bytes of payload, result or receipt text
    };

    /// Throws Error(InvalidArgument) for settings out of range.
    Engine(std::shared_ptr<LedgerStore> store, Settings settings, RetryPolicy policy);
    explicit Engine(std::shared_ptr<LedgerStore> store);

    LedgerStore &store() { return *m_store; }
    const Settings &settings() const { return m_settings; }

    /// Claims an operation. Throws Error(InvalidKey | InvalidJson | PayloadTooLarge |
    /// InvalidArgument) before anything is written, and Error(ProjectionMismatch) when the
    /// input names fingerprint fields other than the existing record's (nothing written, no
    /// suppression); every outcome, including payload_mismatch, is a return value.
    ClaimResult claim(const ClaimInput &input);

    /// Records success under the lease `fencingToken`; `resultJson` and `receiptJson` may be
    /// empty. Repeating an applied complete (same token, result and receipt) returns the record.
    /// Throws Error(StaleLease) when the token is not current, Error(NotFound).
    Operation complete(const std::string &ns, const std::string &key, std::int64_t fencingToken,
                       const std::string &resultJson, const std::string &receiptJson);

    /// Records a failed attempt; the retry policy picks the next state and backoff.
    /// `retryAfterMs` is the provider's Retry-After. Throws like complete().
    Operation fail(const std::string &ns, const std::string &key, std::int64_t fencingToken,
                   ErrorClass errorClass, const std::string &detail,
                   std::optional<std::int64_t> retryAfterMs = std::nullopt);

    /// Extends the lease to `leaseMs` from now (default Settings::leaseMs). Throws like complete().
    Operation heartbeat(const std::string &ns, const std::string &key, std::int64_t fencingToken,
                        std::optional<std::int64_t> leaseMs = std::nullopt);

    /// The record, or Error(NotFound).
    Operation get(const std::string &ns, const std::string &key);

    /// Validates and canonicalises JSON text, refusing more than Settings::maxPayloadBytes.
    /// Throws Error(InvalidJson | PayloadTooLarge); `what` names the field in messages.
    std::string canonicalise(const std::string &json, const char *what) const;

private:
    nlohmann::json parse(const std::string &json, const char *what) const;

    std::shared_ptr<LedgerStore> m_store;
    Settings m_settings;
    RetryPolicy m_policy;
};

/// "hostname:pid", the default lease owner.
std::string defaultOwner();

} // namespace idempo
