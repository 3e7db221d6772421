// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "faultplan.h"
#include "reconnectbackoff.h"
#include "sandboxcontext.h"

namespace idempo {
class Error;
class LedgerStore;
class MessageQueue;
} // namespace idempo

namespace idempo::sandbox {

/// What one `idempo worker` process does.
struct WorkerOptions
{
    std::string queue = SandboxContext::DefaultQueueName;
    std::string ns = "sandbox";
    std::string owner;  ///< lease owner; must not be empty
    int index = 0;      ///< the worker's number: picks its clock skew
    FaultPlan faults;   ///< the windows this worker opens (crash points announce and block)
    bool naive = false; ///< the consumer without an idempotency layer
    std::int64_t maxMessages = 0; ///< stop after handling this many deliveries; 0 = no limit
    std::int64_t idleExitMs = 0;  ///< stop after this long without a visible message; 0 = never
    std::int64_t pollMs = 20;     ///< wait between reads of an empty queue
    SandboxTimings timings = SandboxTimings::realTime();
    ReconnectPolicy reconnect; ///< how long a lost ledger is waited for
};

/// A long-running consumer of sandbox envelopes in its own process, on the real clock, over any
/// ledger and its queue (both stores). It reads one message at a time, applies the delivery
/// faults, and hands it to the same EngineConsumer (or NaiveConsumer) the thread mode uses:
/// claim, act only on `claimed`, call the provider with key and fencing token, record the
/// outcome and send the next step's message in one outbox write, ack once the ledger holds it.
/// Effects are the providers' commits to the ledger's sandbox tables (SandboxJournal).
///
/// Its stdout is a stream of JSON lines (`emit`), each {"event", "owner", "pid", "handled",
/// "counters" (Counters::toJson()), "provider_dedupe", "engine_ns", "queue_ns", "busy_ns",
/// "stalled_ns"}, cumulative since the process started: busy is the time spent on delivered
/// messages (the delivery in hand included), engine and queue the parts of it inside engine and
/// queue calls, stalled the paused-worker stalls within it.
/// - "start": the worker is ready (and its stop request handling in place, when the caller
///   installed it before run());
/// - "crash" (with "fault" and "operation"): a crash window opened; the worker then blocks
///   until it is killed (the sandbox driver sends SIGKILL). A stop request while blocked ends
///   the process at once with status 137, as abruptly as a kill.
/// - "exit": the worker stopped cleanly (stop request, --max-messages or --idle-exit-ms).
/// - "ledger_lost" (with "ledger", "error" and "reconnect_deadline_ms") and "ledger_back" (with
///   "after_ms"): a call found the ledger unavailable or busy, and the worker waits for it
///   (WorkerOptions::reconnect); the same news goes to stderr as one line each.
///
/// When the ledger is lost mid-delivery the delivery is abandoned, never repeated statement by
/// statement, because a statement whose connection broke may have committed. Whatever did
/// commit is safe to meet again: the message comes back after its visibility timeout; the
/// claim is idempotent by key (a live lease of this worker answers in_progress, a lapsed one
/// is taken over or, on a protected write, sent to reconciliation); a committed provider
/// effect is found by the reconciler's lookup or deduplicated by key; a committed completion
/// answers the next claim with replayed, which acks the message; an ack or a visibility change
/// that did not commit only brings the message back once more.
class SandboxWorker final
{
public:
    /// Throws Error(InvalidArgument) for an empty owner, Error(NotFound) naming the queue when
    /// `options.queue` does not exist, and what the store throws when the ledger is unreachable.
    SandboxWorker(std::shared_ptr<LedgerStore> store, std::shared_ptr<MessageQueue> queue,
                  WorkerOptions options, std::function<void(const std::string &line)> emit);
    ~SandboxWorker();

    /// Works until `stop` turns true (checked between messages, while polling and while waiting
    /// for a lost ledger), or a limit of the options is reached; returns the "exit" line's
    /// object after emitting it. Waits out a lost or busy ledger; throws
    /// Error(LedgerUnavailable) naming it (gaveUpOnLedger()) once the reconnect deadline has
    /// passed, Error(Internal) on any other storage failure.
    nlohmann::json run(const std::atomic<bool> &stop);

private:
    nlohmann::json status(const char *event) const;
    /// Reads and handles messages until `stop` or a limit of the options; throws what the
    /// ledger throws.
    void consume(const std::atomic<bool> &stop);
    /// Waits for the ledger after `cause`; false when `stop` ended the wait.
    bool waitForLedger(const Error &cause, const std::atomic<bool> &stop);

    WorkerOptions m_options;
    std::function<void(const std::string &)> m_emit;
    std::unique_ptr<SandboxJournal> m_journal;
    std::unique_ptr<SandboxContext> m_ctx;
    std::int64_t m_handled = 0;
    std::chrono::steady_clock::time_point m_busySince{}; ///< start of the delivery in hand
    bool m_busy = false;
    const std::atomic<bool> *m_stop = nullptr;
};

} // namespace idempo::sandbox
