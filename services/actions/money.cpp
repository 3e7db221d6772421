// SPDX-License-Identifier: Apache-2.0
#include "money.h"

#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace idempo {

std::optional<std::int64_t> parseMajorAmount(const std::string &text, const std::string &currency)
{
    const int exponent = currencyExponent(currency);
    std::string digits;
    int decimals = -1;
    for (const char ch : text) {
        if (ch == ',' && decimals < 0) {
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
    return minor;
}

std::optional<Amount> operationValue(const Operation &op)
{
    if (op.value)
        return op.value;
    const nlohmann::json payload = nlohmann::json::parse(op.payload, nullptr, false);
    if (!payload.is_object())
        return std::nullopt;
    Amount value;
    if (const auto c = payload.find("currency"); c != payload.end() && c->is_string())
        value.currency = c->get<std::string>();
    const auto amount = payload.find("amount");
    if (amount == payload.end())
        return std::nullopt;
    if (amount->is_string()) {
        const auto minor = parseMajorAmount(amount->get<std::string>(), value.currency);
        if (!minor)
            return std::nullopt;
        value.minorUnits = *minor;
        return value;
    }
    if (!amount->is_number())
        return std::nullopt;
    const double scaled = amount->get<double>() * std::pow(10.0, currencyExponent(value.currency));
    if (!std::isfinite(scaled) || scaled < 0 || scaled > 9e15)
        return std::nullopt;
    value.minorUnits = std::llround(scaled);
    return value;
}

} // namespace idempo
