// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sandboxjournal.h"

namespace idempo {
class MessageQueue;
}

namespace idempo::sandbox {

/// A sandbox driver's hold on the sandbox queue while its run goes on, recorded beside the
/// ledger (SandboxJournal::takeQueue) with a lease on the ledger's clock that the driver renews,
/// so that a run killed without a word (SIGKILL, a lost machine) does not block every later run.
///
/// A holder is known dead when its process is of this machine (same boot and PID namespace)
/// and is gone, or else when its lease has lapsed on the ledger's clock. The next run then takes
/// the queue over and empties it, saying so; the dead run's namespace stays as it was left, for
/// `idempo check`. A live holder is refused with its name, and, when it runs elsewhere, with the
/// `idempo sandbox reset` command that clears the queue of a run known to be gone.
class DriverLease final
{
public:
    /// How long a hold lasts without renewal, and how often the driver renews it.
    static constexpr std::int64_t LeaseMs = 10'000;
    static constexpr std::int64_t RenewEveryMs = 1'000;

    /// Takes `queueName` of `queue` (whose tables `journal` lives beside) for a run in `ns`;
    /// `ledger` is the ledger's describe(), for the reset command. `say` gets one line for
    /// people when a dead run's queue is taken over. Throws Error(LedgerBusy) naming the live
    /// holder; Error(InvalidArgument) naming the reset command when the queue holds messages no
    /// run holds (an older idempo's, or sent by hand); what the ledger throws.
    DriverLease(SandboxJournal &journal, MessageQueue &queue, std::string queueName, std::string ns,
                const std::string &ledger, const std::function<void(const std::string &)> &say);
    /// Releases the hold when the queue is empty; with messages left (a run that timed out or
    /// failed) the hold stays, and the next run finds it dead once this process is gone.
    ~DriverLease();
    DriverLease(const DriverLease &) = delete;
    DriverLease &operator=(const DriverLease &) = delete;

    /// Renews the lease once RenewEveryMs have passed since the last renewal. Throws
    /// Error(Refused) when another driver took the queue over (this one looked dead: its
    /// lease lapsed while it could not reach the ledger), and what the ledger throws.
    void renew();

    /// `idempo sandbox reset`: takes `queueName` over from whoever holds it, empties it and lets
    /// it go. Returns {"queue", "messages_removed", "previous_holder" ({"namespace", "driver",
    /// "lease_expires_at_ms"} or null)}. Throws Error(Refused) when the holder is a process of
    /// this machine that still runs.
    static nlohmann::json reset(SandboxJournal &journal, MessageQueue &queue,
                                const std::string &queueName);

    /// This process, as recorded in QueueHolder::instance: boot id, PID namespace, pid and start
    /// time, so that a reused pid is not mistaken for the driver.
    static std::string thisProcess();
    /// Whether the process `instance` names still runs: std::nullopt when it is not of this
    /// machine and PID namespace (then only its lease tells).
    static std::optional<bool> isAlive(const std::string &instance);

private:
    SandboxJournal &m_journal;
    MessageQueue &m_queue;
    QueueHolder m_mine;
    std::chrono::steady_clock::time_point m_renewedAt;
};

/// Deletes every message on `queueName`; returns how many. Throws what MessageQueue throws.
std::int64_t emptySandboxQueue(MessageQueue &queue, const std::string &queueName);

} // namespace idempo::sandbox
