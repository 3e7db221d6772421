// SPDX-License-Identifier: Apache-2.0
#include "money.h"

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace idempo {

int currencyExponent(const std::string &currency)
{
    static const char *const zero[] = {"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG",
                                       "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"};
    static const char *const three[] = {"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"};
    for (const char *c : zero)
        if (currency == c)
            return 0;
    for (const char *c : three)
        if (currency == c)
            return 3;
    return 2;
}

std::optional<std::int64_t> parseMajorAmount(const std::string &text, const std::string &currency)
{
    const int exponent = currencyExponent(currency);
    std::string digits;
    int decimals = -1;
    bool negative = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (ch == '-' && i == 0) {
            negative = true;
        } else if (ch == ',' && decimals < 0) {
            continue;
        } else if (ch == '.' && decimals < 0) {
            decimals = 0;
        } else if (ch >= '0' && ch <= '9') {
            digits += ch;
            if (decimals >= 0)
                ++decimals;
        } else {
            return std::nullopt;
        }
    }
    if (digits.empty() || digits.size() > 15 || decimals > exponent)
        return std::nullopt;
    std::int64_t minor = std::strtoll(digits.c_str(), nullptr, 10);
    for (int d = decimals < 0 ? 0 : decimals; d < exponent; ++d)
        minor *= 10;
    return negative ? -minor : minor;
}

std::optional<Money> operationValue(const Operation &op)
{
    const nlohmann::json payload = nlohmann::json::parse(op.payload, nullptr, false);
    if (!payload.is_object())
        return std::nullopt;
    Money money;
    if (const auto c = payload.find("currency"); c != payload.end() && c->is_string())
        money.currency = c->get<std::string>();
    const auto amount = payload.find("amount");
    if (amount == payload.end())
        return std::nullopt;
    if (amount->is_string()) {
        const auto minor = parseMajorAmount(amount->get<std::string>(), money.currency);
        if (!minor)
            return std::nullopt;
        money.minor = *minor;
        return money;
    }
    if (!amount->is_number())
        return std::nullopt;
    const double scaled = amount->get<double>() * std::pow(10.0, currencyExponent(money.currency));
    if (!std::isfinite(scaled) || std::fabs(scaled) > 9e15)
        return std::nullopt;
    money.minor = std::llround(scaled);
    return money;
}

std::string formatMoney(const Money &money)
{
    const int exponent = currencyExponent(money.currency);
    std::int64_t scale = 1;
    for (int i = 0; i < exponent; ++i)
        scale *= 10;
    const std::uint64_t magnitude = money.minor < 0 ? 0 - static_cast<std::uint64_t>(money.minor)
                                                    : static_cast<std::uint64_t>(money.minor);
    const std::string whole = std::to_string(magnitude / static_cast<std::uint64_t>(scale));
    std::string grouped;
    for (std::size_t i = 0; i < whole.size(); ++i) {
        if (i > 0 && (whole.size() - i) % 3 == 0)
            grouped += ',';
        grouped += whole[i];
    }
    std::string text = (money.minor < 0 ? "-" : "") + grouped;
    if (exponent > 0) {
        std::string fraction = std::to_string(magnitude % static_cast<std::uint64_t>(scale));
        fraction.insert(0, static_cast<std::size_t>(exponent) - fraction.size(), '0');
        text += "." + fraction;
    }
    return money.currency.empty() ? text : text + " " + money.currency;
}

} // namespace idempo
