// SPDX-License-Identifier: Apache-2.0
#include "money.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace idempo {

namespace {

/// A ',' groups the whole part by thousands ("1,250,000"), nowhere else: "1,5" is no amount.
bool commasGroupThousands(const std::string &text)
{
    const std::string whole = text.substr(0, text.find('.'));
    if (text.find(',', whole.size()) != std::string::npos)
        return false;
    if (whole.find(',') == std::string::npos)
        return true;
    const std::size_t first = whole.find(',');
    if (first == 0 || first > 3)
        return false;
    for (std::size_t at = first; at < whole.size(); at += 4)
        if (whole[at] != ',' || whole.size() - at < 4 ||
            whole.substr(at + 1, 3).find(',') != std::string::npos)
            return false;
    return true;
}

} // namespace

std::optional<std::int64_t> parseMajorAmount(const std::string &text, const std::string &currency)
{
    if (!commasGroupThousands(text))
        return std::nullopt;
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

std::string thresholdProblem(const std::string &text)
{
    if (parseMajorAmount(text, {}))
        return {};
    const std::string given = "not '" + text + "'";
    const auto dot = text.find('.');
    const std::string whole = text.substr(0, dot);
    const auto digitsOnly = [](const std::string &t) {
        return t.find_first_not_of("0123456789,") == std::string::npos;
    };
    if (!text.empty() && (text.front() == '-' || text.front() == '+'))
        return "the four-eyes threshold takes no sign: it is an amount of 0 or more such as "
               "1000.00, " +
               given;
    if (text.find_first_not_of("0123456789,.") == std::string::npos && !commasGroupThousands(text))
        return "the four-eyes threshold writes ',' only between groups of three digits before "
               "the '.', such as 1,000.00, " +
               given;
    if (dot != std::string::npos && digitsOnly(whole) && digitsOnly(text.substr(dot + 1)) &&
        text.size() - dot - 1 > static_cast<std::size_t>(currencyExponent({})))
        return "the four-eyes threshold takes at most " + std::to_string(currencyExponent({})) +
               " decimals, " + given;
    if (digitsOnly(whole) && (dot == std::string::npos || digitsOnly(text.substr(dot + 1))) &&
        text.find_first_of("0123456789") != std::string::npos)
        return "the four-eyes threshold takes at most 15 digits, " + given;
    return "the four-eyes threshold must be an amount in major units such as 1000.00 (digits, "
           "an optional '.' and up to " +
           std::to_string(currencyExponent({})) + " decimals), " + given;
}

namespace {

bool isCurrencyCode(const std::string &code)
{
    return code.size() == 3 &&
           std::all_of(code.begin(), code.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

/// "0.92" as 920000000: 1–9 integer digits, up to 9 decimals.
std::optional<std::int64_t> parseNanoRate(const std::string &text)
{
    const auto dot = text.find('.');
    const std::string whole = text.substr(0, dot);
    const std::string fraction = dot == std::string::npos ? std::string() : text.substr(dot + 1);
    const auto digits = [](const std::string &t) {
        return std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (whole.empty() || whole.size() > 9 || !digits(whole) || fraction.size() > 9 ||
        !digits(fraction) || (dot != std::string::npos && fraction.empty()))
        return std::nullopt;
    std::int64_t nano = std::strtoll(whole.c_str(), nullptr, 10);
    for (std::size_t i = 0; i < 9; ++i)
        nano = nano * 10 + (i < fraction.size() ? fraction[i] - '0' : 0);
    return nano;
}

__int128 power10(int n)
{
    __int128 p = 1;
    while (n-- > 0)
        p *= 10;
    return p;
}

} // namespace

std::optional<ReferenceRates> ReferenceRates::parse(const std::string &text, std::string *problem)
{
    const auto fail = [problem](std::string why) -> std::optional<ReferenceRates> {
        if (problem)
            *problem = std::move(why);
        return std::nullopt;
    };
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
        const auto space = text.find(' ', at);
        parts.push_back(
            text.substr(at, space == std::string::npos ? std::string::npos : space - at));
        if (space == std::string::npos)
            break;
        at = space + 1;
    }
    ReferenceRates rates;
    rates.reference = parts.front();
    if (rates.reference.empty() && parts.size() > 1)
        return fail("reference_rates starts with a space: write the reference currency first, "
                    "e.g. 'EUR USD=0.92'");
    if (!isCurrencyCode(rates.reference))
        return fail("reference_rates must start with the reference currency (three capital "
                    "letters, e.g. EUR), not '" +
                    rates.reference + "'");
    for (std::size_t i = 1; i < parts.size(); ++i) {
        const std::string &part = parts[i];
        if (part.empty()) {
            std::size_t next = i + 1;
            while (next < parts.size() && parts[next].empty())
                ++next;
            return fail(
                "reference_rates takes single spaces between its parts: '" + text + "' has " +
                (next == parts.size() ? std::string("a space at the end")
                                      : "more than one space before '" + parts[next] + "'"));
        }
        if (part.find(';') != std::string::npos)
            return fail("separate the rates of reference_rates with single spaces, not ';': '" +
                        part + "'");
        const auto eq = part.find('=');
        const std::string code = part.substr(0, eq);
        const auto nano =
            eq == std::string::npos ? std::nullopt : parseNanoRate(part.substr(eq + 1));
        if (!isCurrencyCode(code) || !nano)
            return fail("each rate of reference_rates is CUR=RATE (e.g. USD=0.92, up to 9 "
                        "decimals, single spaces between), not '" +
                        part + "'");
        if (*nano == 0)
            return fail("the rate of " + code + " must be above zero");
        if (code == rates.reference || rates.nanoRate(code))
            return fail("reference_rates names " + code + " twice");
        rates.nanoRates.emplace_back(code, *nano);
    }
    return rates;
}

std::optional<std::int64_t> ReferenceRates::nanoRate(const std::string &currency) const
{
    if (currency == reference)
        return 1'000'000'000;
    for (const auto &[code, nano] : nanoRates)
        if (code == currency)
            return nano;
    return std::nullopt;
}

std::vector<ValueFactor> ReferenceRates::factors() const
{
    const auto factor = [this](const std::string &currency, std::int64_t nano) {
        const int shift = currencyExponent(reference) - currencyExponent(currency);
        return ValueFactor{currency, static_cast<double>(nano) / 1e9 * std::pow(10.0, shift)};
    };
    std::vector<ValueFactor> out{factor(reference, 1'000'000'000)};
    for (const auto &[code, nano] : nanoRates)
        out.push_back(factor(code, nano));
    return out;
}

std::vector<ValueFactor> ReferenceRates::factorsOf(const std::optional<std::string> &text)
{
    const std::optional<ReferenceRates> rates =
        text && !text->empty() ? parse(*text) : std::nullopt;
    return rates ? rates->factors() : std::vector<ValueFactor>{};
}

bool needsFourEyes(const Amount &value, const std::optional<std::string> &threshold,
                   const std::optional<std::string> &rates)
{
    if (!threshold || threshold->empty())
        return false;
    // The threshold in units of 10^-s, s the exponent of no currency (what validation allows).
    const int scale = currencyExponent({});
    const auto limit = parseMajorAmount(*threshold, {});
    if (!limit)
        return true;
    const __int128 exponent = power10(currencyExponent(value.currency));
    if (!rates || rates->empty())
        return __int128(value.minorUnits) * power10(scale) > __int128(*limit) * exponent;
    const auto parsed = ReferenceRates::parse(*rates);
    const auto nano = parsed ? parsed->nanoRate(value.currency) : std::nullopt;
    if (!nano)
        return true;
    return __int128(value.minorUnits) * *nano * power10(scale) >
           __int128(*limit) * 1'000'000'000 * exponent;
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

bool payloadAmountUnreadable(const std::string &payload)
{
    const nlohmann::json parsed = nlohmann::json::parse(payload, nullptr, false);
    if (!parsed.is_object() || !parsed.contains("amount"))
        return false;
    Operation bare;
    bare.payload = payload;
    return !operationValue(bare);
}

} // namespace idempo
