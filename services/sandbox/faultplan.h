// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace idempo::sandbox {

/// The failure windows the sandbox can open (design.md "Sandbox"). The names are the ones
/// `idempo sandbox run --faults` takes.
enum class Fault
{
    CrashBeforeDispatch, ///< the worker dies after its claim, before calling the provider
    CrashDuringCall,     ///< the worker dies while the provider call is in flight (effect or not)
    CrashAfterEffect,    ///< the provider committed; the worker dies before recording it
    CrashAfterRecord,    ///< the ledger has the result; the worker dies before acking the message
    DuplicateDelivery,   ///< the queue delivers a step's message twice
    ReorderedDelivery,   ///< a message is held back so that later ones overtake it
    DelayedConfirmation, ///< the provider accepts and confirms only later
    PausedWorker,        ///< the worker stalls past its lease, then resumes
    TwoPlanners,         ///< a second planner starts the same run while the first is in flight
    ClockSkew,           ///< every worker's own clock is off by up to ±5 min
    Provider5xx,         ///< the provider answers 503 (no effect)
    Provider429,         ///< the provider answers 429 with Retry-After (no effect)
    ProviderTimeout,     ///< the provider commits, the answer is lost
    ProviderRejection,   ///< the provider refuses (validation, auth or policy; no effect)
    ProviderOutage, ///< per run: the provider degrades to 503 on every call and the planner keeps
                    ///< re-planning each step that gives up (not part of `all`)
};
inline constexpr int FaultCount = 15;

/// A seeded, reproducible fault plan: which windows are open and how often each fires.
/// Every decision is a pure function of (seed, run id, step id, occasion), never of thread
/// timing, so the same seed opens the same windows at the same places on any machine.
class FaultPlan final
{
public:
    explicit FaultPlan(std::uint64_t seed = 1);

    /// Parses `--faults`: "none", "all", or a comma-separated list of fault names, each
    /// optionally with a rate in [0, 1] ("provider-timeout=1"). Throws Error(InvalidArgument)
    /// naming an unknown fault or a bad rate.
    static FaultPlan parse(std::string_view list, std::uint64_t seed);

    static std::string_view name(Fault fault);
    static std::optional<Fault> parseName(std::string_view name);

    /// The rate `--faults all` uses, per occasion (see docs/sandbox.md).
    static double defaultRate(Fault fault);

    void enable(Fault fault, double rate);
    double rate(Fault fault) const { return m_rates[static_cast<std::size_t>(fault)]; }
    bool enabled(Fault fault) const { return rate(fault) > 0.0; }
    std::uint64_t seed() const { return m_seed; }

    /// A uniform number in [0, 1) for (run, what, occasion), derived from the seed alone.
    double uniform(std::string_view runId, std::string_view what, std::int64_t occasion) const;

    /// True when `fault` fires at this occasion of (run, step): a draw below its rate.
    bool draws(Fault fault, std::string_view runId, std::string_view stepId,
               std::int64_t occasion) const;

    /// The enabled faults with their rates, by name.
    nlohmann::json toJson() const;
    /// The `--faults` list parse() reads back into this plan ("none" when nothing is enabled).
    std::string toList() const;

private:
    std::uint64_t m_seed;
    std::array<double, FaultCount> m_rates{};
};

} // namespace idempo::sandbox
