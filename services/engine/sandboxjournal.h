// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vocabulary.h"

namespace idempo {
class LedgerStore;
}

namespace idempo::sandbox {

/// One effect a provider performed: an account opened, a refund paid, a seat booked, a mail
/// sent. Times are milliseconds on the sandbox's clock.
struct Effect
{
    std::string ns;
    std::string provider;
    std::string operationKey; ///< the business operation (run_id:step_id), known to the sandbox
    std::string receivedKey;  ///< the key the provider was given; empty when it takes none
    std::int64_t fencingToken = 0; ///< the token it was given; 0 when none
    std::string effectId;          ///< the provider's reference: what a receipt names
    std::int64_t atMs = 0;
    std::int64_t confirmedAtMs = 0; ///< when a lookup starts to report it (delayed confirmation)
};

/// A run the sandbox started, as recorded beside the ledger.
struct RunRecord
{
    std::string ns;
    std::string runId;
    std::string scenario;
    bool naive = false; ///< run by the consumer without an idempotency layer
};

/// One event of an operation's history, as the invariant checker reads it.
struct HistoryRow
{
    std::string operationKey;
    std::optional<OperationState> from;
    OperationState to = OperationState::Received;
    std::int64_t fencingToken = 0;
};

/// The driver that runs a sandbox run on a queue, as recorded beside the ledger
/// (`sandbox_queue_holders`, one row per queue): see DriverLease.
struct QueueHolder
{
    std::string queue;
    std::string ns;                    ///< the run's namespace
    std::string driver;                ///< for people, e.g. "pid 4711 on host db-1"
    std::string instance;              ///< the process, for the liveness check (DriverLease)
    std::int64_t leaseExpiresAtMs = 0; ///< on the ledger's clock
};

/// What SandboxJournal::perform() did.
struct Performed
{
    Effect effect; ///< the new effect, or the original one a repeated key was answered with
    bool deduplicated =
        false; ///< a provider that dedupes by key had seen the key: nothing new happened
};

/// The sandbox's own tables in the ledger's database, beside the engine's (whose schema is not
/// touched): `sandbox_runs` (the runs started), `sandbox_effects` (the providers' effect
/// journals), `sandbox_effect_keys` (the keys a deduplicating provider has seen, one row per
/// (namespace, provider, key): its primary key is the dedupe) and `sandbox_fault_windows`
/// (the fault windows opened, one row per (namespace, operation key, fault)) and
/// `sandbox_queue_holders` (the driver running on each sandbox queue). Because an
/// effect is the provider's own commit to these tables, deduplication and lookup by key hold
/// across worker processes and across SIGKILLs, and `idempo check` in another process reads
/// what the providers did. Two implementations, which the stores hand out as
/// LedgerStore::sandboxJournal(): the embedded SQLite file (sqlitesandboxjournal.h) and
/// PostgreSQL (postgressandboxjournal.h), both with bound parameters only. Safe to call from many
/// threads when the store is (each thread uses the store's connection for that thread). Every
/// method throws Error(Internal) or Error(LedgerUnavailable) on storage failure.
class SandboxJournal
{
public:
    virtual ~SandboxJournal() = default;

    /// The journal in the database of `store` (LedgerStore::sandboxJournal()), which must
    /// outlive it. Throws Error(InvalidArgument) for a store that has none.
    static std::unique_ptr<SandboxJournal> open(LedgerStore &store);

    /// Creates the tables if missing; safe while other processes do the same.
    virtual void createTables() = 0;
    /// Records runs; one recorded already is left as it is, so that a batch whose commit went
    /// unanswered (a lost connection) may be recorded again.
    virtual void addRuns(const std::vector<RunRecord> &runs) = 0;
    /// Withdraws runs of `ns` that a cancelled sandbox run stopped before they settled: the
    /// invariant checker then no longer expects them to finish (their operations and effects
    /// stay, and are checked like any other).
    virtual void removeRuns(const std::string &ns, const std::vector<std::string> &runIds) = 0;
    /// Appends effects performed in memory (the thread mode's providers), ids as given.
    virtual void addEffects(const std::vector<Effect> &effects) = 0;

    /// Performs `proposed` as the provider's own commit: with `dedupe` and a received key the
    /// provider has seen, answers with the original effect and writes nothing; otherwise
    /// journals a new effect whose id is "<provider>/<operation key>/<n>", n counting the
    /// operation's effects from 1.
    virtual Performed perform(const Effect &proposed, bool dedupe) = 0;
    /// The first effect `provider` journaled for `receivedKey` in `ns`, if any.
    virtual std::optional<Effect> lookup(const std::string &ns, const std::string &provider,
                                         const std::string &receivedKey) = 0;
    /// Records that the window `fault` opened for the operation; false when it had opened there
    /// before (in this process or another), so that each window opens at most once per operation.
    virtual bool openWindow(const std::string &ns, const std::string &operationKey,
                            std::string_view fault) = 0;

    /// Who holds `queue` (std::nullopt: nobody), and the ledger's clock now, in milliseconds.
    virtual std::pair<std::optional<QueueHolder>, std::int64_t>
    queueHolder(const std::string &queue) = 0;
    /// Makes `holder` the holder of its queue with a lease of `leaseMs` on the ledger's clock,
    /// if the queue is still held by `previousInstance` (std::nullopt: by nobody); false when
    /// another driver got there first.
    virtual bool takeQueue(const QueueHolder &holder,
                           const std::optional<std::string> &previousInstance,
                           std::int64_t leaseMs) = 0;
    /// Extends the lease of `instance` on `queue` to `leaseMs` from now; false when the queue
    /// is no longer held by it.
    virtual bool renewQueue(const std::string &queue, const std::string &instance,
                            std::int64_t leaseMs) = 0;
    /// Forgets the holder of `queue` if it is `instance`.
    virtual void releaseQueue(const std::string &queue, const std::string &instance) = 0;

    /// True when `ns` already holds sandbox runs (tables absent count as empty).
    virtual bool hasRuns(const std::string &ns) = 0;
    virtual std::vector<RunRecord> runs(const std::string &ns) = 0;
    /// The run `runId` of `ns`, if the sandbox started it (tables absent count as empty).
    virtual std::optional<RunRecord> findRun(const std::string &ns, const std::string &runId) = 0;
    /// Every effect of `ns`, ordered by operation key and effect id.
    virtual std::vector<Effect> effects(const std::string &ns) = 0;
    /// The history of every operation of `ns` in the engine's tables, per operation oldest first.
    virtual std::vector<HistoryRow> history(const std::string &ns) = 0;
};

} // namespace idempo::sandbox
