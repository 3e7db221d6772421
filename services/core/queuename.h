// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace idempo {

/// A validated queue name: the only source of the table names `q_<name>` and `a_<name>`, so
/// no table name is ever built from unchecked input. The rule is pgmq's: 1..47 characters of
/// lowercase ASCII letters, digits and '_', starting with a letter.
class QueueName final
{
public:
    /// Longest queue name, in characters (pgmq's limit: its derived index names must fit
    /// PostgreSQL's 63-byte identifiers).
    static constexpr std::size_t MaxLength = 47;
    /// What a queue's dead-letter queue adds to its name.
    static constexpr std::string_view DeadLetterSuffix = "_dlq";
    /// Longest name of a queue that gets a dead-letter queue: `<name>_dlq` must fit MaxLength.
    static constexpr std::size_t MaxLengthWithDeadLetters = MaxLength - DeadLetterSuffix.size();

    /// Throws Error(InvalidArgument) naming the broken rule (empty, too long, first character
    /// not a lowercase letter, or a character outside [a-z0-9_] with its position).
    explicit QueueName(std::string_view name);

    const std::string &str() const { return m_name; }

    /// The message table, `q_<name>`.
    std::string queueTable() const { return "q_" + m_name; }
    /// The archive table, `a_<name>`.
    std::string archiveTable() const { return "a_" + m_name; }

    /// True for names ending in DeadLetterSuffix: reserved for dead-letter queues.
    bool isDeadLetterName() const;

    /// The dead-letter queue of this queue, `<name>_dlq`. Throws Error(InvalidArgument) when
    /// this name is itself a dead-letter name or longer than MaxLengthWithDeadLetters.
    QueueName deadLetterQueue() const;

private:
    std::string m_name;
};

} // namespace idempo
