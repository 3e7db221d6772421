// SPDX-License-Identifier: Apache-2.0
#include "canonicaljson.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <iterator>
#include <utility>

#include <QCryptographicHash>
#include <QString>

#include "error.h"

namespace idempo {

namespace {

using json = nlohmann::json;

// Deeper documents are refused so that canonicalJson's recursion cannot exhaust the stack.
constexpr std::size_t kMaxDepth = 512;

// RFC 8785 §3.2.2.2: the two-character escapes JSON has, \u00xx for other controls, else raw.
std::string jsonString(std::string_view text)
{
    static constexpr std::string_view shortEscapes = "\bb\ff\nn\rr\tt"; // control, its letter
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) >= 0x20) {
            out += c;
        } else if (const auto at = shortEscapes.find(c); at != std::string_view::npos) {
            out += '\\';
            out += shortEscapes[at + 1];
        } else {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 0xf];
        }
    }
    return out + '"';
}

// ECMAScript Number.prototype.toString, built from the shortest round-trip digits.
std::string numberText(double d)
{
    if (!std::isfinite(d))
        throw Error(ErrorCode::InvalidJson, "number " + std::to_string(d) + " is not finite");
    if (d == 0) // -0 too
        return "0";
    std::string out = d < 0 ? "-" : "";
    d = std::abs(d);
    char buf[32];
    char *end = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific).ptr;
    char *e = std::find(buf, end, 'e'); // buf is "D[.DDD]e±XX"
    std::string digits(buf, e);
    std::erase(digits, '.');
    int exponent = 0;
    std::from_chars(e + (e[1] == '+' ? 2 : 1), end, exponent); // from_chars rejects a '+'
    const int k = static_cast<int>(digits.size());
    const int n = exponent + 1; // value = 0.digits × 10^n
    if (k <= n && n <= 21) {
        out += digits;
        out.append(n - k, '0');
    } else if (0 < n && n <= 21) {
        out.append(digits, 0, n);
        out += '.';
        out.append(digits, n);
    } else if (-6 < n && n <= 0) {
        out += "0.";
        out.append(-n, '0');
        out += digits;
    } else {
        out += digits[0];
        if (k > 1) {
            out += '.';
            out.append(digits, 1);
        }
        out += n - 1 < 0 ? "e-" : "e+";
        out += std::to_string(std::abs(n - 1));
    }
    return out;
}

std::string atByte(std::size_t offset)
{
    return " at byte " + std::to_string(offset);
}

[[noreturn]] void refuse(const std::string &message)
{
    throw Error(ErrorCode::InvalidJson, message);
}

// Remembers the last byte the lexer read, so SAX events can tell where their token is.
struct TrackingIterator
{
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char *;
    using reference = const char &;

    const char *p;
    const char **lastRead;

    reference operator*() const { return *(*lastRead = p); }
    TrackingIterator &operator++()
    {
        ++p;
        return *this;
    }
    bool operator==(const TrackingIterator &other) const { return p == other.p; }
};

// Builds the document like nlohmann's own DOM parser, refusing what a fingerprint must not accept.
class StrictSax final
{
public:
    explicit StrictSax(std::string_view text) : m_text(text), m_lastRead(text.data()) {}

    const char **lastRead() { return &m_lastRead; }
    json take() { return std::move(m_root); }

    bool null() { return value(nullptr); }
    bool boolean(bool b) { return value(b); }
    bool number_integer(json::number_integer_t i)
    {
        checkInteger(std::to_string(i), double(i));
        return value(i);
    }
    bool number_unsigned(json::number_unsigned_t u)
    {
        checkInteger(std::to_string(u), double(u));
        return value(u);
    }
    bool number_float(json::number_float_t f, const std::string &literal)
    {
        // Integer literals beyond 64 bits arrive here as doubles.
        if (literal.find_first_of(".eE") == std::string::npos)
            checkInteger(literal, f);
        return value(f);
    }
    bool string(std::string &s) { return value(std::move(s)); }
    bool binary(json::binary_t &) { return false; } // JSON text has no binary values
    bool start_object(std::size_t) { return open(json::object()); }
    bool start_array(std::size_t) { return open(json::array()); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }

    bool key(std::string &name)
    {
        if (m_open.back()->contains(name))
            refuse("duplicate member name " + jsonString(name) + atByte(tokenStart()));
        m_key = std::move(name);
        return consumed();
    }

    bool parse_error(std::size_t position, const std::string &token, const json::exception &ex)
    {
        if (ex.id == 406) // out_of_range: the literal overflows a double
            refuse("number " + token + atByte(position - token.size()) + " is not finite");
        // Keep nlohmann's reason but drop its line/column prefix and the raw token, which may be
        // the very bytes that are not UTF-8.
        std::string reason = ex.what();
        if (const auto colon = reason.find(": ", reason.find("column")); colon != std::string::npos)
            reason.erase(0, colon + 2);
        const std::string echo = "; last read: '" + token + '\'';
        if (const auto at = reason.find(echo); at != std::string::npos)
            reason.erase(at, echo.size());
        refuse("invalid JSON" + atByte(position - 1) + ": " + reason);
    }

private:
    // Between two events the lexer only passes separators, so the next token starts after them.
    std::size_t tokenStart() const { return m_text.find_first_not_of(" \t\n\r,:", m_eventEnd); }

    bool consumed()
    {
        m_eventEnd = static_cast<std::size_t>(m_lastRead - m_text.data()) + 1;
        return true;
    }

    void checkInteger(const std::string &literal, double d)
    {
        char buf[400]; // fixed notation of any finite double fits
        const std::string nearest(
            buf, std::to_chars(buf, buf + sizeof buf, d, std::chars_format::fixed, 0).ptr);
        if (literal != nearest)
            refuse("integer " + literal + atByte(tokenStart()) +
                   " is not exactly representable as a double (the nearest is " + nearest +
                   "); send it as a string");
    }

    json *add(json v)
    {
        consumed();
        if (m_open.empty()) {
            m_root = std::move(v);
            return &m_root;
        }
        json &parent = *m_open.back();
        if (parent.is_array()) {
            parent.push_back(std::move(v));
            return &parent.back();
        }
        return &(parent[m_key] = std::move(v));
    }

    bool value(json v)
    {
        add(std::move(v));
        return true;
    }

    bool open(json container)
    {
        if (m_open.size() == kMaxDepth)
            refuse("nesting deeper than " + std::to_string(kMaxDepth) + " levels" +
                   atByte(tokenStart()));
        m_open.push_back(add(std::move(container)));
        return true;
    }

    bool close()
    {
        m_open.pop_back();
        return consumed();
    }

    std::string_view m_text;
    const char *m_lastRead;
    std::size_t m_eventEnd = 0;
    json m_root;
    std::vector<json *> m_open; // containers still being filled; none moves while a child is open
    std::string m_key;
};

void write(std::string &out, const json &value)
{
    switch (value.type()) {
    case json::value_t::null:
        out += "null";
        return;
    case json::value_t::boolean:
        out += value.get<bool>() ? "true" : "false";
        return;
    case json::value_t::number_integer: // JCS numbers are doubles, whatever nlohmann holds
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
        out += numberText(value.get<double>());
        return;
    case json::value_t::string:
        out += jsonString(value.get_ref<const std::string &>());
        return;
    case json::value_t::array: {
        out += '[';
        for (auto it = value.begin(); it != value.end(); ++it) {
            if (it != value.begin())
                out += ',';
            write(out, *it);
        }
        out += ']';
        return;
    }
    case json::value_t::object: {
        // nlohmann keeps members in UTF-8 byte order; JCS wants UTF-16 code unit order, which
        // differs for names with characters beyond U+FFFF.
        std::vector<std::pair<std::u16string, json::const_iterator>> members;
        for (auto it = value.begin(); it != value.end(); ++it)
            members.emplace_back(QString::fromStdString(it.key()).toStdU16String(), it);
        std::sort(members.begin(), members.end(),
                  [](const auto &a, const auto &b) { return a.first < b.first; });
        out += '{';
        for (const auto &[name, it] : members) {
            if (&name != &members.front().first)
                out += ',';
            out += jsonString(it.key());
            out += ':';
            write(out, it.value());
        }
        out += '}';
        return;
    }
    case json::value_t::binary:
    case json::value_t::discarded:
        throw Error(ErrorCode::InvalidJson, "binary and discarded values have no JSON text");
    }
}

} // namespace

json parseStrictJson(std::string_view text)
{
    // nlohmann's lexer takes a NUL byte for the end of input, so "[1]\0junk" would pass.
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        refuse("invalid JSON" + atByte(nul) + ": unescaped NUL byte");
    StrictSax sax(text);
    json::sax_parse(TrackingIterator{text.data(), sax.lastRead()},
                    TrackingIterator{text.data() + text.size(), sax.lastRead()}, &sax);
    return sax.take();
}

std::string canonicalJson(const json &value)
{
    std::string out;
    write(out, value);
    return out;
}

json projectJson(const json &value, const std::vector<std::string> &pointers)
{
    if (pointers.empty())
        return value;
    json projection = json::object();
    for (const std::string &text : pointers) {
        json::json_pointer pointer;
        try {
            pointer = json::json_pointer(text);
        } catch (const json::parse_error &) {
            throw Error(
                ErrorCode::InvalidArgument,
                "malformed JSON pointer " + jsonString(text) +
                    ": it must be empty or start with '/', and '~' must be followed by 0 or 1");
        }
        try {
            projection[text] = value.at(pointer);
        } catch (const json::exception &) {
            // The pointer selects nothing in this value (missing member, bad index, scalar).
        }
    }
    return projection;
}

std::vector<std::string> projectionSet(std::vector<std::string> pointers)
{
    std::sort(pointers.begin(), pointers.end());
    pointers.erase(std::unique(pointers.begin(), pointers.end()), pointers.end());
    return pointers;
}

std::string payloadFingerprint(const json &value, const std::vector<std::string> &pointers)
{
    const std::string text = canonicalJson(projectJson(value, pointers));
    return QCryptographicHash::hash(QByteArrayView(text), QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

} // namespace idempo
