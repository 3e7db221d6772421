// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sandboxjournal.h"
#include "scenario.h"
#include "vocabulary.h"

namespace idempo::sandbox {

/// A provider call as a worker makes it.
struct ProviderCall
{
    std::string ns;
    std::string operationKey; ///< the business operation, for the journal only
    std::string key;          ///< passed to the provider; empty when it accepts none
    std::int64_t fencingToken = 0;
    std::int64_t nowMs = 0;
    /// The provider fault scripted for this call, if any (Provider* or DelayedConfirmation).
    std::optional<Fault> fault;
    ErrorClass rejection = ErrorClass::Validation; ///< the class a ProviderRejection answers with
};

/// What the caller hears back.
struct ProviderAnswer
{
    enum class Status
    {
        Ok,       ///< done; effectId names the effect (empty for reads)
        Pending,  ///< accepted; the confirmation comes later (ask lookup)
        Failed,   ///< refused or unavailable; errorClass says how; no effect
        NoAnswer, ///< the call timed out: the effect may or may not exist
    };
    Status status = Status::Ok;
    std::string effectId;
    bool deduplicated = false; ///< the provider answered a repeated key with the original effect
    ErrorClass errorClass = ErrorClass::Transient;
    std::optional<std::int64_t> retryAfterMs;
    std::string detail;
};

/// What lookup by key finds. Only a provider that can be asked by key answers NotFound; any
/// other cannot know, and says Unsupported.
struct LookupAnswer
{
    enum class Status
    {
        NotFound,
        Pending,
        Found,
        Unsupported
    };
    Status status = Status::NotFound;
    std::string effectId;
};

/// A provider with an effect journal, capability flags and scripted faults. Write providers
/// journal every effect they perform; read providers (extraction, the model) have no effects to
/// journal. The journal is in memory (the thread mode saves it to the ledger between rounds) or,
/// once setJournal() is called, the ledger's own `sandbox_effects` table: then every effect is
/// the provider's commit there, and dedupe and lookup by key see what every worker process did.
/// Safe to call from many threads.
class SimulatedProvider final
{
public:
    /// How long a delayed confirmation takes by default, milliseconds.
    static constexpr std::int64_t ConfirmationDelayMs = 20'000;
    /// The Retry-After a 429 carries by default, milliseconds.
    static constexpr std::int64_t RetryAfterMs = 2'000;

    SimulatedProvider(std::string name, ProviderCapabilities capabilities, bool performsEffects,
                      std::int64_t confirmationDelayMs = ConfirmationDelayMs,
                      std::int64_t retryAfterMs = RetryAfterMs);

    /// Journals effects in `journal` (which must outlive the provider) instead of in memory;
    /// lookup() then reads the effects of namespace `ns` there.
    void setJournal(SandboxJournal *journal, std::string ns)
    {
        m_journal = journal;
        m_ns = std::move(ns);
    }

    const std::string &name() const { return m_name; }
    const ProviderCapabilities &capabilities() const { return m_capabilities; }

    /// Performs the call. 5xx, 429 and rejections perform nothing; a timeout performs the
    /// effect and loses the answer; a delayed confirmation performs it and answers Pending. A
    /// provider that dedupes answers a key it has seen with the original effect.
    ProviderAnswer call(const ProviderCall &call);

    /// Looks up the effect performed for `key`; Unsupported for a provider without lookupByKey.
    LookupAnswer lookup(const std::string &key, std::int64_t nowMs);

    /// The effects performed in memory since the last call, in the order they happened.
    std::vector<Effect> takeNewEffects();

    std::int64_t effectCount();
    std::int64_t deduplicatedCount();

private:
    std::string m_name;
    ProviderCapabilities m_capabilities;
    bool m_performsEffects;
    std::int64_t m_confirmationDelayMs;
    std::int64_t m_retryAfterMs;
    SandboxJournal *m_journal = nullptr;
    std::string m_ns;
    std::mutex m_mutex;
    std::unordered_map<std::string, Effect> m_byKey; ///< by received key
    std::unordered_map<std::string, int>
        m_effectsPerOperation; ///< numbers effect ids per business operation
    std::vector<Effect> m_unsaved;
    std::int64_t m_effects = 0;
    std::int64_t m_deduplicated = 0;
};

} // namespace idempo::sandbox
