// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "auditverify.h"
#include "ledgerfigures.h"

namespace idempo {

/// The Prometheus text exposition of a ledger's figures (`idempo metrics --format`, and what
/// `idempo metrics serve` answers on /metrics): every family `idempo_`-prefixed, in base units
/// (seconds), each sample labelled with its `namespace` and the `ledger` it was read from; the
/// audit chain's figures, which belong to the whole ledger, with `ledger` alone. An age with
/// nothing waiting has no sample.
class MetricsExposition final
{
public:
    enum class Format
    {
        OpenMetrics, ///< OpenMetrics 1.0.0: counters named without `_total`, ends with `# EOF`
        Prometheus,  ///< the classic text format 0.0.4
    };

    static constexpr const char *OpenMetricsContentType =
        "application/openmetrics-text; version=1.0.0; charset=utf-8";
    static constexpr const char *PrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

    /// `ledger`: the ledger's name without secrets (LedgerStore::describe()); `figures`: one per
    /// namespace, each with its namespace set.
    static std::string render(Format format, const std::string &ledger,
                              const std::vector<LedgerFigures> &figures,
                              const AuditVerify::Result &audit);
};

} // namespace idempo
