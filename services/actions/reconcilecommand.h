// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actionoutcome.h"
#include "guardedaction.h"
#include "ledgerstore.h"
#include "providerlookup.h"

namespace idempo {

/// Settles operations whose outcome automation does not know, from the provider's own word:
/// `unknown_outcome`, a protected write whose lease lapsed (still `dispatching`), and
/// `confirmation_required`. Each operation is looked up at its provider by key, the answer is
/// recorded as evidence in the audit log, and the operation moves accordingly. "Not found" is
/// the word of a lookup that covers the operation (its own provider, asked by key); a lookup
/// that does not cover it answers Unsupported ("no lookup for this operation"), never NotFound:
///
/// | from | found | not found | pending / no lookup for it |
/// |---|---|---|---|
/// | unknown_outcome | succeeded (receipt = reference) | received (may dispatch again) |
/// confirmation_required | | dispatching, lapsed | succeeded | unknown_outcome → received |
/// confirmation_required | | confirmation_required | succeeded | stays; evidence recorded for the
/// approver | stays |
///
/// This is the only way from unknown_outcome back to received: nothing re-dispatches an unknown
/// outcome without a lookup. One operation (a key) or a filtered set (bulk: validate() counts
/// it first, describe() says how many); each operation is its own transaction with its audit
/// record, and one that moved since it was looked up is skipped, not guessed at.
class ReconcileCommand final : public GuardedAction
{
public:
    struct Request
    {
        std::string ns = "default";
        std::string key; ///< one operation; empty = the filter below
        std::optional<OperationState>
            state;             ///< bulk: only this state (default: every eligible one)
        std::string keyPrefix; ///< bulk: only keys starting with this
        std::string runId;     ///< bulk: only this run
        std::string reason;    ///< recorded with every move; required
        int limit = 10'000;    ///< bulk: at most this many operations
    };
    struct Options
    {
        std::int64_t retentionMs =
            24 * 3600'000; ///< retention of a record reconciled to succeeded, ms
    };

    ReconcileCommand(LedgerStore &store, ProviderLookup &lookup, ActorIdentity actor,
                     Request request, Options options);
    ReconcileCommand(LedgerStore &store, ProviderLookup &lookup, ActorIdentity actor,
                     Request request);

    /// Resolves the set (single: the key must be eligible). Problems: role, reason, no
    /// operation, nothing eligible.
    std::vector<std::string> validate() override;
    /// Single: looks the operation up and shows what the provider says and the move.
    /// Bulk: the count, without lookups. details: {"count", "operations": [{"key", "state",
    /// "evidence"?, "to"?}]}.
    ActionPreview describe() override;
    /// Looks up and moves each operation in its own transaction with its audit record; one that
    /// moved since it was looked up is skipped. Throws Error(Refused) without a reason or role.
    ReconcileOutcome execute();

    /// The operations validate() resolved.
    const std::vector<Operation> &operations() const { return m_operations; }

    /// True when reconciliation may act on `op` at `nowMs`.
    static bool eligible(const Operation &op, std::int64_t nowMs);
    /// The refusal of an `op` that is not eligible, in the words idempo.reconcile uses.
    static std::string notReconcilable(const Operation &op);
    /// The states `op` moves through for `evidence` (empty: it stays).
    static std::vector<OperationState> moves(const Operation &op, const ProviderEvidence &evidence);

private:
    void resolve();

    LedgerStore &m_store;
    ProviderLookup &m_lookup;
    ActorIdentity m_actor;
    Request m_request;
    Options m_options;
    std::vector<Operation> m_operations;
    std::vector<std::optional<ProviderEvidence>> m_evidence;
    bool m_resolved = false;
};

} // namespace idempo
