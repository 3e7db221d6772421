// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <deque>

#include <QList>
#include <QObject>
#include <QPointF>

#include "ledgerconnection.h"
#include "overviewsnapshot.h"

namespace idempo {

/// The Overview's live figures: re-read on every ledger change (at most once a second) and
/// every five seconds, so ages keep moving and the backlog curve keeps sampling.
class OverviewModel final : public QObject
{
    Q_OBJECT
public:
    explicit OverviewModel(LedgerConnection *connection, QObject *parent = nullptr);

    const OverviewSnapshot &snapshot() const { return m_snapshot; }
    bool hasSnapshot() const { return m_hasSnapshot; }
    /// Suppressions per minute over the last hour (index 59 = the current minute).
    std::array<int, OverviewSnapshot::Minutes> suppressionsPerMinute() const;
    /// (seconds since epoch, backlog age in minutes) samples taken while the console ran.
    const QList<QPointF> &backlogSamples() const { return m_backlog; }

    void refresh();
    /// Forgets every figure (another ledger was opened).
    void reset();

Q_SIGNALS:
    void updated();

private:
    LedgerConnection *m_connection;
    OverviewSnapshot m_snapshot;
    std::deque<std::int64_t> m_recentSuppressions;
    QList<QPointF> m_backlog;
    std::int64_t m_suppressionCursor = 0;
    quint64 m_generation = 0;
    bool m_hasSnapshot = false;
    bool m_busy = false;
};

} // namespace idempo
