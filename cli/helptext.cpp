// SPDX-License-Identifier: Apache-2.0
#include "helptext.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include <QList>
#include <QString>

namespace idempo::cli {
namespace {

const char *const kUsage = "idempo [--ledger URL] [--namespace NS] [--json] COMMAND [ARGS]";
const char *const kPurpose = "Runs each consequential step of an agent workflow at most once.";

/// A term and what it means; a '\n' in the meaning breaks the line in the help text.
struct Entry
{
    const char *term;
    const char *meaning;
};

const Entry kEnvironment[] = {
    {"IDEMPO_LEDGER", "The ledger URL when --ledger is not given."},
    {"IDEMPO_NAMESPACE", "The key namespace when --namespace is not given."},
    {"IDEMPO_LOG_LEVEL", "What the engine logs on stderr without --verbose: trace, debug, info,\n"
                         "warn (default), err, critical or off."},
};

const Entry kExitCodes[] = {
    {"0", "done (including outcomes claimed and replayed, and a first four-eyes approval or\n"
          "run action recorded as pending: a second identity applies it)"},
    {"64", "usage error: unknown command or option, missing or malformed argument, a number\n"
           "out of its range"},
    {"65", "refused input or write: payload_mismatch, projection_mismatch, invalid key or\n"
           "JSON, payload too large, stale_lease, illegal transition, unknown key"},
    {"69", "ledger unreachable, unusable or not writable (lost connection, full disk, read-only\n"
           "file; a newer schema, or an older one opened read-only)"},
    {"70", "internal error"},
    {"75", "do not execute now: in_progress, retry_later, reconcile_required, budget_exhausted\n"
           "(the run is halted until a person resumes it); in_progress also for a DLQ replay\n"
           "whose dead letters another open replay holds (named, with who and since when);\n"
           "or ledger_busy (locked, nothing written): try again"},
};

const char *const kGuardedExits =
    "Guarded actions (approve, reject, reconcile, dlq replay, four-eyes, run resume, run budget,\n"
    "run defaults) exit 65 when a rule\n"
    "refuses them (role, four-eyes, a missing or blank reason, unconfirmed count) and 69 when\n"
    "the database refuses the role.";

/// `text` with every line after the first indented by `indent`.
std::string indented(const std::string &text, const std::string &indent)
{
    std::string out;
    for (const char ch : text) {
        out += ch;
        if (ch == '\n')
            out += indent;
    }
    return out;
}

std::string optionText(const HelpOption &o)
{
    return "  --" + o.name + (o.valueName.empty() ? "" : " " + o.valueName) + "\n      " +
           indented(o.description, "      ") + '\n';
}

std::string entriesText(const char *title, const Entry *begin, const Entry *end, int width)
{
    std::string s = std::string(title) + ":\n";
    for (const Entry *e = begin; e != end; ++e) {
        std::string term = "  " + std::string(e->term);
        term.resize(static_cast<std::size_t>(width), ' ');
        s += term + indented(e->meaning, std::string(static_cast<std::size_t>(width), ' ')) + '\n';
    }
    return s;
}

std::string exitCodesText()
{
    return entriesText("Exit codes", std::begin(kExitCodes), std::end(kExitCodes), 6) +
           kGuardedExits;
}

/// Text as roff reads it literally: backslashes and hyphens escaped, a leading '.' or '\''
/// defused, every character beyond ASCII as \[u followed by four hex digits].
std::string roff(const std::string &text)
{
    std::string out;
    bool lineStart = true;
    for (const char32_t c :
         QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())).toUcs4()) {
        if (lineStart && (c == '.' || c == '\''))
            out += "\\&";
        lineStart = c == '\n';
        if (c == '\\') {
            out += "\\e";
        } else if (c == '-') {
            out += "\\-";
        } else if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            char escape[16];
            std::snprintf(escape, sizeof escape, "\\[u%04X]", static_cast<unsigned>(c));
            out += escape;
        }
    }
    return out;
}

/// A paragraph of filled text: the help's line breaks become spaces.
std::string filled(const std::string &text)
{
    std::string out = text;
    for (char &ch : out)
        if (ch == '\n')
            ch = ' ';
    return roff(out);
}

/// Lines kept as they are (the help's aligned tables), each in `font` when given.
std::string unfilled(const std::string &text, const char *font = nullptr)
{
    std::string out = ".nf\n";
    std::size_t from = 0;
    while (from <= text.size()) {
        const std::size_t to = std::min(text.find('\n', from), text.size());
        const std::string line = roff(text.substr(from, to - from));
        out += (font ? std::string("\\f") + font + line + "\\fR" : line) + '\n';
        from = to + 1;
    }
    return out + ".fi\n";
}

std::string manOptions(const std::vector<HelpOption> &options)
{
    std::string s;
    for (const HelpOption &o : options)
        s += ".TP\n\\fB\\-\\-" + roff(o.name) + "\\fR" +
             (o.valueName.empty() ? "" : " \\fI" + roff(o.valueName) + "\\fR") + '\n' +
             filled(o.description) + '\n';
    return s;
}

std::string manEntries(const Entry *begin, const Entry *end)
{
    std::string s;
    for (const Entry *e = begin; e != end; ++e)
        s += ".TP\n.B " + roff(e->term) + '\n' + filled(e->meaning) + '\n';
    return s;
}

} // namespace

std::string helpText(const HelpDocument &help)
{
    std::string s = std::string("Usage: ") + kUsage + "\n\n" + kPurpose + "\n\nCommands:\n";
    for (const HelpCommand &command : help.commands)
        s += "  " + command.synopsis + "\n      " + indented(command.summary, "      ") + '\n';
    s += "\nGlobal options:\n";
    for (const HelpOption &o : help.globals)
        s += optionText(o);
    s += "\nRun 'idempo COMMAND --help' for a command's options.\n\n";
    s += entriesText("Environment", std::begin(kEnvironment), std::end(kEnvironment), 20) + '\n';
    return s + exitCodesText();
}

std::string commandHelpText(const HelpCommand &command)
{
    std::string s =
        "Usage: idempo " + command.synopsis + "\n\n" + command.summary + "\n\nOptions:\n";
    for (const HelpOption &o : command.options)
        s += optionText(o);
    return s + '\n' + exitCodesText();
}

std::string manPage(const HelpDocument &help, std::string_view version)
{
    std::string s = ".\\\" Rendered by 'idempo --help-man' from the text of 'idempo --help'.\n";
    s += ".TH IDEMPO 1 \"\" \"idempo " + roff(std::string(version)) + "\" \"User Commands\"\n";
    s += ".SH NAME\nidempo \\- " +
         roff("run each consequential step of an agent workflow at most once") + '\n';
    s += ".SH SYNOPSIS\n" + unfilled(kUsage, "B");
    s += ".SH DESCRIPTION\n" + roff(kPurpose) + '\n';
    s += ".SH COMMANDS\n";
    for (const HelpCommand &command : help.commands) {
        s += ".PP\n" + unfilled(command.synopsis, "B") + ".RS 4\n" + unfilled(command.summary);
        s += manOptions(command.options) + ".RE\n";
    }
    s += ".SH OPTIONS\n" + manOptions(help.globals);
    s += ".SH ENVIRONMENT\n" + manEntries(std::begin(kEnvironment), std::end(kEnvironment));
    s += ".SH EXIT STATUS\n" + manEntries(std::begin(kExitCodes), std::end(kExitCodes));
    return s + ".PP\n" + filled(kGuardedExits);
}

} // namespace idempo::cli
