// SPDX-License-Identifier: Apache-2.0
#include "context.h"

#include <cstdio>

#include <QFile>
#include <QFileInfo>

#include "optionvalue.h"
#include "output.h"
#include "queuerules.h"
#include "recordjson.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {

QString Context::ledgerUrl() const
{
    QString url = parser.value(QStringLiteral("ledger"));
    if (url.isEmpty())
        url = qEnvironmentVariable("IDEMPO_LEDGER");
    if (url.isEmpty())
        url = defaultLedgerUrl();
    return url;
}

OpenMode Context::openMode() const
{
    const bool named =
        parser.isSet(QStringLiteral("ledger")) || !qEnvironmentVariableIsEmpty("IDEMPO_LEDGER");
    const QStringList args = parser.positionalArguments();
    const QString command = args.value(0);
    const QString sub = args.value(1);
    const bool reads = command == QLatin1String("show") || command == QLatin1String("history") ||
                       command == QLatin1String("list") || command == QLatin1String("metrics") ||
                       command == QLatin1String("check") || command == QLatin1String("evidence") ||
                       (command == QLatin1String("audit") &&
                        (sub == QLatin1String("verify") || sub == QLatin1String("list") ||
                         sub == QLatin1String("export"))) ||
                       (command == QLatin1String("queue") &&
                        (sub == QLatin1String("list") || sub == QLatin1String("metrics"))) ||
                       (command == QLatin1String("dlq") && sub == QLatin1String("list"));
    if (reads && (named || QFileInfo::exists(defaultLedgerUrl().mid(7))))
        return OpenMode::ReadOnly;
    return !named || command == QLatin1String("init") ? OpenMode::CreateIfMissing
                                                      : OpenMode::OpenExisting;
}

Engine &Context::engine()
{
    if (!m_engine) {
        Engine::Settings settings;
        if (parser.isSet(QStringLiteral("retention")))
            settings.retentionMs = secondsOption(QStringLiteral("retention"),
                                                 Engine::MinRetentionMs / 1000.0, MaxSeconds);
        m_engine = std::make_unique<Engine>(openLedger(ledgerUrl(), nullptr, openMode()), settings,
                                            RetryPolicy{});
    }
    return *m_engine;
}

MessageQueue &Context::queue()
{
    if (!m_queue)
        m_queue = openQueue(ledgerUrl(), nullptr, openMode());
    return *m_queue;
}

QString Context::positional(int index, const char *name) const
{
    const QStringList args = parser.positionalArguments();
    if (index >= args.size())
        throw UsageError{std::string("missing ") + name};
    return args.at(index);
}

std::string Context::key() const
{
    return positional(1, "KEY").toStdString();
}

std::int64_t Context::integerOption(const QString &name, std::int64_t low, std::int64_t high) const
{
    return parseWholeNumber("--" + name.toStdString(), parser.value(name).toStdString(), low, high);
}

std::int64_t Context::integerOption(const QString &name, std::int64_t low, std::int64_t high,
                                    std::int64_t fallback) const
{
    return parser.isSet(name) ? integerOption(name, low, high) : fallback;
}

std::string Context::filterOption(const QString &name) const
{
    if (!parser.isSet(name))
        return {};
    std::string value = parser.value(name).toStdString();
    if (value.empty())
        throw UsageError{"--" + name.toStdString() +
                         " is empty: give a value to search for, or leave the option out"};
    return value;
}

std::int64_t Context::secondsOption(const QString &name, double low, double high) const
{
    return parseSeconds("--" + name.toStdString(), parser.value(name).toStdString(), low, high);
}

std::int64_t Context::token() const
{
    if (!parser.isSet(QStringLiteral("token")))
        throw UsageError{"missing --token (the fencing token the claim returned)"};
    return integerOption(QStringLiteral("token"), 1, MaxWholeNumber);
}

std::string Context::jsonArgument(const QString &name) const
{
    const QString value = parser.value(name);
    if (!value.startsWith(QLatin1Char('@')))
        return value.toStdString();
    QFile file;
    const QString path = value.mid(1);
    const bool opened = path == QLatin1String("-")
                            ? file.open(stdin, QIODevice::ReadOnly)
                            : (file.setFileName(path), file.open(QIODevice::ReadOnly));
    if (!opened)
        throw UsageError{"cannot read --" + name.toStdString() + " file '" + path.toStdString() +
                         "': " + file.errorString().toStdString()};
    // One byte over the limit is enough for the engine to refuse it; /dev/zero must not fill
    // memory.
    return file.read(static_cast<qint64>(Engine::Settings{}.maxPayloadBytes) + 1).toStdString();
}

void Context::print(const nlohmann::json &j, const std::string &human) const
{
    if (json)
        printJson(j);
    else
        printOut(human);
}

QCommandLineOption opt(const char *name, const char *help, const char *valueName)
{
    return valueName ? QCommandLineOption(QString::fromUtf8(name), QString::fromUtf8(help),
                                          QString::fromUtf8(valueName))
                     : QCommandLineOption(QString::fromUtf8(name), QString::fromUtf8(help));
}

int dispatch(Context &c, const std::string &command,
             const std::map<QString, Subcommand> &subcommands)
{
    const QString word = c.positional(1, "subcommand");
    const auto found = subcommands.find(word);
    if (found == subcommands.end())
        throw UsageError{"unknown subcommand '" + command + " " + escapedText(word.toStdString()) +
                         "'"};
    const Subcommand &sub = found->second;
    const QStringList positionals = c.parser.positionalArguments();
    if (positionals.size() > sub.arguments + 2)
        throw UsageError{"unexpected argument " +
                         quotedValue(positionals.at(sub.arguments + 2).toStdString())};
    for (const auto &[otherWord, other] : subcommands)
        for (const QString &name : other.options)
            if (c.parser.isSet(name) && !sub.options.contains(name))
                throw UsageError{"--" + name.toStdString() + " does not apply to '" + command +
                                 " " + word.toStdString() + "'"};
    return sub.handler(c);
}

std::string when(std::optional<std::int64_t> ms)
{
    const auto j = timestampJson(ms);
    return j.is_null() ? std::string("-") : j.get<std::string>();
}

int exitFor(ClaimOutcome outcome)
{
    switch (outcome) {
    case ClaimOutcome::Claimed:
    case ClaimOutcome::Replayed:
        return ExitOk;
    case ClaimOutcome::PayloadMismatch:
        return ExitRefused;
    case ClaimOutcome::InProgress:
    case ClaimOutcome::RetryLater:
    case ClaimOutcome::ReconcileRequired:
    case ClaimOutcome::BudgetExhausted:
        return ExitTempFail;
    }
    return ExitInternal;
}

int exitFor(ErrorCode code)
{
    switch (code) {
    case ErrorCode::InvalidArgument:
        return ExitUsage;
    case ErrorCode::LedgerUnavailable:
    case ErrorCode::SchemaMismatch:
        return ExitUnavailable;
    case ErrorCode::LedgerBusy:
    case ErrorCode::InProgress:
        return ExitTempFail;
    case ErrorCode::Internal:
        return ExitInternal;
    default:
        return ExitRefused;
    }
}

int pageLimit(const Context &c)
{
    return static_cast<int>(c.integerOption(QStringLiteral("limit"), 1, MaxQueueBatch, 50));
}

std::int64_t afterId(const Context &c)
{
    return c.integerOption(QStringLiteral("after"), 0, MaxWholeNumber, 0);
}

std::string requiredReason(const Context &c)
{
    if (!c.parser.isSet(QStringLiteral("reason")))
        throw Error(ErrorCode::Refused,
                    "missing --reason TEXT: a guarded action records why in the audit log");
    const QString given = c.parser.value(QStringLiteral("reason"));
    const std::string reason = given.trimmed().toStdString();
    if (reason.empty())
        throw Error(ErrorCode::Refused, "--reason is blank (" + quotedValue(given.toStdString()) +
                                            "): a guarded action records why in the audit log");
    return reason;
}

void requireValid(const std::vector<std::string> &problems)
{
    if (problems.empty())
        return;
    std::string message;
    for (const std::string &p : problems)
        message += (message.empty() ? "" : "; ") + p;
    throw Error(ErrorCode::Refused, message);
}

} // namespace idempo::cli
