// SPDX-License-Identifier: Apache-2.0
#include "operationkey.h"

#include <string>

#include <QList>
#include <QString>
#include <QStringDecoder>

#include "error.h"
#include "textescape.h"

namespace idempo {
namespace {

std::string codePointName(char32_t c)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "U+%04X", static_cast<unsigned>(c));
    return buffer;
}

} // namespace

void validateOperationKey(std::string_view key)
{
    if (key.empty())
        throw Error(ErrorCode::InvalidKey, "operation key is empty; use run_id:step_id[:target]");
    validateIdentifier(key, "operation key", MaxKeyBytes);
}

void validateIdentifier(std::string_view value, const char *what, std::size_t maxBytes)
{
    const std::string name(what);
    if (value.size() > maxBytes) {
        throw Error(ErrorCode::InvalidKey, name + " is " + std::to_string(value.size()) +
                                               " bytes; the limit is " + std::to_string(maxBytes));
    }
    if (value.empty())
        return;
    QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
    const QString decoded =
        decoder.decode(QByteArrayView(value.data(), static_cast<qsizetype>(value.size())));
    if (decoder.hasError())
        throw Error(ErrorCode::InvalidKey, name + " is not valid UTF-8");
    if (decoded.front().isSpace() || decoded.back().isSpace())
        throw Error(ErrorCode::InvalidKey, name + " starts or ends with white space");
    for (const char32_t c : decoded.toUcs4()) {
        if (isUnprintable(c))
            throw Error(ErrorCode::InvalidKey,
                        name + " contains the unprintable character " + codePointName(c));
    }
}

void validateNamespace(std::string_view ns)
{
    if (ns.empty() || ns.size() > MaxNamespaceBytes) {
        throw Error(ErrorCode::InvalidKey, "namespace must be 1.." +
                                               std::to_string(MaxNamespaceBytes) + " bytes, not " +
                                               std::to_string(ns.size()));
    }
    for (const char c : ns) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok) {
            throw Error(ErrorCode::InvalidKey,
                        "namespace may hold only letters, digits, '.', '_' and '-', not " +
                            codePointName(static_cast<unsigned char>(c)));
        }
    }
}

} // namespace idempo
