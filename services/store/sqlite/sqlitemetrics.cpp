// SPDX-License-Identifier: Apache-2.0
// SqliteLedgerStore's figures for monitoring and the console's overview (LedgerMetrics).
#include <QVariant>

#include "sqliteledgerrows.h"
#include "sqliteledgerstore.h"
#include "sqlitesupport.h"

namespace idempo {

using namespace sqliterows;

LedgerMetrics SqliteLedgerStore::metrics(const std::string &ns)
{
    SqliteConnection &db = connection();
    LedgerMetrics m;
    m.nowMs = m_clock->nowMs();
    const qlonglong now = m.nowMs;
    const qlonglong windowStart = now - LedgerMetrics::WindowMs;
    const QVariantList inNs{text(ns), text(ns)};
    const QString where = QStringLiteral(" (? = '' OR namespace = ?) ");
    {
        Statement q = run(db,
                          QStringLiteral("SELECT state, count(*) FROM operations WHERE") + where +
                              QStringLiteral("GROUP BY state"),
                          inNs, "metrics");
        while (q->next())
            if (auto s = parseState(toStd(q->value(0))))
                m.byState.emplace_back(*s, q->value(1).toLongLong());
    }
    {
        Statement q = run(db,
                          QStringLiteral("SELECT outcome, count(*) FROM suppressions WHERE") +
                              where + QStringLiteral("GROUP BY outcome"),
                          inNs, "metrics");
        while (q->next())
            if (auto o = parseClaimOutcome(toStd(q->value(0))))
                m.suppressionsByOutcome.emplace_back(*o, q->value(1).toLongLong());
    }
    {
        Statement q =
            run(db,
                QStringLiteral("SELECT coalesce(sum(lease_expires_at_ms > ?), 0), "
                               "coalesce(sum(lease_expires_at_ms <= ?), 0), "
                               "(SELECT count(*) FROM operation_events e JOIN operations eo ON "
                               "eo.id = e.operation_id "
                               "WHERE ? = '' OR eo.namespace = ?) "
                               "FROM operations WHERE state = 'dispatching' AND") +
                    where,
                {now, now, text(ns), text(ns), text(ns), text(ns)}, "metrics");
        q->next();
        m.leasesLive = q->value(0).toLongLong();
        m.leasesLapsed = q->value(1).toLongLong();
        m.events = q->value(2).toLongLong();
    }
    // Each figure on its own index: (state, updated_at_ms), suppressions (at_ms), runs' key.
    {
        Statement q = run(
            db,
            QStringLiteral("SELECT (SELECT min(updated_at_ms) FROM operations "
                           "WHERE state = 'confirmation_required' AND") +
                where +
                QStringLiteral("), (SELECT min(updated_at_ms) FROM operations "
                               "WHERE state = 'unknown_outcome' AND") +
                where +
                QStringLiteral("), (SELECT count(*) FROM operations WHERE (state = "
                               "'failed_retryable' OR (state = 'received' AND "
                               "next_attempt_at_ms IS NOT NULL)) AND") +
                where +
                QStringLiteral("), (SELECT min(updated_at_ms) FROM operations WHERE (state = "
                               "'failed_retryable' OR (state = 'received' AND "
                               "next_attempt_at_ms IS NOT NULL)) AND") +
                where +
                QStringLiteral("), (SELECT count(*) FROM suppressions WHERE at_ms >= ? AND") +
                where +
                QStringLiteral("), (SELECT count(*) FROM suppressions WHERE at_ms >= ? AND") +
                where +
                QStringLiteral("), (SELECT count(*) FROM operations WHERE state IN "
                               "('succeeded', 'failed_terminal') AND updated_at_ms >= ? AND") +
                where + QStringLiteral("), (SELECT count(*) FROM runs WHERE state = 'halted' AND") +
                where + QStringLiteral(")"),
            {text(ns), text(ns), text(ns), text(ns), text(ns), text(ns), text(ns), text(ns),
             windowStart, text(ns), text(ns), now - LedgerMetrics::RecentWindowMs, text(ns),
             text(ns), windowStart, text(ns), text(ns), text(ns), text(ns)},
            "metrics");
        q->next();
        m.oldestConfirmationMs = toOptionalInt(q->value(0));
        m.oldestUnknownOutcomeMs = toOptionalInt(q->value(1));
        m.retriesWaiting = q->value(2).toLongLong();
        m.oldestRetryMs = toOptionalInt(q->value(3));
        m.suppressionsInWindow = q->value(4).toLongLong();
        m.suppressionsRecent = q->value(5).toLongLong();
        m.finalsInWindow = q->value(6).toLongLong();
        m.runsHalted = q->value(7).toLongLong();
    }
    Statement q =
        run(db,
            QStringLiteral("SELECT updated_at_ms - created_at_ms FROM operations WHERE "
                           "state IN ('succeeded', 'failed_terminal') AND "
                           "updated_at_ms >= ? AND") +
                where + QStringLiteral("ORDER BY updated_at_ms DESC LIMIT ?"),
            {windowStart, text(ns), text(ns), LedgerMetrics::FinalSampleLimit}, "metrics");
    while (q->next())
        m.finalDurationsMs.push_back(q->value(0).toLongLong());
    return m;
}

} // namespace idempo
