// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QString>

#include <string>
#include <string_view>

namespace idempo {

/// One CSV field (RFC 4180): as it is, or in double quotes with its quotes doubled when it
/// holds a comma, a double quote, a carriage return or a line feed.
std::string csvField(std::string_view text);

/// csvField() of UTF-16 text, for the console's exports.
QString csvField(const QString &text);

} // namespace idempo
