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
/// Local date and time of an epoch-milliseconds instant, seconds precision.
QString timestampText(std::int64_t ms);
/// Pretty-printed JSON (two-space indent; unprintable characters as \u escapes), or the text
/// itself (as displayText) when it does not parse.
QString prettyJson(const std::string &json);
/// A colour per state, readable on light and dark palettes alike (mid saturation and value).
QColor stateColor(OperationState state);
/// True for the states a person or the reconciler must settle.
bool needsAttention(OperationState state);

} // namespace idempo
