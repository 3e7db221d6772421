// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace idempo::cli {

/// One option as the help shows it: `--name VALUE` and what it does (UTF-8).
struct HelpOption
{
    std::string name;
    std::string valueName; ///< empty for a flag
    std::string description;
};

/// One command of the command table: its synopsis (lines after the first are continuations),
/// its summary (lines as they are printed) and its options.
struct HelpCommand
{
    std::string synopsis;
    std::string summary;
    std::vector<HelpOption> options;
};

/// Everything `idempo --help` says, from the command table. The man page is rendered from the
/// same document, so the two cannot drift.
struct HelpDocument
{
    std::vector<HelpCommand> commands;
    std::vector<HelpOption> globals;
};

// Each text ends without a line break: the printer adds it.

/// `idempo --help`: usage, every command's synopsis and summary, the global options, the
/// environment and the exit codes.
std::string helpText(const HelpDocument &help);

/// `idempo COMMAND --help`: the command's synopsis, summary and options, and the exit codes.
std::string commandHelpText(const HelpCommand &command);

/// The same document as a man page (roff, man macros) for section 1; `version` goes in the
/// title line.
std::string manPage(const HelpDocument &help, std::string_view version);

} // namespace idempo::cli
