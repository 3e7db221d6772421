// SPDX-License-Identifier: Apache-2.0
#include "keyprefix.h"

#include <QList>
#include <QString>
#include <QStringDecoder>

namespace idempo {
namespace {

constexpr char32_t MaxCodePoint = 0x10FFFF;

std::optional<std::u32string> decodeUtf8(std::string_view bytes)
{
    QStringDecoder decoder(QStringDecoder::Utf8, QStringConverter::Flag::Stateless);
    const QString text =
        decoder(QByteArrayView(bytes.data(), static_cast<qsizetype>(bytes.size())));
    if (decoder.hasError())
        return std::nullopt;
    const QList<uint> ucs4 = text.toUcs4();
    return std::u32string(ucs4.begin(), ucs4.end());
}

std::string encodeUtf8(const std::u32string &codePoints)
{
    const QString text =
        QString::fromUcs4(codePoints.data(), static_cast<qsizetype>(codePoints.size()));
    return text.toStdString();
}

std::optional<std::string> byteSuccessor(std::string_view prefix)
{
    std::string bound(prefix);
    while (!bound.empty() && static_cast<unsigned char>(bound.back()) == 0xFF)
        bound.pop_back();
    if (bound.empty())
        return std::nullopt;
    bound.back() = static_cast<char>(static_cast<unsigned char>(bound.back()) + 1);
    return bound;
}

} // namespace

std::optional<std::string> keyPrefixUpperBound(std::string_view prefix)
{
    std::optional<std::u32string> codePoints = decodeUtf8(prefix);
    if (!codePoints)
        return byteSuccessor(prefix);
    // UTF-8 keeps code point order in byte order, so the next code point bounds every
    // continuation of the prefix and no valid key lies between the two.
    while (!codePoints->empty() && codePoints->back() == MaxCodePoint)
        codePoints->pop_back();
    if (codePoints->empty())
        return std::nullopt;
    char32_t &last = codePoints->back();
    last = last == 0xD7FF ? char32_t(0xE000) : last + 1;
    return encodeUtf8(*codePoints);
}

} // namespace idempo
