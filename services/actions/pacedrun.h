// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace idempo {

/// The velocity bound and the stop of a guarded action over a frozen set (DLQ replay, bulk
/// actions): at most `ratePerSecond` items a second, the cancel flag checked between items, and
/// progress after each. Use: `while (run.next()) { act; run.done(); }`.
class PacedRun final
{
public:
    struct Hooks
    {
        /// Waits between items to keep the rate (a fake in tests); default: sleeps.
        std::function<void(std::chrono::milliseconds)> sleep;
        std::function<void(std::int64_t done, std::int64_t total)> progress;
        /// Asked before each item; true stops the run there.
        std::function<bool()> cancelled;
    };

    /// Why `ratePerSecond` is not a rate in (0, `ceiling`], naming the unit (`unit` per second);
    /// unset when it is one.
    static std::optional<std::string> rateProblem(double ratePerSecond, double ceiling,
                                                  const std::string &unit);

    PacedRun(double ratePerSecond, std::int64_t total, Hooks hooks);

    /// Before the next item: waits out the gap after the previous one, then answers false when
    /// the run was cancelled (it stays cancelled), else true.
    bool next();
    /// After an item: counts it and reports progress.
    void done();

    bool cancelled() const { return m_cancelled; }
    std::int64_t count() const { return m_done; }

private:
    std::chrono::milliseconds m_gap;
    std::int64_t m_total;
    Hooks m_hooks;
    std::int64_t m_done = 0;
    bool m_cancelled = false;
};

} // namespace idempo
