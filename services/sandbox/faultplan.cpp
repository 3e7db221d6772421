// SPDX-License-Identifier: Apache-2.0
#include "faultplan.h"

#include <charconv>

#include "error.h"

namespace idempo::sandbox {
namespace {

constexpr std::array<std::string_view, FaultCount> kNames{
    "crash-before-dispatch", "crash-during-call",  "crash-after-effect",   "crash-after-record",
    "duplicate-delivery",    "reordered-delivery", "delayed-confirmation", "paused-worker",
    "two-planners",          "clock-skew",         "provider-5xx",         "provider-429",
    "provider-timeout",      "provider-rejection", "provider-outage",
};

/// Rates of `--faults all`, per occasion: per delivery for worker faults, per provider call
/// for provider faults, per run for two-planners; clock skew is always on when enabled. An
/// outage is a scenario of its own, named alone (`--faults provider-outage=1`).
constexpr std::array<double, FaultCount> kDefaultRates{
    0.02, 0.02, 0.02, 0.02, 0.05, 0.03, 0.02, 0.01, 0.02, 1.0, 0.03, 0.03, 0.02, 0.01, 0.0,
};

std::uint64_t fnv1a(std::string_view text, std::uint64_t hash)
{
    for (const char c : text) {
        hash ^= static_cast<unsigned char>(c);
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

/// splitmix64's finaliser: spreads nearby inputs over the whole range.
std::uint64_t mix(std::uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

} // namespace

FaultPlan::FaultPlan(std::uint64_t seed) : m_seed(seed) {}

std::string_view FaultPlan::name(Fault fault)
{
    return kNames[static_cast<std::size_t>(fault)];
}

std::optional<Fault> FaultPlan::parseName(std::string_view name)
{
    for (std::size_t i = 0; i < kNames.size(); ++i)
        if (kNames[i] == name)
            return static_cast<Fault>(i);
    return std::nullopt;
}

double FaultPlan::defaultRate(Fault fault)
{
    return kDefaultRates[static_cast<std::size_t>(fault)];
}

void FaultPlan::enable(Fault fault, double rate)
{
    if (!(rate >= 0.0 && rate <= 1.0))
        throw Error(ErrorCode::InvalidArgument, "a fault rate must be within [0, 1]");
    m_rates[static_cast<std::size_t>(fault)] = rate;
}

FaultPlan FaultPlan::parse(std::string_view list, std::uint64_t seed)
{
    FaultPlan plan(seed);
    if (list == "none" || list.empty())
        return plan;
    if (list == "all") {
        for (int i = 0; i < FaultCount; ++i)
            plan.enable(static_cast<Fault>(i), kDefaultRates[static_cast<std::size_t>(i)]);
        return plan;
    }
    while (!list.empty()) {
        const std::size_t comma = list.find(',');
        const std::string_view item = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        const std::size_t equals = item.find('=');
        const std::string_view faultName = item.substr(0, equals);
        const auto fault = parseName(faultName);
        if (!fault) {
            std::string known;
            for (const auto n : kNames)
                known += (known.empty() ? "" : ", ") + std::string(n);
            throw Error(ErrorCode::InvalidArgument, "unknown fault '" + std::string(faultName) +
                                                        "'; known: all, none, " + known);
        }
        double rate = defaultRate(*fault);
        if (equals != std::string_view::npos) {
            const std::string_view text = item.substr(equals + 1);
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rate);
            if (ec != std::errc() || end != text.data() + text.size())
                throw Error(ErrorCode::InvalidArgument,
                            "fault rate '" + std::string(text) + "' is not a number");
        }
        plan.enable(*fault, rate);
    }
    return plan;
}

double FaultPlan::uniform(std::string_view runId, std::string_view what,
                          std::int64_t occasion) const
{
    std::uint64_t h = fnv1a(runId, 0xcbf29ce484222325ULL ^ mix(m_seed));
    h = fnv1a(what, mix(h));
    h = mix(h ^ mix(static_cast<std::uint64_t>(occasion)));
    return static_cast<double>(h >> 11) * 0x1.0p-53;
}

bool FaultPlan::draws(Fault fault, std::string_view runId, std::string_view stepId,
                      std::int64_t occasion) const
{
    const double r = rate(fault);
    if (r <= 0.0)
        return false;
    return uniform(runId, std::string(stepId) + "#" + std::string(name(fault)), occasion) < r;
}

nlohmann::json FaultPlan::toJson() const
{
    nlohmann::json rates = nlohmann::json::object();
    for (int i = 0; i < FaultCount; ++i)
        if (enabled(static_cast<Fault>(i)))
            rates[std::string(kNames[static_cast<std::size_t>(i)])] =
                m_rates[static_cast<std::size_t>(i)];
    return rates;
}

std::string FaultPlan::toList() const
{
    std::string list;
    for (int i = 0; i < FaultCount; ++i) {
        if (!enabled(static_cast<Fault>(i)))
            continue;
        char rate[32];
        const auto [end, ec] =
            std::to_chars(rate, rate + sizeof rate, m_rates[static_cast<std::size_t>(i)]);
        list += (list.empty() ? "" : ",") + std::string(kNames[static_cast<std::size_t>(i)]) + "=" +
                std::string(rate, ec == std::errc() ? end : rate);
    }
    return list.empty() ? std::string("none") : list;
}

} // namespace idempo::sandbox
