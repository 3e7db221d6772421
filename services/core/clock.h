// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>

namespace idempo {

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
