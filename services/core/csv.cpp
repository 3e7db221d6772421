// SPDX-License-Identifier: Apache-2.0
#include "csv.h"

namespace idempo {

std::string csvField(std::string_view text)
{
    if (text.find_first_of(",\"\r\n") == std::string_view::npos)
        return std::string(text);
    std::string quoted = "\"";
    for (const char ch : text) {
        if (ch == '"')
            quoted += '"';
        quoted += ch;
    }
    return quoted + '"';
}

QString csvField(const QString &text)
{
    return QString::fromStdString(csvField(text.toStdString()));
}

} // namespace idempo
