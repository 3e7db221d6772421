// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "operation.h"

namespace idempo {

/// What a provider says about an operation, looked up by its key: the evidence a
/// reconciliation records.
struct ProviderEvidence
{
    enum class Status
    {
        Found,       ///< the effect exists; `reference` names it
        NotFound,    ///< the operation's own provider, asked by key, has no effect for it
        Pending,     ///< accepted, not confirmed yet
        Unsupported, ///< no lookup for this operation: its provider cannot be asked, or is not this
                     ///< lookup's
    };
    Status status = Status::Unsupported;
    std::string provider;  ///< who was asked
    std::string reference; ///< the provider's reference of the effect (Found)
    nlohmann::json raw;    ///< what the provider answered, kept as evidence
};

std::string_view evidenceStatusName(ProviderEvidence::Status status);

/// The evidence as a reconciliation records it: {"status", "provider", "reference", "answer"}.
nlohmann::json evidenceJson(const ProviderEvidence &evidence);

/// Asks the provider of an operation what happened, by the operation's key. An implementation
/// answers NotFound only for operations it covers (sent to a provider it can ask); for any
/// other it answers Unsupported, since silence from a source that cannot know proves nothing.
class ProviderLookup
{
public:
    virtual ~ProviderLookup() = default;
    /// Throws Error(LedgerUnavailable) when the provider cannot be reached.
    virtual ProviderEvidence lookup(const Operation &op) = 0;
};

/// The lookup for ledgers without a provider to ask: every answer is Unsupported, so a
/// reconciliation can only hand the operation to a person (confirmation_required).
class NoProviderLookup final : public ProviderLookup
{
public:
    ProviderEvidence lookup(const Operation &op) override;
};

} // namespace idempo
