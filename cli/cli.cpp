// SPDX-License-Identifier: Apache-2.0
#include "cli.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <QStringDecoder>

#include "context.h"
#include "error.h"
#include "helptext.h"
#include "optionvalue.h"
#include "output.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

/// The command table: every group adds its own rows.
std::map<QString, Command> commands()
{
    std::map<QString, Command> table;
    addOperationCommands(table);
    addMetricsCommands(table);
    addQueueCommands(table);
    addGuardedCommands(table);
    addSandboxCommands(table);
    addRunCommands(table);
    addBulkCommands(table);
    addEvidenceCommands(table);
    return table;
}

std::vector<QCommandLineOption> globalOptions()
{
    return {opt("ledger",
                "Ledger URL: sqlite:PATH (default $IDEMPO_LEDGER, else the embedded ledger).",
                "URL"),
            opt("namespace", "Key namespace (default $IDEMPO_NAMESPACE, else 'default').", "NS"),
            opt("json", "Print one JSON object on stdout."),
            opt("retention", "Keep final records this many seconds (default 86400).", "S"),
            opt("verbose", "Log engine activity on stderr.")};
}

HelpOption helpOption(const QCommandLineOption &o)
{
    return {o.names().first().toStdString(), o.valueName().toStdString(),
            o.description().toStdString()};
}

HelpCommand helpCommand(const Command &command)
{
    HelpCommand help{command.synopsis, command.summary, {}};
    for (const QCommandLineOption &o : command.options)
        help.options.push_back(helpOption(o));
    return help;
}

HelpDocument helpDocument(const std::map<QString, Command> &all)
{
    HelpDocument help;
    for (const auto &[name, command] : all)
        help.commands.push_back(helpCommand(command));
    for (const QCommandLineOption &o : globalOptions())
        help.globals.push_back(helpOption(o));
    return help;
}

void reportError(bool json, const std::string &code, const std::string &message)
{
    if (json)
        printJson({{"error", code}, {"message", message}});
    printErr("idempo: " + message);
}

/// The first pass's parser: the global options, --help, --version and --help-man up to the
/// command word; the rest is the command's.
void addFirstPassOptions(QCommandLineParser &first, const std::vector<QCommandLineOption> &globals)
{
    for (const auto &o : globals)
        first.addOption(o);
    first.addOption(opt("help", "Show help."));
    first.addOption(opt("version", "Show the version."));
    first.addOption(opt(
        "help-man", "Print the help as a man page (roff); the build installs it as idempo(1)."));
    first.setOptionsAfterPositionalArgumentsMode(QCommandLineParser::ParseAsPositionalArguments);
}

/// The answer to a command line that names no command to run: the version, the man page or
/// the help, or a usage error for a missing command; its exit status. Nothing when a command
/// is to run.
std::optional<int> answerWithoutCommand(const QCommandLineParser &first,
                                        const std::map<QString, Command> &all, bool wantsJson)
{
    if (first.isSet(QStringLiteral("version"))) {
        printOut("idempo " IDEMPO_VERSION);
        return ExitOk;
    }
    if (first.isSet(QStringLiteral("help-man"))) {
        printOut(manPage(helpDocument(all), IDEMPO_VERSION));
        return ExitOk;
    }
    const QStringList rest = first.positionalArguments();
    if (rest.isEmpty() && wantsJson) {
        reportError(true, "usage", "no command given (see idempo --help)");
        return ExitUsage;
    }
    if (rest.isEmpty() || first.isSet(QStringLiteral("help"))) {
        (rest.isEmpty() && !first.isSet(QStringLiteral("help")) ? printErr : printOut)(
            helpText(helpDocument(all)));
        return first.isSet(QStringLiteral("help")) ? ExitOk : ExitUsage;
    }
    return std::nullopt;
}

/// A command's option taking one value given twice would silently take the last: a reason
/// typed twice, two decisions. Only the list options repeat. The global options (--ledger,
/// --namespace) may be given again to override what a wrapper or alias set. The problem with
/// the first such option of `command`, or empty.
std::string repeatedOptionProblem(const Command &command, const QCommandLineParser &parser,
                                  const std::string &name)
{
    for (const QCommandLineOption &o : command.options) {
        const QString option = o.names().constFirst();
        if (o.valueName().isEmpty() || option == QLatin1String("fingerprint-fields") ||
            option == QLatin1String("where"))
            continue;
        const QStringList given = parser.values(option);
        if (given.size() > 1)
            return "--" + option.toStdString() + " is given " + std::to_string(given.size()) +
                   " times (" + quotedValue(given.first().toStdString()) + ", " +
                   quotedValue(given.at(1).toStdString()) + (given.size() > 2 ? ", …" : "") +
                   "): give it once (see idempo " + name + " --help)";
    }
    return {};
}

/// Parses the whole command line for `command` (named `name`) into `c`: its options beside the
/// global ones, at most its positional arguments, each single-valued option once. The exit
/// status when that ends the run (its --help, a usage error); nothing when the command is to
/// run.
std::optional<int> parseCommandLine(Context &c, const Command &command, const std::string &name,
                                    const std::vector<QCommandLineOption> &globals,
                                    const QStringList &arguments, bool wantsJson)
{
    for (const auto &o : globals)
        c.parser.addOption(o);
    for (const auto &o : command.options)
        c.parser.addOption(o);
    c.parser.addOption(opt("help", "Show help."));
    if (!c.parser.parse(arguments)) {
        reportError(wantsJson, "usage",
                    c.parser.errorText().toStdString() + " (see idempo " + name + " --help)");
        return ExitUsage;
    }
    if (c.parser.isSet(QStringLiteral("help"))) {
        printOut(commandHelpText(helpCommand(command)));
        return ExitOk;
    }
    c.json = c.parser.isSet(QStringLiteral("json"));
    if (const std::string problem = repeatedOptionProblem(command, c.parser, name);
        !problem.empty()) {
        reportError(c.json, "usage", problem);
        return ExitUsage;
    }
    const QStringList positionals = c.parser.positionalArguments();
    if (positionals.size() > command.arguments + 1) {
        reportError(c.json, "usage",
                    "unexpected argument " +
                        quotedValue(positionals.at(command.arguments + 1).toStdString()) +
                        " (see idempo " + name + " --help)");
        return ExitUsage;
    }
    return std::nullopt;
}

/// Runs `command` (named `name`); an exception it ends with is reported as its error, with the
/// exit status for it.
int runHandler(const Command &command, Context &c, const std::string &name)
{
    try {
        return command.handler(c);
    } catch (const UsageError &e) {
        reportError(c.json, "usage", e.message + " (see idempo " + name + " --help)");
        return ExitUsage;
    } catch (const Error &e) {
        reportError(c.json, errorCodeName(e.code()), e.what());
        return exitFor(e.code());
    } catch (const std::exception &e) {
        reportError(c.json, "internal", e.what());
        return ExitInternal;
    }
}

} // namespace

int run(int argc, char **argv)
{
    QStringList arguments;
    for (int i = 0; i < argc; ++i) {
        const QByteArrayView raw(argv[i]);
        QStringDecoder decoder(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
        const QString decoded = decoder.decode(raw);
        if (decoder.hasError()) {
            // Decoding would turn every invalid byte into U+FFFD and merge different keys.
            bool json = false;
            for (int j = 1; j < argc; ++j)
                json = json || QByteArrayView(argv[j]) == "--json";
            // Name the option whose value it is: "--where /a=<bytes>" or "--where=<bytes>".
            const std::string previous = i > 1 ? argv[i - 1] : "";
            const std::string own(raw.data(), static_cast<std::size_t>(raw.size()));
            std::string what = "argument " + std::to_string(i);
            if (own.rfind("--", 0) == 0 && own.find('=') != std::string::npos)
                what = "the value of " + own.substr(0, own.find('=')) + " (" + what + ")";
            else if (previous.rfind("--", 0) == 0 && previous.find('=') == std::string::npos)
                what = "the value of " + previous + " (" + what + ")";
            reportError(json, "invalid_argument", what + " is not valid UTF-8");
            return ExitRefused;
        }
        arguments << decoded;
    }
    return run(arguments);
}

int run(const QStringList &arguments)
{
    captureQtMessages();
    const auto all = commands();
    const auto globals = globalOptions();

    // First pass: global options up to the command word; the rest is the command's.
    QCommandLineParser first;
    addFirstPassOptions(first, globals);
    const bool wantsJson = arguments.contains(QStringLiteral("--json"));
    if (!first.parse(arguments)) {
        reportError(wantsJson, "usage", first.errorText().toStdString() + " (see idempo --help)");
        return ExitUsage;
    }
    if (const std::optional<int> status = answerWithoutCommand(first, all, wantsJson))
        return *status;
    const QString word = first.positionalArguments().first();
    const auto found = all.find(word);
    if (found == all.end()) {
        reportError(wantsJson, "usage",
                    "unknown command " + quotedValue(word.toStdString()) + " (see idempo --help)");
        return ExitUsage;
    }
    const Command &command = found->second;
    const std::string name = word.toStdString();

    Context c;
    if (const std::optional<int> status =
            parseCommandLine(c, command, name, globals, arguments, wantsJson))
        return *status;
    QString ns = c.parser.value(QStringLiteral("namespace"));
    if (ns.isEmpty())
        ns = qEnvironmentVariable("IDEMPO_NAMESPACE", QStringLiteral("default"));
    c.ns = ns.toStdString();
    setUpLogging(c.parser.isSet(QStringLiteral("verbose")));
    return runHandler(command, c, name);
}

} // namespace idempo::cli
