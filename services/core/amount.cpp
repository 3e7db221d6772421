// SPDX-License-Identifier: Apache-2.0
#include "amount.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "error.h"

namespace idempo {
namespace {

// ISO 4217 currencies whose minor unit is not a hundredth (list of 2024).
constexpr std::array<std::string_view, 16> kExponent0 = {"BIF", "CLP", "DJF", "GNF", "ISK", "JPY",
                                                         "KMF", "KRW", "PYG", "RWF", "UGX", "UYI",
                                                         "VND", "VUV", "XAF", "XOF"};
constexpr std::array<std::string_view, 7> kExponent3 = {"BHD", "IQD", "JOD", "KWD",
                                                        "LYD", "OMR", "TND"};

constexpr std::int64_t kMaxMajorUnits = 1'000'000'000'000'000; // 10^15

std::int64_t pow10(int exponent)
{
    std::int64_t p = 1;
    for (int i = 0; i < exponent; ++i)
        p *= 10;
    return p;
}

void validateCurrency(std::string_view currency)
{
    if (currency.size() != 3 ||
        !std::all_of(currency.begin(), currency.end(), [](char c) { return c >= 'A' && c <= 'Z'; }))
        throw Error(ErrorCode::InvalidArgument,
                    "currency '" + std::string(currency) +
                        "' is not an ISO 4217 code (three upper-case letters, e.g. EUR)");
}

} // namespace

int currencyExponent(std::string_view currency)
{
    if (std::find(kExponent0.begin(), kExponent0.end(), currency) != kExponent0.end())
        return 0;
    if (std::find(kExponent3.begin(), kExponent3.end(), currency) != kExponent3.end())
        return 3;
    return 2;
}

void validateAmount(const Amount &amount)
{
    validateCurrency(amount.currency);
    if (amount.minorUnits < 0)
        throw Error(ErrorCode::InvalidArgument, "an amount must not be negative");
    if (amount.minorUnits / pow10(currencyExponent(amount.currency)) >= kMaxMajorUnits)
        throw Error(ErrorCode::InvalidArgument, "an amount must stay below 10^15 major units");
}

Amount parseAmount(std::string_view text)
{
    const std::size_t space = text.find(' ');
    if (space == std::string_view::npos || text.find(' ', space + 1) != std::string_view::npos)
        throw Error(ErrorCode::InvalidArgument,
                    "amount '" + std::string(text) +
                        "' is not of the form AMOUNT CURRENCY, e.g. \"1250.00 EUR\"");
    const std::string_view number = text.substr(0, space);
    Amount amount;
    amount.currency = std::string(text.substr(space + 1));
    validateCurrency(amount.currency);
    const int exponent = currencyExponent(amount.currency);

    const std::size_t dot = number.find('.');
    const std::string_view whole = number.substr(0, dot);
    const std::string_view fraction =
        dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
    const auto digits = [](std::string_view s) {
        return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (whole.empty() || !digits(whole) || !digits(fraction) ||
        (dot != std::string_view::npos && fraction.empty()))
        throw Error(ErrorCode::InvalidArgument,
                    "amount '" + std::string(number) +
                        "' is not a plain non-negative decimal such as 1250.00");
    if (static_cast<int>(fraction.size()) > exponent)
        throw Error(ErrorCode::InvalidArgument,
                    amount.currency + " has " + std::to_string(exponent) + " fraction digits; '" +
                        std::string(number) + "' has more");
    std::int64_t major = 0;
    if (whole.size() > 15 ||
        std::from_chars(whole.data(), whole.data() + whole.size(), major).ec != std::errc{} ||
        major >= kMaxMajorUnits)
        throw Error(ErrorCode::InvalidArgument, "an amount must stay below 10^15 major units");
    std::int64_t minor = 0;
    for (int i = 0; i < exponent; ++i)
        minor = minor * 10 + (i < static_cast<int>(fraction.size())
                                  ? fraction[static_cast<std::size_t>(i)] - '0'
                                  : 0);
    amount.minorUnits = major * pow10(exponent) + minor;
    return amount;
}

namespace {

std::string render(const Amount &amount, bool grouped)
{
    const int exponent = currencyExponent(amount.currency);
    const std::int64_t scale = pow10(exponent);
    std::string major = std::to_string(amount.minorUnits / scale);
    if (grouped) {
        for (int at = static_cast<int>(major.size()) - 3; at > 0; at -= 3)
            major.insert(static_cast<std::size_t>(at), 1, ',');
    }
    std::string out = major;
    if (exponent > 0) {
        std::string fraction = std::to_string(amount.minorUnits % scale);
        fraction.insert(0, static_cast<std::size_t>(exponent) - fraction.size(), '0');
        out += '.' + fraction;
    }
    return out + ' ' + amount.currency;
}

} // namespace

std::string formatAmount(const Amount &amount)
{
    return render(amount, true);
}

std::string amountText(const Amount &amount)
{
    return render(amount, false);
}

std::int64_t valueRank(const std::optional<Amount> &value, const std::vector<ValueFactor> &factors)
{
    if (!value)
        return NoValueRank;
    if (factors.empty())
        return value->minorUnits;
    for (const ValueFactor &f : factors)
        if (f.currency == value->currency)
            return static_cast<std::int64_t>(std::trunc(
                std::min(static_cast<double>(value->minorUnits) * f.factor, PricedRankCeiling)));
    return UnpricedRank;
}

} // namespace idempo
