// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actionoutcome.h"
#include "guardedaction.h"
#include "ledgerstore.h"
#include "messagequeue.h"

namespace idempo {

/// What replaying one dead letter would do, judged against the ledger.
enum class ReplayClass
{
    AlreadyCompleted,   ///< its operation is final: the consumer's claim answers it as a replay
                        ///< (suppressed)
    WillExecute,        ///< its operation is not final, or unknown and young: it will run
    PayloadMismatch,    ///< its payload's fingerprint differs from the operation's: not replayed
    ExpiredByRetention, ///< older than the retention, its record gone or expired: the ledger can no
                        ///< longer suppress a duplicate, so it is not replayed
    Unreadable,         ///< not a queue envelope (queueenvelope.h): not replayed
    AmbiguousNamespace, ///< per-message namespaces: its key is recorded in several namespaces, so
                        ///< the ledger cannot tell whose it is: not replayed
};

std::string_view replayClassName(ReplayClass c);

/// One message of a replay set, classified.
struct ReplayItem
{
    std::int64_t msgId = 0; ///< in the dead-letter queue
    std::string key;        ///< the envelope's idempotency key (empty when unreadable)
    std::string ns;         ///< the namespace it was judged in (empty when unreadable)
    ReplayClass replayClass = ReplayClass::WillExecute;
    std::string detail;
    int generation = 0; ///< how many replays the message went through already
};

/// DLQ replay: puts dead letters back on their queue after a dry run, keeping each message's
/// idempotency key, so that the ledger suppresses the ones already done.
///
/// The set is explicit and frozen: the ids given, or a filter resolved to ids once
/// (resolveFilter()). dryRun() classifies each message. An id that is no longer a dead letter
/// because a replay of this queue took it (its `dlq_replay` audit record froze it) is left out,
/// so a cancelled replay can be run again; any other id that is not a dead letter of the queue
/// is named and refuses the whole replay (validate() and execute()). execute() needs the
/// typed confirmation of the count it will requeue (AlreadyCompleted + WillExecute) and a
/// reason; when that count is 0 it requeues and audits nothing. Otherwise it writes a
/// `dlq_replay` audit record with the frozen ids, then requeues them in id order at most
/// `ratePerSecond` messages per second, reporting progress and stopping when `cancelled`
/// answers true, and closes with a `dlq_replay_finished` record with the counts. Each requeued
/// message carries the header "replay": {"replay_id", "of_msg_id", "generation"}; should it
/// fail again, its new dead letter keeps that header, has a new msg_id outside the frozen set,
/// and is never picked up by the same replay.
///
/// A dead letter is in at most one open replay: the store refuses the `dlq_replay` record with
/// Error(InProgress), naming the replay, who runs it and since when, while another live replay
/// of the queue holds one of the ids or has this replay id; nothing is written then. A replay is
/// live while it requeues: each requeue stamps it on the ledger's clock, and one that requeued
/// nothing for idleLimitMs() of its rate is abandoned, taken over by the next replay (whose
/// `dlq_replay` record names it under "took_over") and fenced off: every requeue and the finish
/// name their run by the seq of its `dlq_replay` record (the header's and the finish record's
/// "begun_seq"), and a run that was taken over is refused (Error(Refused)).
class DlqReplayCommand final : public GuardedAction
{
public:
    /// The fastest replay rate, messages per second.
    static constexpr double MaxRatePerSecond = 10'000;
    /// The bounds of idleLimitMs(): five minutes, seven days.
    static constexpr std::int64_t MinIdleLimitMs = 300'000;
    static constexpr std::int64_t MaxIdleLimitMs = 604'800'000;

    /// How long a replay at `ratePerSecond` may requeue nothing before it counts as abandoned:
    /// four gaps between messages, within [MinIdleLimitMs, MaxIdleLimitMs].
    static std::int64_t idleLimitMs(double ratePerSecond);

    struct Request
    {
        /// The namespace of the operations the envelopes name. Empty: each message's own, the one
        /// namespace that records its key (`default` when none does; AmbiguousNamespace when
        /// several do), as a console replaying a queue that several namespaces feed needs.
        std::string ns = "default";
        std::string queue;             ///< the source queue; its dead letters are `<queue>_dlq`
        std::vector<std::int64_t> ids; ///< the frozen set: msg_ids in the dead-letter queue
        std::string reason;
        std::optional<std::int64_t>
            confirmCount;          ///< the count the operator typed; execute() requires it
        double ratePerSecond = 50; ///< at most this many messages per second (> 0)
        std::string replayId;      ///< empty: derived from the queue, the set and the operator
    };
    struct Options
    {
        std::int64_t retentionMs = 24 * 3600'000; ///< the ledger's retention, milliseconds
        /// Waits between messages to keep the rate (a fake in tests).
        std::function<void(std::chrono::milliseconds)> sleep;
        std::function<void(std::int64_t done, std::int64_t total)> progress;
        std::function<bool()> cancelled;
    };

    DlqReplayCommand(LedgerStore &store, MessageQueue &queue, ActorIdentity actor, Request request,
                     Options options);

    /// The msg_ids of `queue`'s dead letters that match `filter`, oldest first: "all",
    /// "error_class=CLASS" (the last error before dead-lettering), "key_prefix=PREFIX" (the
    /// envelope's key). Throws Error(InvalidArgument) for another filter.
    static std::vector<std::int64_t>
    resolveFilter(MessageQueue &queue, const std::string &queueName, const std::string &filter);

    /// Classifies every message of the set, in id order; ids no longer in the dead-letter queue
    /// are left out (and sorted into unknown and replayed before). Writes nothing.
    std::vector<ReplayItem> dryRun();

    std::vector<std::string> validate() override;
    /// details: {"replay_id", "queue", "set", "count" (to requeue), "unknown_ids",
    /// "replayed_before", "by_class": {class: n}, "items": [...]}.
    ActionPreview describe() override;
    /// Requeues the set as described above, between its two audit records (none when
    /// nothing is to be requeued). Throws Error(Refused) without the matching confirmation or a
    /// reason, or when an id of the set is not a dead letter of the queue.
    ReplayOutcome execute();

    const std::string &replayId() const { return m_request.replayId; }

private:
    /// Which of `ids` a `dlq_replay` of this queue froze before (its audit records).
    std::vector<std::int64_t> frozenBefore(const std::set<std::int64_t> &ids);
    std::string unknownIdsProblem(const std::vector<std::int64_t> &unknown) const;
    ReplayItem classify(const DeadLetter &letter, std::int64_t nowMs);
    /// The namespaces that record `key`, in id order (at most a few: keys are per namespace).
    std::vector<std::string> namespacesOf(const std::string &key);
    std::vector<DeadLetter> frozenLetters();

    LedgerStore &m_store;
    MessageQueue &m_queue;
    ActorIdentity m_actor;
    Request m_request;
    Options m_options;
    std::vector<ReplayItem> m_items;
    std::vector<std::int64_t> m_unknown; ///< ids of the set that name no dead letter of the queue
    std::vector<std::int64_t>
        m_replayedBefore; ///< ids of the set an earlier replay of the queue took
    bool m_classified = false;
};

} // namespace idempo
