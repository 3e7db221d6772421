// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace idempo::cli {

inline constexpr std::int64_t MaxWholeNumber = std::numeric_limits<std::int64_t>::max();

/// The one parser of the CLI's whole numbers (options, MSG_ID, each of --ids): decimal digits
/// with an optional '-', within [low, high]. Anything else (a fraction, a sign '+', spaces, a
/// value out of range or out of 64 bits) throws UsageError naming `what` (e.g. "--limit"), the
/// range and the text given.
std::int64_t parseWholeNumber(std::string_view what, std::string_view text, std::int64_t low,
                              std::int64_t high);

/// A finite decimal number (e.g. "2.5", "1e3") within [low, high]; NaN, infinities and
/// anything out of range throw UsageError naming `what`, the range in `unit` and the text.
double parseNumber(std::string_view what, std::string_view text, double low, double high,
                   std::string_view unit);

/// Seconds, possibly fractional, within [lowSeconds, highSeconds], as whole milliseconds
/// (rounded to the nearest). Refuses like parseNumber.
std::int64_t parseSeconds(std::string_view what, std::string_view text, double lowSeconds,
                          double highSeconds);

/// `text` as a refusal quotes it: in single quotes, unprintable characters escaped.
std::string quotedValue(std::string_view text);

} // namespace idempo::cli
