// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

namespace idempo {

/// One "payload field = value" term of a listing: the operations whose payload holds, at the
/// RFC 6901 JSON Pointer `pointer`, a scalar whose text is `value`. A string's text is its
/// characters; true, false and null are those words; a number is its decimal text (whole
/// numbers within 64 bits and plain decimals such as 12.5 read the same on both stores).
/// So `/amount=42` finds the number 42 and the string "42" alike.
///
/// Both stores keep the scalar leaves of every payload in a side table, `payload_fields`,
/// written by a trigger when an operation is inserted (docs/console.md "Find"). A leaf is kept
/// when its pointer has at most PayloadMaxDepth segments, every array index in it is below
/// PayloadMaxArrayIndex and its text is at most PayloadMaxValueBytes bytes: other leaves are
/// not found.
struct PayloadMatch
{
    std::string pointer;
    std::string value;

    bool operator==(const PayloadMatch &) const = default;
};

inline constexpr int PayloadMaxDepth = 8;
inline constexpr int PayloadMaxArrayIndex = 32;
inline constexpr int PayloadMaxValueBytes = 256;

/// The side table's pseudo pointer for the customer: the first of the payload's top-level
/// `customer`, `customer_id`, `client`, `client_id` that is a string or a number (what the
/// console shows as the customer). No JSON Pointer starts with '#'.
inline constexpr const char *PayloadCustomerPointer = "#customer";

/// Throws Error(InvalidArgument) naming the pointer when it is not a JSON Pointer (does not
/// start with '/', or a '~' not followed by '0' or '1'), or naming the value when it is longer
/// than PayloadMaxValueBytes (such values are not indexed).
void checkPayloadMatch(const PayloadMatch &match);

/// "POINTER=VALUE" split at the first '=' and checked (checkPayloadMatch); throws
/// Error(InvalidArgument) naming the text when it holds no '='.
PayloadMatch parsePayloadMatch(const std::string &text);

/// The side-table terms a listing asks for: each of `payload` checked, then the customer as the
/// pseudo pointer (when not empty, checked for its length).
std::vector<PayloadMatch> payloadTerms(const std::vector<PayloadMatch> &payload,
                                       const std::string &customer);

} // namespace idempo
