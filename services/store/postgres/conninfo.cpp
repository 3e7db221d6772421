// SPDX-License-Identifier: Apache-2.0
#include "conninfo.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include <libpq-fe.h>

namespace idempo {
namespace {

using namespace std::string_view_literals;

constexpr std::string_view SqliteScheme = "sqlite:";

struct Field
{
    std::string keyword;
    std::string value;
};

bool startsWithNoCase(std::string_view s, std::string_view prefix)
{
    return s.size() >= prefix.size() &&
           std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
               return a == (b >= 'A' && b <= 'Z' ? static_cast<char>(b - 'A' + 'a') : b);
           });
}

/// The libpq URI prefix `address` starts with, in lower case; empty for none.
std::string_view uriPrefix(std::string_view address)
{
    for (std::string_view prefix : {"postgresql://"sv, "postgres://"sv})
        if (startsWithNoCase(address, prefix))
            return prefix;
    return {};
}

/// The RFC 3986 scheme `address` starts with (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"),
/// or empty.
std::string_view schemeOf(std::string_view address)
{
    const auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
    if (address.empty() || !alpha(address.front()))
        return {};
    for (std::size_t i = 1; i < address.size(); ++i) {
        const char c = address[i];
        if (c == ':')
            return address.substr(0, i);
        if (!alpha(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.')
            return {};
    }
    return {};
}

std::string percentEncoded(std::string_view s)
{
    static constexpr char Hex[] = "0123456789ABCDEF";
    std::string out;
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            out += c;
        } else {
            out += '%';
            out += Hex[u >> 4];
            out += Hex[u & 0xF];
        }
    }
    return out;
}

/// An IPv6 address in brackets, where libpq decodes only percent signs (a zone, "%25eth0").
std::string ipv6Host(std::string_view host)
{
    std::string out = "[";
    for (const char c : host)
        out += c == '%' ? "%25"sv : std::string_view(&c, 1);
    return out + ']';
}

std::string quotedKeywordValue(std::string_view value)
{
    if (!value.empty() && value.find_first_of(" \t\n\r\f\v'\\") == std::string_view::npos)
        return std::string(value);
    std::string out = "'";
    for (const char c : value) {
        if (c == '\'' || c == '\\')
            out += '\\';
        out += c;
    }
    return out + "'";
}

std::vector<std::string_view> split(std::string_view s, char separator)
{
    std::vector<std::string_view> parts;
    for (std::size_t start = 0;;) {
        const std::size_t end = s.find(separator, start);
        parts.push_back(
            s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
        if (end == std::string_view::npos)
            return parts;
        start = end + 1;
    }
}

std::string keywordForm(const std::vector<Field> &fields)
{
    std::string out;
    for (const Field &f : fields) {
        if (!out.empty())
            out += ' ';
        out += f.keyword + '=' + quotedKeywordValue(f.value);
    }
    return out;
}

/// `scheme` + [user@][host[:port][,…]][/dbname][?keyword=value&…]: libpq's URI grammar. What
/// the authority cannot carry faithfully (an empty host in the list, ports that do not pair
/// with the hosts) goes into the query, which libpq reads the same way.
std::string uriForm(std::string_view scheme, std::vector<Field> fields)
{
    const auto take = [&fields](std::string_view keyword) -> std::optional<std::string> {
        const auto it = std::find_if(fields.begin(), fields.end(),
                                     [&](const Field &f) { return f.keyword == keyword; });
        if (it == fields.end())
            return std::nullopt;
        std::string value = std::move(it->value);
        fields.erase(it);
        return value;
    };
    std::string out(scheme);
    if (const auto user = take("user"))
        out += percentEncoded(*user) + '@';
    const auto find = [&fields](std::string_view keyword) -> std::optional<std::string> {
        const auto it = std::find_if(fields.begin(), fields.end(),
                                     [&](const Field &f) { return f.keyword == keyword; });
        return it == fields.end() ? std::nullopt : std::optional<std::string>(it->value);
    };
    const std::optional<std::string> host = find("host");
    const std::vector<std::string_view> hosts =
        host ? split(*host, ',') : std::vector<std::string_view>{};
    if (host &&
        std::none_of(hosts.begin(), hosts.end(), [](std::string_view h) { return h.empty(); })) {
        const std::optional<std::string> port = find("port");
        const std::vector<std::string_view> ports =
            port ? split(*port, ',') : std::vector<std::string_view>{};
        const bool paired = ports.size() == hosts.size();
        for (std::size_t i = 0; i < hosts.size(); ++i) {
            if (i > 0)
                out += ',';
            out += hosts[i].find(':') != std::string_view::npos ? ipv6Host(hosts[i])
                                                                : percentEncoded(hosts[i]);
            if (paired && !ports[i].empty())
                out += ':' + percentEncoded(ports[i]);
        }
        take("host");
        if (paired)
            take("port");
    }
    if (const auto dbname = take("dbname"))
        out += '/' + percentEncoded(*dbname);
    char separator = '?';
    for (const Field &f : fields) {
        out += separator + percentEncoded(f.keyword) + '=' + percentEncoded(f.value);
        separator = '&';
    }
    return out;
}

/// libpq's recognised_connection_string(): what it would expand when given as a dbname.
bool looksLikeConninfo(std::string_view value)
{
    return !uriPrefix(value).empty() || value.find('=') != std::string_view::npos;
}

} // namespace

std::optional<ConninfoParts> parseConninfo(std::string_view address)
{
    if (address.starts_with(SqliteScheme))
        return ConninfoParts{std::string(address), {}};
    const std::string conninfo = libpqConninfo(address);
    if (conninfo.find('\0') != std::string::npos)
        return std::nullopt;
    char *error = nullptr;
    const std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption *)> options(
        PQconninfoParse(conninfo.c_str(), &error), PQconninfoFree);
    PQfreemem(error);
    if (!options)
        return std::nullopt;
    ConninfoParts parts;
    std::vector<Field> fields;
    for (const PQconninfoOption *o = options.get(); o->keyword; ++o) {
        if (!o->val)
            continue;
        if (o->dispchar && std::strchr(o->dispchar, '*')) {
            parts.secretFields.emplace_back(o->keyword);
            continue;
        }
        std::string value = o->val;
        // A database name that is itself a connection string is shown without its secrets too.
        if (std::strcmp(o->keyword, "dbname") == 0 && looksLikeConninfo(value))
            value = redactConninfo(value);
        fields.push_back({o->keyword, std::move(value)});
    }
    const std::string_view prefix = uriPrefix(conninfo);
    parts.nonSecret = prefix.empty() ? keywordForm(fields) : uriForm(prefix, std::move(fields));
    return parts;
}

std::string redactConninfo(std::string_view address)
{
    if (std::optional<ConninfoParts> parts = parseConninfo(address))
        return std::move(parts->nonSecret);
    const std::string_view scheme = schemeOf(address);
    return scheme.empty() ? std::string("(unparsable connection string)")
                          : std::string(scheme) + ":… (unparsable connection string)";
}

std::string libpqConninfo(std::string_view address)
{
    std::string out(address);
    const std::string_view prefix = uriPrefix(address);
    out.replace(0, prefix.size(), prefix);
    return out;
}

bool isPostgresAddress(std::string_view address)
{
    return !address.starts_with(SqliteScheme) &&
           (!uriPrefix(address).empty() || address.find('=') != std::string_view::npos);
}

} // namespace idempo
