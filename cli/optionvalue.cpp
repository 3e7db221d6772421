// SPDX-License-Identifier: Apache-2.0
#include "optionvalue.h"

#include <charconv>
#include <cmath>

#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

/// The shortest decimal text that reads back as `v` ("0.001", "86400", "1000000000").
std::string shortest(double v)
{
    char buffer[400];
    const auto [end, ec] =
        std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed);
    return ec == std::errc() ? std::string(buffer, end) : std::to_string(v);
}

} // namespace

std::string quotedValue(std::string_view text)
{
    return "'" + escapedText(text) + "'";
}

std::int64_t parseWholeNumber(std::string_view what, std::string_view text, std::int64_t low,
                              std::int64_t high)
{
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc() && end == text.data() + text.size() && v >= low && v <= high)
        return v;
    const std::string range = high == MaxWholeNumber
                                  ? "of at least " + std::to_string(low)
                                  : "from " + std::to_string(low) + " to " + std::to_string(high);
    throw UsageError{std::string(what) + " must be a whole number " + range + ", not " +
                     quotedValue(text)};
}

double parseNumber(std::string_view what, std::string_view text, double low, double high,
                   std::string_view unit)
{
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    // Written so that NaN fails too: every comparison with it is false.
    if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(v) && v >= low &&
        v <= high)
        return v;
    throw UsageError{std::string(what) + " must be a number of " + std::string(unit) + " from " +
                     shortest(low) + " to " + shortest(high) + ", not " + quotedValue(text)};
}

std::int64_t parseSeconds(std::string_view what, std::string_view text, double lowSeconds,
                          double highSeconds)
{
    return std::llround(parseNumber(what, text, lowSeconds, highSeconds, "seconds") * 1000.0);
}

} // namespace idempo::cli
