// SPDX-License-Identifier: Apache-2.0
#include "payloadmatch.h"

#include "error.h"
#include "textescape.h"

namespace idempo {
namespace {

void checkValueLength(const std::string &what, const std::string &value)
{
    if (value.size() > static_cast<std::size_t>(PayloadMaxValueBytes))
        throw Error(ErrorCode::InvalidArgument,
                    what + " is " + std::to_string(value.size()) + " bytes; payload values over " +
                        std::to_string(PayloadMaxValueBytes) + " bytes are not indexed");
}

} // namespace

void checkPayloadMatch(const PayloadMatch &match)
{
    const std::string shown = "'" + escapedText(match.pointer) + "'";
    if (match.pointer.empty() || match.pointer.front() != '/')
        throw Error(ErrorCode::InvalidArgument,
                    "payload field " + shown + " is not a JSON Pointer: it must start with '/'");
    for (std::size_t i = 0; i < match.pointer.size(); ++i)
        if (match.pointer[i] == '~' &&
            (i + 1 == match.pointer.size() ||
             (match.pointer[i + 1] != '0' && match.pointer[i + 1] != '1')))
            throw Error(ErrorCode::InvalidArgument,
                        "payload field " + shown + " is not a JSON Pointer: '~' at byte " +
                            std::to_string(i) + " must be followed by 0 or 1 (~0 is '~', ~1 '/')");
    checkValueLength("the value of payload field " + shown, match.value);
}

PayloadMatch parsePayloadMatch(const std::string &text)
{
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos)
        throw Error(ErrorCode::InvalidArgument, "payload field term '" + escapedText(text) +
                                                    "' has no '=': write POINTER=VALUE, e.g. "
                                                    "/customer=cust-42");
    PayloadMatch match{text.substr(0, eq), text.substr(eq + 1)};
    checkPayloadMatch(match);
    return match;
}

std::vector<PayloadMatch> payloadTerms(const std::vector<PayloadMatch> &payload,
                                       const std::string &customer)
{
    std::vector<PayloadMatch> terms;
    for (const PayloadMatch &match : payload) {
        checkPayloadMatch(match);
        terms.push_back(match);
    }
    if (!customer.empty()) {
        checkValueLength("the customer", customer);
        terms.push_back({PayloadCustomerPointer, customer});
    }
    return terms;
}

} // namespace idempo
