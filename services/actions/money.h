// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "amount.h"
#include "operation.h"

namespace idempo {

/// What an operation moves, for approval thresholds and the text of a decision: the value its
/// creating claim declared (Operation::value), else what its payload says: `/amount` (a number
/// or decimal string in major units, e.g. 1250.00) in `/currency`, for operations recorded
/// without a declared value. Unset when neither gives a usable amount.
std::optional<Amount> operationValue(const Operation &op);

/// Whether `payload` has an /amount that gives no value (a sign, 10^14 and more, more decimals
/// than its currency has, not a number or decimal string): worth an unknown amount, so approving
/// it takes two approvers while four-eyes is on, as idempo.operation_value answers on
/// PostgreSQL (functions/operations/operation_value.sql).
bool payloadAmountUnreadable(const std::string &payload);

/// Parses a non-negative decimal amount in major units without currency ("1250", "1250.5",
/// "1,250.00") into
/// minor units of `currency` (currencyExponent()). Unset for text that is not such an amount,
/// or has more fraction digits than the currency.
std::optional<std::int64_t> parseMajorAmount(const std::string &text, const std::string &currency);

/// What is wrong with `text` as the four-eyes threshold (a non-negative amount in major units
/// such as 1000.00, at most 2 decimals and 15 digits, as parseMajorAmount() reads it without a
/// currency): one sentence naming the text and the rule it breaks (sign, form, decimals,
/// size); empty when it is one.
std::string thresholdProblem(const std::string &text);

/// The guard setting that states every amount in one reference currency, for the four-eyes
/// threshold and the "highest value first" order: "EUR USD=0.92 JPY=0.0061", the reference
/// currency, then what one unit of each other currency is worth in it (up to 9 decimals).
/// Single spaces between the parts; empty or unset: no rates.
inline constexpr const char *ReferenceRatesSetting = "reference_rates";

/// A parsed reference_rates setting.
struct ReferenceRates
{
    std::string reference;
    /// (currency, value of one unit in the reference currency × 10^9), the reference excluded.
    std::vector<std::pair<std::string, std::int64_t>> nanoRates;

    /// Unset for text that is not such a setting; `problem` (if given) then says what is wrong.
    static std::optional<ReferenceRates> parse(const std::string &text,
                                               std::string *problem = nullptr);
    /// The rate × 10^9 of `currency` (10^9 for the reference), unset when it has none.
    std::optional<std::int64_t> nanoRate(const std::string &currency) const;
    /// What one minor unit of each priced currency (the reference first) is worth in the
    /// reference's minor units: the stores' value orders rank by them (ListFilter::valueFactors).
    std::vector<ValueFactor> factors() const;
    /// factors() of the reference_rates setting `text`; empty when it is unset, empty or not
    /// such a setting (then values rank by their minor units).
    static std::vector<ValueFactor> factorsOf(const std::optional<std::string> &text);
};

/// Whether approving `value` takes a second approver: above `threshold` (the four_eyes_above
/// setting in major units; unset or empty turns four-eyes off). With `rates` (the
/// reference_rates setting, unset or empty for none) the threshold is in the reference
/// currency, every value is converted at its rate, and a currency without a rate always needs
/// two approvers; without rates the threshold applies as written in every currency. Exact:
/// the same comparison as idempo.needs_four_eyes on PostgreSQL
/// (functions/actions/needs_four_eyes.sql).
bool needsFourEyes(const Amount &value, const std::optional<std::string> &threshold,
                   const std::optional<std::string> &rates);

} // namespace idempo
