// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace idempo {

/// Parses JSON text strictly for fingerprinting: RFC 8259 syntax, UTF-8 only, no duplicate
/// object member names (I-JSON, RFC 7493), no non-finite numbers, and no integer literal
/// that an IEEE-754 double cannot hold exactly (beyond ±2^53 two different ids would
/// otherwise share a fingerprint; send such values as strings).
/// Throws Error(InvalidJson) naming the problem and its byte offset.
nlohmann::json parseStrictJson(std::string_view text);

/// The RFC 8785 (JCS) canonical form: object members sorted by UTF-16 code units, no
/// whitespace, strings with the minimal escapes of RFC 8785 §3.2.2.2, numbers serialised
/// as ECMAScript's Number.prototype.toString (shortest round-trip digits; plain notation
/// for 1e-6 <= |x| < 1e21, else exponent form like 1e+30; -0 becomes 0).
/// Throws Error(InvalidJson) for a non-finite number.
std::string canonicalJson(const nlohmann::json &value);

/// The projection used for fingerprints: an object mapping each JSON Pointer (RFC 6901) in
/// `pointers` to the value it selects in `value`; pointers that select nothing are left
/// out. With no pointers the value itself is returned.
/// Throws Error(InvalidArgument) for a malformed pointer.
nlohmann::json projectJson(const nlohmann::json &value, const std::vector<std::string> &pointers);

/// The pointers of a projection as a set (sorted, each once): two lists select the same
/// projection, in any order and with any repeats, exactly when these are equal.
std::vector<std::string> projectionSet(std::vector<std::string> pointers);

/// Payload fingerprint: lowercase hex SHA-256 of canonicalJson(projectJson(value, pointers)).
std::string payloadFingerprint(const nlohmann::json &value,
                               const std::vector<std::string> &pointers = {});

} // namespace idempo
