// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <QColor>
#include <QString>

#include "vocabulary.h"

namespace idempo {

/// Text shown for the engine's values: one place, so every view words them alike. Stored text
/// is shown with its unprintable characters escaped (textescape.h), like the CLI shows it.
QString displayText(const std::string &text);
QString stateText(OperationState state);
/// "4 s", "3 min 12 s", "2 h 05 min", "3 d 4 h".
QString durationText(std::int64_t ms);
/// Date, time (seconds precision) and zone of an epoch-milliseconds instant, in UTC or local time
/// as chosen (setTimesInUtc): "2026-12-01 15:40:09 UTC", "2026-12-01 16:40:09 CET".
QString timestampText(std::int64_t ms);
/// An ISO 8601 instant as the engine's JSON writes it ("2026-12-01T15:40:09.123Z"), shown like
/// timestampText(); the text itself when it does not parse.
QString isoTimestampText(const std::string &iso);
/// Whether times are shown in UTC (the default) or in local time; every view and dialog follows.
bool timesInUtc();
void setTimesInUtc(bool utc);
/// Who the operation is for, from its payload's `customer`, `customer_id`, `client` or
/// `client_id` member (the first that is a string or number); empty when none is.
QString customerText(const std::string &payload);
/// Pretty-printed JSON (two-space indent; unprintable characters as \u escapes), or the text
/// itself (as displayText) when it does not parse.
QString prettyJson(const std::string &json);
/// A colour per state, readable on light and dark palettes alike (mid saturation and value).
QColor stateColor(OperationState state);
/// True for the states a person or the reconciler must settle.
bool needsAttention(OperationState state);

} // namespace idempo
