// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace idempo {

/// The exclusive upper bound of the keys that start with `prefix`, so that a prefix filter is
/// the index range `key >= prefix AND key < bound` (byte order: SQLite's BINARY collation,
/// PostgreSQL's "C"). Returns nullopt when no bound exists: an empty prefix, or one made only of
/// the largest units (0xFF bytes, U+10FFFF), where `key >= prefix` alone is exact.
///
/// For valid UTF-8 the bound is the prefix with its last code point replaced by the next one
/// (U+D7FF is followed by U+E000; a trailing U+10FFFF is dropped and the one before it
/// advanced), so the bound is itself valid UTF-8 and can be bound as text. Any other byte string
/// gets its byte successor: trailing 0xFF bytes dropped, the last remaining byte plus one.
std::optional<std::string> keyPrefixUpperBound(std::string_view prefix);

} // namespace idempo
