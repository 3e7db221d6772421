// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idempo {

/// A monetary value in the minor units of an ISO 4217 currency (cents for EUR, yen for JPY,
/// fils for KWD): what an operation moves, for approval thresholds and for ordering reviews.
struct Amount
{
    std::int64_t minorUnits = 0;
    std::string currency; ///< ISO 4217 alphabetic code, three upper-case ASCII letters

    bool operator==(const Amount &) const = default;
};

/// Digits after the decimal point in `currency`'s minor unit (ISO 4217 exponent): 0 for JPY,
/// KRW and the like, 3 for BHD, JOD, KWD, OMR, TND and the like, otherwise 2.
int currencyExponent(std::string_view currency);

/// Parses "1250.00 EUR" or "1250 EUR" (amount, one space, currency): a non-negative decimal
/// with at most the currency's exponent of fraction digits, up to 10^15 major units. Throws
/// Error(InvalidArgument) naming what is wrong (no grouping separators, signs or exponents).
Amount parseAmount(std::string_view text);

/// Checks an amount given in minor units: non-negative, at most 10^15 major units, a
/// three-letter upper-case currency. Throws Error(InvalidArgument).
void validateAmount(const Amount &amount);

/// "1,250.00 EUR": grouped by thousands, with the currency's exponent of fraction digits.
std::string formatAmount(const Amount &amount);

/// The amount as it is written for parseAmount() and in JSON: "1250.00 EUR".
std::string amountText(const Amount &amount);

/// What one minor unit of `currency` is worth in minor units of a reference currency, for
/// ranking values of different currencies in one order (ReferenceRates::factors()).
struct ValueFactor
{
    std::string currency;
    double factor = 1.0;

    bool operator==(const ValueFactor &) const = default;
};

/// Where a value stands in the stores' value orders. Without factors: its minor units. With
/// them: trunc(min(minor units × its currency's factor, PricedRankCeiling)), an integer in the
/// reference currency's minor units, and UnpricedRank for a currency without a factor, above
/// every priced value (its worth is unknown, and it always takes two approvers). NoValueRank
/// for no value. The stores compute the same in SQL from the same bound doubles: one IEEE
/// multiplication and a truncation, so a keyset cursor taken here continues there exactly.
std::int64_t valueRank(const std::optional<Amount> &value, const std::vector<ValueFactor> &factors);
inline constexpr std::int64_t NoValueRank = -1;
inline constexpr double PricedRankCeiling = 9.0e18;
inline constexpr std::int64_t UnpricedRank = 9'100'000'000'000'000'000;

} // namespace idempo
