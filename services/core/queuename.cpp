// SPDX-License-Identifier: Apache-2.0
#include "queuename.h"

#include <cstdio>

#include "error.h"

namespace idempo {
namespace {

/// The character as it may be quoted in a message: itself when printable ASCII, else \xNN.
std::string shown(char c)
{
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f)
        return std::string("'") + c + "'";
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", byte);
    return hex;
}

bool isLower(char c)
{
    return c >= 'a' && c <= 'z';
}
bool isDigit(char c)
{
    return c >= '0' && c <= '9';
}

} // namespace

QueueName::QueueName(std::string_view name)
{
    if (name.empty())
        throw Error(ErrorCode::InvalidArgument, "queue name is empty");
    if (name.size() > MaxLength) {
        throw Error(ErrorCode::InvalidArgument, "queue name is " + std::to_string(name.size()) +
                                                    " characters long; at most " +
                                                    std::to_string(MaxLength) + " are allowed");
    }
    if (!isLower(name.front())) {
        throw Error(ErrorCode::InvalidArgument,
                    "queue name must start with a lowercase letter, not " + shown(name.front()));
    }
    for (std::size_t i = 1; i < name.size(); ++i) {
        const char c = name[i];
        if (!isLower(c) && !isDigit(c) && c != '_') {
            throw Error(ErrorCode::InvalidArgument,
                        "queue name may hold only lowercase letters, digits and "
                        "'_'; found " +
                            shown(c) + " at position " + std::to_string(i));
        }
    }
    m_name = name;
}

bool QueueName::isDeadLetterName() const
{
    return m_name.ends_with(DeadLetterSuffix);
}

QueueName QueueName::deadLetterQueue() const
{
    if (isDeadLetterName()) {
        throw Error(ErrorCode::InvalidArgument, "queue '" + m_name + "': names ending in '" +
                                                    std::string(DeadLetterSuffix) +
                                                    "' are reserved for dead-letter queues");
    }
    if (m_name.size() > MaxLengthWithDeadLetters) {
        throw Error(ErrorCode::InvalidArgument,
                    "queue name '" + m_name + "' leaves no room for its dead-letter queue '" +
                        m_name + std::string(DeadLetterSuffix) + "': at most " +
                        std::to_string(MaxLengthWithDeadLetters) + " characters");
    }
    return QueueName(m_name + std::string(DeadLetterSuffix));
}

} // namespace idempo
