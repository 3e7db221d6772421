// SPDX-License-Identifier: Apache-2.0
// `idempo bulk`: approve, reject or reconcile a counted, frozen set (bulkcommand.h). The set is
// frozen before anything is written, and the count the operator expects must match it.
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>

#include "bulkcommand.h"
#include "context.h"
#include "guardedactionbuilder.h"
#include "journallookup.h"
#include "optionvalue.h"
#include "output.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

std::atomic<bool> g_stopBulk{false};

/// Progress lines on stderr every this many operations, for sets larger than it.
constexpr std::int64_t ProgressEvery = 25;

/// The lines of `--keys FILE`, read before the ledger is opened: a path that is not a readable
/// file (absent, a directory, unreadable) is a slip of the command line.
std::vector<std::string> keyLines(const std::string &path)
{
    std::error_code error;
    if (std::filesystem::is_directory(path, error))
        throw UsageError{"--keys: cannot read " + quotedValue(path) + ": it is a directory"};
    std::ifstream in(path);
    if (!in)
        throw UsageError{"--keys: cannot read " + quotedValue(path)};
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(std::move(line));
    if (in.bad())
        throw UsageError{"--keys: cannot read " + quotedValue(path)};
    return lines;
}

/// The set of `--keys FILE`: one operation a line, `KEY` or `KEY<TAB>VERSION` (the version seen;
/// without it, the version read now, which BulkCommand takes for the version of this operator's
/// own earlier act when that act made the operation what it is), in namespace `ns`; further
/// tab-separated columns are ignored. Blank lines are skipped. A line naming no operation, or a
/// version that is not a whole number, refuses the whole run.
std::vector<BulkTarget> targetsFromFile(LedgerStore &store, const std::string &ns,
                                        std::vector<std::string> lines)
{
    std::vector<BulkTarget> targets;
    int number = 0;
    for (std::string &line : lines) {
        ++number;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos)
            continue;
        const std::size_t tab = line.find('\t');
        const std::string key = line.substr(0, tab);
        const std::size_t end = tab == std::string::npos ? tab : line.find('\t', tab + 1);
        const std::optional<Operation> op = store.find(ns, key);
        if (!op)
            throw Error(ErrorCode::NotFound, "--keys line " + std::to_string(number) +
                                                 ": no operation " + quotedValue(key) +
                                                 " in namespace '" + ns + "'");
        const std::int64_t version =
            tab == std::string::npos
                ? op->version
                : parseWholeNumber(
                      "the version on --keys line " + std::to_string(number),
                      line.substr(tab + 1, end == std::string::npos ? end : end - tab - 1), 0,
                      MaxWholeNumber);
        targets.push_back({ns, key, version});
    }
    return targets;
}

/// How the command line names the set, read and checked before the ledger is opened.
struct SetSpec
{
    std::optional<std::vector<std::string>> keyLines; ///< --keys FILE
    ListFilter filter;                                ///< otherwise: a filter, or --all
};

SetSpec setSpec(const Context &c)
{
    const bool byFile = c.parser.isSet(QStringLiteral("keys"));
    const bool byFilter = c.parser.isSet(QStringLiteral("state")) ||
                          c.parser.isSet(QStringLiteral("run")) ||
                          c.parser.isSet(QStringLiteral("key-prefix"));
    const bool all = c.parser.isSet(QStringLiteral("all"));
    if (byFile && byFilter)
        throw UsageError{"give the set once: --keys FILE or a filter (--state, --run, "
                         "--key-prefix), not both"};
    if (all && (byFile || byFilter))
        throw UsageError{"--all is the whole namespace: give it alone, not with --keys or a "
                         "filter"};
    // Everything the action takes in the namespace is the widest set there is: it must be asked
    // for, never what a forgotten filter falls back to.
    if (!all && !byFile && !byFilter)
        throw UsageError{"give the set: --keys FILE, a filter (--state, --run, --key-prefix), "
                         "or --all for every operation of namespace '" +
                         c.ns + "' the action takes"};
    SetSpec spec;
    if (byFile) {
        spec.keyLines = keyLines(c.parser.value(QStringLiteral("keys")).toStdString());
        return spec;
    }
    spec.filter.ns = c.ns;
    if (c.parser.isSet(QStringLiteral("state"))) {
        spec.filter.state = parseState(c.parser.value(QStringLiteral("state")).toStdString());
        if (!spec.filter.state)
            throw UsageError{"unknown --state " +
                             quotedValue(c.parser.value(QStringLiteral("state")).toStdString())};
    }
    spec.filter.runId = c.filterOption(QStringLiteral("run"));
    spec.filter.keyPrefix = c.filterOption(QStringLiteral("key-prefix"));
    return spec;
}

std::vector<BulkTarget> frozenSet(Context &c, SetSpec spec, BulkAction action)
{
    LedgerStore &store = c.engine().store();
    if (spec.keyLines)
        return targetsFromFile(store, c.ns, std::move(*spec.keyLines));
    return BulkCommand::freeze(store, spec.filter, action);
}

std::string itemLine(const BulkItem &item)
{
    return escapedText(item.target.key) + "  " + std::string(bulkResultName(item.result)) +
           (item.state.empty() ? std::string() : "  " + item.state) + "  " +
           escapedText(item.detail);
}

int cmdBulk(Context &c)
{
    const std::string name =
        c.positional(1, "bulk action (approve, reject or reconcile)").toStdString();
    const std::optional<BulkAction> action = parseBulkAction(name);
    if (!action)
        throw UsageError{"unknown bulk action " + quotedValue(name) +
                         ": expected approve, reject or reconcile"};
    const bool dryRun = c.parser.isSet(QStringLiteral("dry-run"));
    if (!dryRun && !c.parser.isSet(QStringLiteral("expect-count")))
        throw UsageError{"missing --expect-count N: the number of operations you expect the set "
                         "to hold (see it with --dry-run)"};
    SetSpec spec = setSpec(c);
    BulkCommand::Request request;
    request.action = *action;
    if (c.parser.isSet(QStringLiteral("rate")))
        request.ratePerSecond =
            parseNumber("--rate", c.parser.value(QStringLiteral("rate")).toStdString(), 0.001,
                        BulkCommand::MaxRatePerSecond, "operations per second");
    if (!dryRun) {
        request.confirmCount =
            c.integerOption(QStringLiteral("expect-count"), 0, BulkCommand::MaxTargets);
        request.reason = requiredReason(c);
    }
    request.targets = frozenSet(c, std::move(spec), *action);
    LedgerStore &store = c.engine().store();
    const auto lookup = *action == BulkAction::Reconcile ? openProviderLookup(store) : nullptr;
    PacedRun::Hooks pacing;
    pacing.cancelled = [] { return g_stopBulk.load(); };
    pacing.progress = [name](std::int64_t done, std::int64_t total) {
        if (total > ProgressEvery && (done % ProgressEvery == 0 || done == total))
            printErr("bulk " + name + ": " + std::to_string(done) + " of " + std::to_string(total) +
                     " done");
    };
    BulkCommand command = GuardedActionBuilder(c.engine().settings())
                              .bulk(store, store.actor(), request, lookup.get(), pacing);
    if (dryRun) {
        const ActionPreview preview = command.describe();
        std::string human = preview.sentence;
        for (const auto &t : preview.details.at("targets"))
            human += "\n  " + escapedText(t.at("key").get<std::string>()) + "  version " +
                     t.at("version").dump() + "  " + t.at("state").get<std::string>();
        // Suggest only a command that would be taken: an empty set or a rule that already says
        // no (the role, a missing lookup) is named instead.
        const std::vector<std::string> problems = command.dryRunProblems();
        if (preview.details.at("count") == 0)
            human += "\n(dry run: the set is empty, nothing to " + name + ")";
        else if (preview.details.at("already_done") == preview.details.at("count"))
            human +=
                "\n(dry run: you did every operation of the set before: nothing to " + name + ")";
        else if (preview.details.at("not_taken") == preview.details.at("count"))
            human += "\n(dry run: no operation of the set is in a state " + name +
                     " takes: nothing to act on)";
        else if (!problems.empty())
            human += "\n(dry run: nothing written; acting would be refused: " +
                     escapedText(problems.front()) + ")";
        else
            human += "\n(dry run: nothing written; act with --expect-count " +
                     preview.details.at("count").dump() + " --reason TEXT)";
        c.print({{"dry_run", true}, {"action", preview.sentence}, {"preview", preview.details}},
                human);
        return ExitOk;
    }
    requireValid(command.validate());
    const ActionPreview preview = command.describe();
    std::signal(SIGINT, [](int) { g_stopBulk = true; });
    const BulkOutcome outcome = command.execute();
    std::signal(SIGINT, SIG_DFL);
    std::string human = preview.sentence;
    for (const BulkItem &item : outcome.items)
        human += "\n" + itemLine(item);
    human += "\n" + outcome.text();
    c.print({{"action", preview.sentence}, {"result", outcome.toJson()}}, human);
    // Scripts learn that some operations were not acted on; the others stand.
    return outcome.tally(BulkResult::Refused) + outcome.tally(BulkResult::SkippedChanged) > 0 ||
                   outcome.cancelled
               ? ExitRefused
               : ExitOk;
}

} // namespace

void addBulkCommands(std::map<QString, Command> &table)
{
    table.insert(
        {QStringLiteral("bulk"),
         {1,
          "bulk approve|reject|reconcile --reason TEXT --expect-count N [--state S] [--run R] "
          "[--key-prefix P | --keys FILE | --all] [--rate N] [--dry-run]",
          "Approve (dispatch again), reject or reconcile a set of operations, each through its "
          "own guarded\n"
          "action with its own audit record. The set is frozen first: everything the filter "
          "matches that\n"
          "the action takes, the operations of --keys FILE (a line each: KEY, or "
          "KEY<TAB>VERSION from\n"
          "the targets of `--dry-run --json`), or with --all (required without a filter) every "
          "operation\n"
          "of the namespace the action takes. Nothing is written unless it holds "
          "exactly --expect-count "
          "operations.\n"
          "One that changed since it was frozen is skipped; one you decided or reconciled "
          "before is\n"
          "answered with the first decision. Exit 65 when any was refused or skipped (the others "
          "stand);\n"
          "Ctrl-C stops after the current operation.",
          {opt("reason", "Why (required).", "TEXT"),
           opt("expect-count", "The number of operations the set must hold.", "N"),
           opt("state", "Only this state.", "S"), opt("run", "Only this run.", "R"),
           opt("key-prefix", "Only keys starting with P.", "P"),
           opt("keys", "The set: a file of keys, one a line.", "FILE"),
           opt("all", "The set: every operation of the namespace the action takes (needed "
                      "when no filter or --keys is given)."),
           opt("rate", "Operations per second (default 20, at most 500).", "N"),
           opt("dry-run", "Freeze and show the set; write nothing.")},
          cmdBulk}});
}

} // namespace idempo::cli
