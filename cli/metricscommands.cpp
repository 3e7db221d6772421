// SPDX-License-Identifier: Apache-2.0
// `idempo metrics`: the ledger's figures as text, JSON or the Prometheus text format, and
// `metrics serve`, which answers scrapes with them.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <QHostAddress>

#include "auditverify.h"
#include "context.h"
#include "ledgerfigures.h"
#include "metricsexposition.h"
#include "metricsserver.h"
#include "optionvalue.h"
#include "output.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

/// Where `metrics serve` listens without --listen: loopback only.
constexpr const char *DefaultListen = "127.0.0.1:9464";

/// One read of everything `metrics` reports: the figures of one namespace or of each, and the
/// audit chain's verification, which covers the whole ledger.
struct Scrape
{
    std::string ledger;
    std::vector<LedgerFigures> figures;
    AuditVerify::Result audit;
};

Scrape scrape(LedgerStore &store, const std::optional<std::string> &ns)
{
    Scrape s;
    s.ledger = store.describe();
    for (const std::string &name : ns ? std::vector<std::string>{*ns} : store.namespaces())
        s.figures.push_back(LedgerFigures::read(store, name));
    s.audit = AuditVerify(store).run();
    return s;
}

/// --all-namespaces, else the namespace of --namespace / $IDEMPO_NAMESPACE.
std::optional<std::string> chosenNamespace(const Context &c)
{
    if (!c.parser.isSet(QStringLiteral("all-namespaces")))
        return c.ns;
    if (c.parser.isSet(QStringLiteral("namespace")))
        throw UsageError{"--namespace and --all-namespaces exclude each other: give one"};
    return std::nullopt;
}

std::optional<MetricsExposition::Format> chosenFormat(const Context &c)
{
    if (!c.parser.isSet(QStringLiteral("format")))
        return std::nullopt;
    const std::string format = c.parser.value(QStringLiteral("format")).toStdString();
    if (c.json)
        throw UsageError{"--json and --format " + quotedValue(format) + " exclude each other"};
    if (format == "openmetrics")
        return MetricsExposition::Format::OpenMetrics;
    if (format == "prometheus")
        return MetricsExposition::Format::Prometheus;
    throw UsageError{"--format must be openmetrics or prometheus, not " + quotedValue(format)};
}

/// Milliseconds as seconds to the millisecond ("2.5 s"), "-" for none.
std::string secondsText(std::optional<std::int64_t> ms)
{
    if (!ms)
        return "-";
    std::string fraction = std::to_string(1000 + *ms % 1000).substr(1);
    while (!fraction.empty() && fraction.back() == '0')
        fraction.pop_back();
    return std::to_string(*ms / 1000) + (fraction.empty() ? "" : "." + fraction) + " s";
}

std::string humanText(const LedgerFigures &f)
{
    std::string text = "namespace " + escapedText(f.ns) + '\n';
    for (const auto &[state, n] : f.metrics.byState)
        text += "  " + std::string(stateName(state)) + ": " + std::to_string(n) + '\n';
    text += "  suppressions: " + std::to_string(f.suppressionsTotal) + " (" +
            std::to_string(f.metrics.suppressionsInWindow) + " in the last hour)" +
            "  leases live/lapsed: " + std::to_string(f.metrics.leasesLive) + "/" +
            std::to_string(f.metrics.leasesLapsed) + '\n';
    text += "  oldest waiting: unknown_outcome " + secondsText(f.oldestUnknownOutcomeAgeMs) +
            ", confirmation " + secondsText(f.oldestConfirmationAgeMs) + ", retry " +
            secondsText(f.oldestRetryAgeMs) + " (" + std::to_string(f.metrics.retriesWaiting) +
            " waiting)\n";
    text += "  time to final (last hour, " + std::to_string(f.metrics.finalsInWindow) + "): p50 " +
            secondsText(f.timeToFinalP50Ms) + ", p95 " + secondsText(f.timeToFinalP95Ms) +
            ", max " + secondsText(f.timeToFinalMaxMs) + '\n';
    text += "  runs halted: " + std::to_string(f.metrics.runsHalted);
    return text;
}

void report(const Context &c, const Scrape &s, bool all)
{
    nlohmann::json j;
    std::string human;
    if (all) {
        nlohmann::json namespaces = nlohmann::json::array();
        for (const LedgerFigures &f : s.figures) {
            namespaces.push_back(f.toJson());
            human += humanText(f) + '\n';
        }
        j = {{"namespaces", namespaces}};
    } else {
        j = s.figures.front().toJson();
        human = humanText(s.figures.front()) + '\n';
    }
    j["ledger"] = s.ledger;
    j["audit_chain"] = AuditVerify::toJson(s.audit);
    human += "ledger " + s.ledger + "  audit chain: " +
             (s.audit.ok ? "verified, " + std::to_string(s.audit.records) + " record(s)"
                         : "BROKEN: " + s.audit.problem);
    c.print(j, human);
}

/// --listen HOST:PORT (an IP address or `localhost`; IPv6 in brackets).
std::pair<QHostAddress, quint16> listenAddress(const Context &c)
{
    const QString given = c.parser.isSet(QStringLiteral("listen"))
                              ? c.parser.value(QStringLiteral("listen"))
                              : QString::fromLatin1(DefaultListen);
    const qsizetype colon = given.lastIndexOf(QLatin1Char(':'));
    QString host = given.left(colon);
    if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
        host = host.mid(1, host.size() - 2);
    bool portOk = false;
    const uint port = given.mid(colon + 1).toUInt(&portOk);
    QHostAddress address(host == QLatin1String("localhost") ? QStringLiteral("127.0.0.1") : host);
    if (colon < 0 || !portOk || port > 65535 || address.isNull())
        throw UsageError{"--listen must be HOST:PORT with an IP address or localhost, e.g. " +
                         std::string(DefaultListen) + ", not " + quotedValue(given.toStdString())};
    if (!address.isLoopback() && !c.parser.isSet(QStringLiteral("allow-remote")))
        throw UsageError{"refusing to listen on " + given.toStdString() +
                         ": not a loopback address, and /metrics answers anyone who can reach "
                         "it; give --allow-remote to serve beyond this host"};
    return {address, static_cast<quint16>(port)};
}

int serve(Context &c, const std::optional<std::string> &ns)
{
    if (c.parser.isSet(QStringLiteral("format")))
        throw UsageError{"'metrics serve' answers each scrape in the format its Accept header "
                         "asks for: leave out --format"};
    const auto [address, port] = listenAddress(c);
    LedgerStore &store = c.engine().store();
    MetricsServer server([&store, ns](bool openMetrics) {
        const Scrape s = scrape(store, ns);
        return MetricsExposition::render(openMetrics ? MetricsExposition::Format::OpenMetrics
                                                     : MetricsExposition::Format::Prometheus,
                                         s.ledger, s.figures, s.audit);
    });
    const QString failed = server.listen(address, port);
    if (!failed.isEmpty()) {
        printErr("idempo: cannot listen on " + address.toString().toStdString() + ":" +
                 std::to_string(port) + ": " + failed.toStdString());
        return ExitUnavailable;
    }
    const std::string host = address.protocol() == QAbstractSocket::IPv6Protocol
                                 ? "[" + address.toString().toStdString() + "]"
                                 : address.toString().toStdString();
    const std::string url = "http://" + host + ":" + std::to_string(server.port()) + "/metrics";
    c.print({{"url", url},
             {"ledger", store.describe()},
             {"namespace", ns ? nlohmann::json(*ns) : nlohmann::json()}},
            "serving " + url + " for " + store.describe() +
                (ns ? ", namespace " + escapedText(*ns) : ", every namespace"));
    std::fflush(stdout);
    server.exec();
    return ExitOk;
}

int cmdMetrics(Context &c)
{
    const std::optional<std::string> ns = chosenNamespace(c);
    const QStringList args = c.parser.positionalArguments();
    if (args.size() > 1 && args.at(1) != QLatin1String("serve"))
        throw UsageError{"unexpected argument " + quotedValue(args.at(1).toStdString())};
    if (args.size() > 1)
        return serve(c, ns);
    for (const char *name : {"listen", "allow-remote"})
        if (c.parser.isSet(QString::fromLatin1(name)))
            throw UsageError{"--" + std::string(name) + " applies to 'metrics serve' only"};
    const auto format = chosenFormat(c);
    const Scrape s = scrape(c.engine().store(), ns);
    if (!format) {
        report(c, s, !ns);
        return ExitOk;
    }
    std::string text = MetricsExposition::render(*format, s.ledger, s.figures, s.audit);
    text.pop_back(); // printOut ends the text with its own line break
    printOut(text);
    return ExitOk;
}

} // namespace

void addMetricsCommands(std::map<QString, Command> &table)
{
    table.insert(
        {QStringLiteral("metrics"),
         {1,
          "metrics [serve] [--all-namespaces] [--format openmetrics|prometheus] [--listen "
          "HOST:PORT] [--allow-remote]",
          "The ledger's figures: counts by state, suppressions and their rate, lapsed leases,\n"
          "the oldest unknown_outcome, confirmation and retry, time to final state (p50, p95,\n"
          "max over the last hour), halted runs, the audit chain's verification. --format\n"
          "prints the Prometheus text format; 'metrics serve' answers GET /metrics with it,\n"
          "read fresh for each scrape, until SIGINT or SIGTERM.",
          {opt("all-namespaces", "Every namespace, each labelled with its name."),
           opt("format", "openmetrics (OpenMetrics 1.0) or prometheus (text format 0.0.4).", "F"),
           opt("listen",
               "serve: the address to listen on (default 127.0.0.1:9464; port 0 picks one).",
               "HOST:PORT"),
           opt("allow-remote", "serve: listen on an address other than loopback.")},
          cmdMetrics}});
}

} // namespace idempo::cli
