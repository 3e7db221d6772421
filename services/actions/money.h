// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "amount.h"
#include "operation.h"

namespace idempo {

/// What an operation moves, for approval thresholds and the text of a decision: the value its
/// creating claim declared (Operation::value), else what its payload says: `/amount` (a number
/// or decimal string in major units, e.g. 1250.00) in `/currency`, for operations recorded
/// without a declared value. Unset when neither gives a usable amount.
std::optional<Amount> operationValue(const Operation &op);

/// Parses a non-negative decimal amount in major units without currency ("1250", "1250.5",
/// "1,250.00") into
/// minor units of `currency` (currencyExponent()). Unset for text that is not such an amount,
/// or has more fraction digits than the currency.
std::optional<std::int64_t> parseMajorAmount(const std::string &text, const std::string &currency);

} // namespace idempo
