// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "operation.h"

#include <cstdint>
#include <optional>
#include <string>

namespace idempo {

/// An amount in minor units (cents) of an ISO 4217 currency.
struct Money
{
    std::int64_t minor = 0;
    std::string currency; ///< e.g. "EUR"; empty when the payload names none
};

/// Decimal places of `currency`'s minor unit (ISO 4217): 0 for JPY, KRW, …, 3 for BHD, KWD, …,
/// 2 otherwise.
int currencyExponent(const std::string &currency);

/// The operation's value, read from its payload: `/amount` (a number or decimal string in major
/// units, e.g. 1250.00) and `/currency`. Unset when the payload has no usable amount.
std::optional<Money> operationValue(const Operation &op);

/// Parses a decimal amount in major units ("1250", "1250.5", "1,250.00") into minor units of
/// `currency`. Unset for text that is not such an amount, or has more decimals than the currency.
std::optional<std::int64_t> parseMajorAmount(const std::string &text, const std::string &currency);

/// "1,250.00 EUR" (grouped thousands, the currency's decimals; no currency when empty).
std::string formatMoney(const Money &money);

} // namespace idempo
