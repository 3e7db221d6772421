// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>

namespace idempo {

/// The longest duration anything is scheduled for (a retention, a retry delay, a message's
/// delay or visibility timeout): ten years. Far past any real one, and far enough below the
/// clock's limits that now + the duration never overflows, on either store.
inline constexpr std::int64_t MaxDurationMs = 3650LL * 24 * 3600 * 1000;

/// Wall-clock source for the embedded store, in milliseconds since the Unix epoch (UTC).
/// PostgreSQL never uses it: there the server's clock_timestamp() decides.
class Clock
{
public:
    virtual ~Clock() = default;
    virtual std::int64_t nowMs() const = 0;
};

/// The system's wall clock.
class SystemClock final : public Clock
{
public:
    std::int64_t nowMs() const override;
};

/// A clock tests set, advance and skew; safe to read from many threads.
class ManualClock final : public Clock
{
public:
    explicit ManualClock(std::int64_t startMs = 1'700'000'000'000) : m_nowMs(startMs) {}
    std::int64_t nowMs() const override { return m_nowMs.load(); }
    void advanceMs(std::int64_t deltaMs) { m_nowMs += deltaMs; }
    void setMs(std::int64_t ms) { m_nowMs = ms; }

private:
    std::atomic<std::int64_t> m_nowMs;
};

} // namespace idempo
