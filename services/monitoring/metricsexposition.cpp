// SPDX-License-Identifier: Apache-2.0
#include "metricsexposition.h"

#include <charconv>
#include <functional>
#include <optional>
#include <string_view>

#include "vocabulary.h"

namespace idempo {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

/// A label value as the text format quotes it: backslash, double quote and line feed escaped.
std::string labelValue(const std::string &value)
{
    std::string out;
    for (char ch : value) {
        if (ch == '\\' || ch == '"')
            out += '\\';
        if (ch == '\n')
            out += "\\n";
        else
            out += ch;
    }
    return out;
}

/// The shortest text that reads back as the same double, as `metrics --json` prints it.
std::string number(double value)
{
    char buffer[32];
    const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return error == std::errc() ? std::string(buffer, end) : std::string("NaN");
}

std::string seconds(std::int64_t ms)
{
    return number(static_cast<double>(ms) / 1000.0);
}

class Writer final
{
public:
    explicit Writer(MetricsExposition::Format format) : m_format(format) {}

    /// Starts family `name`; a counter's samples are named `name_total`.
    void family(const std::string &name, const char *type, const char *help)
    {
        const bool counter = std::string_view(type) == "counter";
        const std::string title =
            counter && m_format == MetricsExposition::Format::Prometheus ? name + "_total" : name;
        m_sample = counter ? name + "_total" : name;
        m_text += "# HELP " + title + ' ' + help + '\n';
        m_text += "# TYPE " + title + ' ' + type + '\n';
    }

    void sample(const Labels &labels, const std::string &value)
    {
        m_text += m_sample;
        if (!labels.empty()) {
            m_text += '{';
            for (std::size_t i = 0; i < labels.size(); ++i)
                m_text +=
                    (i ? "," : "") + labels[i].first + "=\"" + labelValue(labels[i].second) + '"';
            m_text += '}';
        }
        m_text += ' ' + value + '\n';
    }

    std::string finish()
    {
        if (m_format == MetricsExposition::Format::OpenMetrics)
            m_text += "# EOF\n";
        return std::move(m_text);
    }

private:
    MetricsExposition::Format m_format;
    std::string m_sample;
    std::string m_text;
};

/// One family with a sample per namespace; `value` returns nothing for a namespace that has no
/// sample of it.
struct PerNamespace
{
    const char *name;
    const char *type;
    const char *help;
    std::function<std::optional<std::string>(const LedgerFigures &)> value;
};

std::optional<std::string> whole(std::int64_t n)
{
    return std::to_string(n);
}

std::optional<std::string> age(std::optional<std::int64_t> ms)
{
    return ms ? std::optional(seconds(*ms)) : std::nullopt;
}

} // namespace

std::string MetricsExposition::render(Format format, const std::string &ledger,
                                      const std::vector<LedgerFigures> &figures,
                                      const AuditVerify::Result &audit)
{
    Writer w(format);
    const auto labels = [&ledger](const LedgerFigures &f, Labels extra = {}) {
        Labels all{{"namespace", f.ns}, {"ledger", ledger}};
        all.insert(all.end(), extra.begin(), extra.end());
        return all;
    };

    w.family("idempo_operations", "gauge", "Operations in the ledger, by state.");
    for (const LedgerFigures &f : figures)
        for (int i = 0; i < OperationStateCount; ++i) {
            const auto state = static_cast<OperationState>(i);
            w.sample(labels(f, {{"state", std::string(stateName(state))}}),
                     std::to_string(f.count(state)));
        }
    w.family("idempo_suppressions", "counter",
             "Claims answered without executing (duplicates detected), by outcome.");
    for (const LedgerFigures &f : figures)
        for (const auto &[outcome, n] : f.metrics.suppressionsByOutcome)
            w.sample(labels(f, {{"outcome", std::string(claimOutcomeName(outcome))}}),
                     std::to_string(n));
    w.family("idempo_time_to_final_seconds", "gauge",
             "Creation to succeeded or failed_terminal of the operations that reached it in the "
             "last hour: nearest-rank quantiles, 1 = the longest.");
    for (const LedgerFigures &f : figures)
        for (const auto &[quantile, ms] :
             {std::pair{"0.5", f.timeToFinalP50Ms}, std::pair{"0.95", f.timeToFinalP95Ms},
              std::pair{"1", f.timeToFinalMaxMs}})
            if (ms)
                w.sample(labels(f, {{"quantile", quantile}}), seconds(*ms));

    const std::vector<PerNamespace> single{
        {"idempo_suppressions_last_hour", "gauge", "Suppressions recorded in the last hour.",
         [](const LedgerFigures &f) { return whole(f.metrics.suppressionsInWindow); }},
        {"idempo_suppression_rate_per_second", "gauge",
         "Suppressions per second over the last five minutes.",
         [](const LedgerFigures &f) { return std::optional(number(f.suppressionRatePerSecond)); }},
        {"idempo_leases_live", "gauge", "Dispatching operations whose lease is live.",
         [](const LedgerFigures &f) { return whole(f.metrics.leasesLive); }},
        {"idempo_leases_lapsed", "gauge",
         "Dispatching operations whose lease lapsed: stuck reservations the next claim fences off.",
         [](const LedgerFigures &f) { return whole(f.metrics.leasesLapsed); }},
        {"idempo_oldest_unknown_outcome_age_seconds", "gauge",
         "How long the oldest unknown_outcome operation has waited for reconciliation.",
         [](const LedgerFigures &f) { return age(f.oldestUnknownOutcomeAgeMs); }},
        {"idempo_oldest_confirmation_age_seconds", "gauge",
         "How long the oldest confirmation_required operation has waited for a person.",
         [](const LedgerFigures &f) { return age(f.oldestConfirmationAgeMs); }},
        {"idempo_retries_waiting", "gauge",
         "Operations waiting to be tried again (failed_retryable, or received with a backoff).",
         [](const LedgerFigures &f) { return whole(f.metrics.retriesWaiting); }},
        {"idempo_oldest_retry_age_seconds", "gauge",
         "How long the oldest operation waiting to be tried again has waited since it failed.",
         [](const LedgerFigures &f) { return age(f.oldestRetryAgeMs); }},
        {"idempo_finals_last_hour", "gauge",
         "Operations that reached succeeded or failed_terminal in the last hour.",
         [](const LedgerFigures &f) { return whole(f.metrics.finalsInWindow); }},
        {"idempo_runs_halted", "gauge",
         "Runs halted on a budget: they dispatch nothing until a person resumes them.",
         [](const LedgerFigures &f) { return whole(f.metrics.runsHalted); }},
    };
    for (const PerNamespace &family : single) {
        w.family(family.name, family.type, family.help);
        for (const LedgerFigures &f : figures)
            if (const auto value = family.value(f))
                w.sample(labels(f), *value);
    }

    const Labels ledgerOnly{{"ledger", ledger}};
    w.family("idempo_audit_chain_ok", "gauge",
             "1 when the audit log's hash chain verified and matched the ledger's head, else 0.");
    w.sample(ledgerOnly, audit.ok ? "1" : "0");
    w.family("idempo_audit_records", "gauge", "Audit records read by the verification.");
    w.sample(ledgerOnly, std::to_string(audit.records));
    return w.finish();
}

} // namespace idempo
