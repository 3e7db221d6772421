// SPDX-License-Identifier: Apache-2.0
#include "textescape.h"

#include <cstdio>

#include <QChar>

namespace idempo {
namespace {

/// One UTF-8 sequence: its code point and length in bytes; length 0 when the byte at the
/// start begins no valid sequence (stray continuation, overlong form, surrogate, > U+10FFFF).
struct Decoded
{
    char32_t c = 0;
    std::size_t length = 0;
};

Decoded decodeAt(std::string_view s, std::size_t i)
{
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80)
        return {lead, 1};
    std::size_t length = 0;
    char32_t c = 0;
    char32_t least = 0;
    if ((lead & 0xe0) == 0xc0) {
        length = 2;
        c = lead & 0x1f;
        least = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
        length = 3;
        c = lead & 0x0f;
        least = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
        length = 4;
        c = lead & 0x07;
        least = 0x10000;
    } else {
        return {};
    }
    if (i + length > s.size())
        return {};
    for (std::size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(s[i + k]);
        if ((next & 0xc0) != 0x80)
            return {};
        c = (c << 6) | (next & 0x3f);
    }
    if (c < least || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return {};
    return {c, length};
}

void appendHex(std::string &out, const char *format, unsigned value)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, format, value);
    out += buffer;
}

std::string escaped(std::string_view text, bool keepNewlines)
{
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const Decoded d = decodeAt(text, i);
        if (d.length == 0) {
            appendHex(out, "\\x%02x", static_cast<unsigned char>(text[i]));
            ++i;
            continue;
        }
        const std::string_view raw = text.substr(i, d.length);
        i += d.length;
        if (!isUnprintable(d.c) || (keepNewlines && d.c == '\n')) {
            out += raw;
        } else if (d.c == '\n') {
            out += "\\n";
        } else if (d.c == '\r') {
            out += "\\r";
        } else if (d.c == '\t') {
            out += "\\t";
        } else if (d.c < 0x80) {
            appendHex(out, "\\x%02x", static_cast<unsigned>(d.c));
        } else {
            appendHex(out, d.c > 0xffff ? "\\U%08x" : "\\u%04x", static_cast<unsigned>(d.c));
        }
    }
    return out;
}

} // namespace

bool isUnprintable(char32_t c)
{
    switch (QChar::category(c)) {
    case QChar::Other_Control:
    case QChar::Other_Format:
    case QChar::Other_Surrogate:
    case QChar::Other_NotAssigned:
    case QChar::Separator_Line:
    case QChar::Separator_Paragraph:
        return true;
    default:
        return false;
    }
}

std::string escapedText(std::string_view text)
{
    return escaped(text, false);
}

std::string escapedLines(std::string_view text)
{
    return escaped(text, true);
}

std::string escapedJson(std::string_view json)
{
    std::string out;
    out.reserve(json.size());
    for (std::size_t i = 0; i < json.size();) {
        const Decoded d = decodeAt(json, i);
        if (d.length == 0) {
            // Not UTF-8, so no JSON text: say so in the one way a JSON string can.
            out += "\\ufffd";
            ++i;
            continue;
        }
        const std::string_view raw = json.substr(i, d.length);
        i += d.length;
        if ((d.c < 0x80 && d.c != 0x7f) || !isUnprintable(d.c)) {
            out += raw;
        } else if (d.c > 0xffff) {
            const char32_t v = d.c - 0x10000;
            appendHex(out, "\\u%04x", static_cast<unsigned>(0xd800 + (v >> 10)));
            appendHex(out, "\\u%04x", static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
        } else {
            appendHex(out, "\\u%04x", static_cast<unsigned>(d.c));
        }
    }
    return out;
}

std::string csvField(std::string_view text)
{
    std::string field = escapedText(text);
    if (field.find_first_of(",\"") == std::string::npos)
        return field;
    std::string quoted = "\"";
    for (const char ch : field)
        quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return quoted + "\"";
}

} // namespace idempo
