// SPDX-License-Identifier: Apache-2.0
#include "pacedrun.h"

#include <cmath>
#include <thread>

namespace idempo {

std::optional<std::string> PacedRun::rateProblem(double ratePerSecond, double ceiling,
                                                 const std::string &unit)
{
    if (std::isfinite(ratePerSecond) && ratePerSecond > 0 && ratePerSecond <= ceiling)
        return std::nullopt;
    char ceilingText[32];
    std::snprintf(ceilingText, sizeof ceilingText, "%g", ceiling);
    char given[32];
    std::snprintf(given, sizeof given, "%g", ratePerSecond);
    return "the rate must be more than 0 and at most " + std::string(ceilingText) + " " + unit +
           " per second, not " + given;
}

PacedRun::PacedRun(double ratePerSecond, std::int64_t total, Hooks hooks)
    : m_gap(static_cast<std::int64_t>(1000.0 / ratePerSecond)), m_total(total),
      m_hooks(std::move(hooks))
{
    if (!m_hooks.sleep)
        m_hooks.sleep = [](std::chrono::milliseconds ms) { std::this_thread::sleep_for(ms); };
}

bool PacedRun::next()
{
    if (m_cancelled)
        return false;
    if (m_done > 0)
        m_hooks.sleep(m_gap);
    // Asked after the wait too, so a stop pressed during it is honoured before the next item.
    m_cancelled = m_hooks.cancelled && m_hooks.cancelled();
    return !m_cancelled;
}

void PacedRun::done()
{
    ++m_done;
    if (m_hooks.progress)
        m_hooks.progress(m_done, m_total);
}

} // namespace idempo
