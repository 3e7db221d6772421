// SPDX-License-Identifier: Apache-2.0
#pragma once

// What every command group of `idempo` shares (internal to the CLI, not part of cli.h): the
// parsed command line and the ledger it names, the command table's row types, and the helpers
// that turn outcomes and errors into exit codes.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <QCommandLineOption>
#include <QCommandLineParser>
#include <QStringList>

#include "cli.h"
#include "clock.h"
#include "engine.h"
#include "error.h"
#include "ledgerfactory.h"
#include "messagequeue.h"

namespace idempo::cli {

/// The longest duration an option takes: the stores' MaxDurationMs (ten years), in seconds.
constexpr double MaxSeconds = static_cast<double>(MaxDurationMs) / 1000.0;

/// One run of a command: its parsed command line, and the engine and queue of the ledger it
/// names, opened on first use.
class Context final
{
public:
    QCommandLineParser parser;
    bool json = false;
    std::string ns = "default";

    QString ledgerUrl() const;

    /// Only `init` and the embedded default may create a ledger file; a named one must exist.
    /// Commands that only read open an existing ledger read-only, so that they also work on one
    /// nobody may write (an auditor's copy).
    OpenMode openMode() const;

    Engine &engine();
    MessageQueue &queue();

    QString positional(int index, const char *name) const;
    std::string key() const;

    /// A whole-number option within [low, high] (optionvalue.h refuses anything else).
    std::int64_t integerOption(const QString &name, std::int64_t low, std::int64_t high) const;

    /// Whole-number option `name` when given, else `fallback`.
    std::int64_t integerOption(const QString &name, std::int64_t low, std::int64_t high,
                               std::int64_t fallback) const;

    /// The value of search option `name` ("--customer", "--run", ...), empty when it is not
    /// given. Given but empty it throws UsageError naming the option: an empty value is most
    /// often an unset shell variable, and dropping the filter would act on everything.
    std::string filterOption(const QString &name) const;

    /// Seconds (may be fractional) within [low, high] → milliseconds.
    std::int64_t secondsOption(const QString &name, double low, double high) const;

    std::int64_t token() const;

    /// A JSON argument: inline text, `@FILE`, or `@-` for standard input.
    std::string jsonArgument(const QString &name) const;

    void print(const nlohmann::json &j, const std::string &human) const;

private:
    std::unique_ptr<Engine> m_engine;
    std::shared_ptr<MessageQueue> m_queue;
};

using Handler = std::function<int(Context &)>;

/// A row of the command table: what `idempo --help` shows of a command and what runs it.
struct Command
{
    int arguments; ///< positional arguments after the command word
    const char *synopsis;
    const char *summary;
    std::vector<QCommandLineOption> options;
    Handler handler;
};

/// The command table's texts are UTF-8 source literals.
QCommandLineOption opt(const char *name, const char *help, const char *valueName = nullptr);

/// A subcommand of `idempo queue` / `idempo dlq`. The command's parser knows every
/// subcommand's options; each subcommand refuses the others' instead of ignoring them.
struct Subcommand
{
    int arguments;       ///< positional arguments after the subcommand word
    QStringList options; ///< the command's options this subcommand takes
    Handler handler;
};

int dispatch(Context &c, const std::string &command,
             const std::map<QString, Subcommand> &subcommands);

/// A timestamp as the output shows it, "-" for none.
std::string when(std::optional<std::int64_t> ms);

int exitFor(ClaimOutcome outcome);
int exitFor(ErrorCode code);

/// --limit for a browsing subcommand: 1..MaxQueueBatch, default 50.
int pageLimit(const Context &c);

/// --after for a browsing subcommand: 0 (from the start) when not given.
std::int64_t afterId(const Context &c);

/// --reason, required by every guarded action: a rule of the action (exit 65, like the command
/// object's own check), not a slip of the command line.
std::string requiredReason(const Context &c);

/// Refuses with every problem validate() found, nothing written.
void requireValid(const std::vector<std::string> &problems);

// Each command group adds its rows to the command table.

/// init, claim, complete, fail, heartbeat, show, history, list, purge.
void addOperationCommands(std::map<QString, Command> &table);
/// metrics (and metrics serve).
void addMetricsCommands(std::map<QString, Command> &table);
/// queue and dlq.
void addQueueCommands(std::map<QString, Command> &table);
/// approve, reject, reconcile, audit, four-eyes.
void addGuardedCommands(std::map<QString, Command> &table);
/// sandbox, check, worker, bench.
void addSandboxCommands(std::map<QString, Command> &table);
/// run (show, list, resume, budget, sweep, defaults).
void addRunCommands(std::map<QString, Command> &table);
/// bulk (approve, reject, reconcile a frozen set).
void addBulkCommands(std::map<QString, Command> &table);
/// evidence (export, verify).
void addEvidenceCommands(std::map<QString, Command> &table);

} // namespace idempo::cli
