// SPDX-License-Identifier: Apache-2.0
#include "reconnectbackoff.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "error.h"

namespace idempo {

ReconnectBackoff::ReconnectBackoff(ReconnectPolicy policy) : m_policy(policy) {}

std::optional<std::int64_t> ReconnectBackoff::failed(std::int64_t nowMs)
{
    if (!m_lostAtMs) {
        m_lostAtMs = nowMs;
        m_delayMs = m_policy.firstDelayMs;
    } else {
        m_delayMs = std::min(m_delayMs * 2, m_policy.maxDelayMs);
    }
    const std::int64_t deadline = *m_lostAtMs + m_policy.deadlineMs;
    if (nowMs >= deadline)
        return std::nullopt;
    // The last attempt falls on the deadline itself, not a whole delay past it.
    const std::int64_t delay = std::min(m_delayMs, deadline - nowMs);
    m_nextAtMs = nowMs + delay;
    return delay;
}

bool ReconnectBackoff::due(std::int64_t nowMs) const
{
    return m_lostAtMs && nowMs >= m_nextAtMs;
}

std::int64_t ReconnectBackoff::recovered(std::int64_t nowMs)
{
    const std::int64_t lasted = m_lostAtMs ? nowMs - *m_lostAtMs : 0;
    m_lostAtMs.reset();
    return lasted;
}

std::int64_t steadyNowMs()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::string gaveUpOnLedger(const std::string &ledger, const ReconnectPolicy &policy,
                           const std::string &reason)
{
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", static_cast<double>(policy.deadlineMs) / 1000.0);
    return "gave up on the ledger " + ledger + " after " + seconds +
           " s without it (--reconnect-deadline): " + reason;
}

bool retryThroughOutage(const ReconnectPolicy &policy, const std::string &ledger,
                        const std::function<void()> &attempt,
                        const std::function<void(const std::string &reason)> &lost,
                        const std::function<void(std::int64_t afterMs)> &back,
                        const std::atomic<bool> *stop)
{
    ReconnectBackoff backoff(policy);
    for (;;) {
        std::string reason;
        try {
            attempt();
            if (backoff.lost())
                back(backoff.recovered(steadyNowMs()));
            return true;
        } catch (const Error &e) {
            if (!isLedgerOutage(e.code()))
                throw;
            reason = e.what();
        }
        if (!backoff.lost())
            lost(reason);
        const std::optional<std::int64_t> delay = backoff.failed(steadyNowMs());
        if (!delay)
            throw Error(ErrorCode::LedgerUnavailable, gaveUpOnLedger(ledger, policy, reason));
        const std::int64_t wakeAt = steadyNowMs() + *delay;
        while (steadyNowMs() < wakeAt) {
            if (stop && stop->load())
                return false;
            std::this_thread::sleep_for(
                std::chrono::milliseconds(std::min<std::int64_t>(20, wakeAt - steadyNowMs())));
        }
    }
}

} // namespace idempo
