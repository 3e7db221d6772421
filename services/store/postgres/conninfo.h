// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idempo {

/// A ledger address as libpq's own parse (PQconninfoParse) reads it, split into what may be
/// shown or stored and what may not.
struct ConninfoParts
{
    /// The address rebuilt from the fields libpq does not mark secret (PQconninfoOption's
    /// dispchar "*": password, sslpassword): a URI stays a URI, a keyword string a keyword
    /// string, and libpq reads it as the original without those fields.
    std::string nonSecret;
    /// The secret fields the address sets, by libpq keyword ("password", "sslpassword").
    std::vector<std::string> secretFields;
};

/// libpq's parse of `address`: a libpq URI (`postgresql://`, `postgres://`, the scheme in any
/// case) or keyword string (`host=… dbname=…`, `service=NAME`). `sqlite:PATH` comes back
/// unchanged: an embedded ledger's address holds no secrets. nullopt when libpq cannot parse
/// it (its reason would quote the address, so none is given).
std::optional<ConninfoParts> parseConninfo(std::string_view address);

/// The form of a ledger address that may be printed, logged or stored: parseConninfo()'s
/// nonSecret, or, when libpq cannot parse it, only its scheme and
/// "(unparsable connection string)" ("postgresql:… (unparsable connection string)").
/// Every message, title and settings file that names a ledger goes through this.
std::string redactConninfo(std::string_view address);

/// `address` as libpq is to read it: a URI scheme in lower case (libpq takes only
/// `postgresql://` and `postgres://`; RFC 3986 schemes are case-insensitive).
std::string libpqConninfo(std::string_view address);

/// True when libpq is to open `address`: a libpq URI (scheme in any case) or a keyword string
/// (it holds '=').
bool isPostgresAddress(std::string_view address);

} // namespace idempo
