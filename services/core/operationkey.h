// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

namespace idempo {

/// Maximum length of an operation key, in bytes of UTF-8.
inline constexpr std::size_t MaxKeyBytes = 255;
/// Maximum length of a namespace, in bytes.
inline constexpr std::size_t MaxNamespaceBytes = 63;

/// Checks the key rules of design.md: 1..255 bytes of valid, printable UTF-8 (no control,
/// format, unassigned or separator characters; no leading or trailing white space).
/// Throws Error(InvalidKey) naming the rule that is broken.
void validateOperationKey(std::string_view key);

/// The same printable-UTF-8 rule for the other identifiers a caller names (run id, step id,
/// target, lease owner): at most `maxBytes` bytes; empty is allowed. `what` names the field in
/// the message. Throws Error(InvalidKey).
void validateIdentifier(std::string_view value, const char *what,
                        std::size_t maxBytes = MaxKeyBytes);

/// A namespace is 1..63 bytes of ASCII letters, digits, '.', '_' and '-'.
/// Throws Error(InvalidKey) naming the offending character or length.
void validateNamespace(std::string_view ns);

} // namespace idempo
