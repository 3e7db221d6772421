// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace idempo {

/// How a long-running ledger client (a worker, the sandbox driver) waits out a lost ledger:
/// the first retry after `firstDelayMs`, each next one twice as late up to `maxDelayMs`, until
/// `deadlineMs` have passed since the ledger was lost; then it gives up (exit 69).
struct ReconnectPolicy
{
    std::int64_t firstDelayMs = 100;
    std::int64_t maxDelayMs = 2'000;
    std::int64_t deadlineMs = 60'000;
};

/// The backoff of one outage, on times the caller passes (steady milliseconds): it never
/// sleeps, so a worker's blocking wait and the driver's timer share it, and tests drive it.
class ReconnectBackoff final
{
public:
    explicit ReconnectBackoff(ReconnectPolicy policy = {});

    /// Records a failed call at `nowMs`; the first one starts the outage. Returns the delay
    /// until the next attempt, or std::nullopt once the deadline has passed.
    std::optional<std::int64_t> failed(std::int64_t nowMs);
    /// True during an outage once the next attempt is due.
    bool due(std::int64_t nowMs) const;
    /// True between the first failed() and recovered().
    bool lost() const { return m_lostAtMs.has_value(); }
    /// Ends the outage; returns how long it lasted, in milliseconds.
    std::int64_t recovered(std::int64_t nowMs);
    const ReconnectPolicy &policy() const { return m_policy; }

private:
    ReconnectPolicy m_policy;
    std::optional<std::int64_t> m_lostAtMs;
    std::int64_t m_nextAtMs = 0;
    std::int64_t m_delayMs = 0;
};

/// A steady clock in milliseconds, for ReconnectBackoff.
std::int64_t steadyNowMs();

/// The message of the Error(LedgerUnavailable) a client ends with when the deadline passed:
/// names the ledger (as describe() gives it, without a password), the deadline and the last reason.
std::string gaveUpOnLedger(const std::string &ledger, const ReconnectPolicy &policy,
                           const std::string &reason);

/// Calls `attempt` until it returns without an outage (isLedgerOutage()), sleeping between tries as
/// ReconnectBackoff says: `lost(reason)` is called at the first outage, `back(ms)` when an
/// attempt succeeds after one. Anything but an outage is rethrown at once. Returns false when
/// `stop` (checked every 20 ms while waiting) turned true; throws Error(LedgerUnavailable) with
/// gaveUpOnLedger() when the deadline passes.
bool retryThroughOutage(const ReconnectPolicy &policy, const std::string &ledger,
                        const std::function<void()> &attempt,
                        const std::function<void(const std::string &reason)> &lost,
                        const std::function<void(std::int64_t afterMs)> &back,
                        const std::atomic<bool> *stop = nullptr);

} // namespace idempo
