// SPDX-License-Identifier: Apache-2.0
#include "overviewmodel.h"

#include <QTimer>

namespace idempo {

OverviewModel::OverviewModel(LedgerConnection *connection, QObject *parent)
    : QObject(parent), m_connection(connection)
{
    auto *timer = new QTimer(this);
    timer->setInterval(5000);
    connect(timer, &QTimer::timeout, this, &OverviewModel::refresh);
    timer->start();
}

void OverviewModel::reset()
{
    ++m_generation;
    m_snapshot = {};
    m_recentSuppressions.clear();
    m_backlog.clear();
    m_suppressionCursor = 0;
    m_hasSnapshot = false;
    m_busy = false;
    Q_EMIT updated();
}

void OverviewModel::refresh()
{
    if (m_busy || !m_connection->isOpen())
        return;
    m_busy = true;
    const quint64 generation = m_generation;
    m_connection->query(
        this,
        [cursor = m_suppressionCursor](LedgerStore &store, MessageQueue *queues) {
            return OverviewSnapshot::read(store, queues, cursor);
        },
        [this, generation](OverviewSnapshot s) {
            if (generation != m_generation)
                return;
            m_busy = false;
            m_suppressionCursor = s.suppressionCursor;
            const std::int64_t hourAgo = s.nowMs - 3'600'000;
            for (std::int64_t at : s.newSuppressionsAtMs)
                if (at >= hourAgo)
                    m_recentSuppressions.push_back(at);
            while (!m_recentSuppressions.empty() && m_recentSuppressions.front() < hourAgo)
                m_recentSuppressions.pop_front();
            s.newSuppressionsAtMs.clear();
            m_backlog.append(QPointF(static_cast<double>(s.nowMs) / 1000.0,
                                     static_cast<double>(s.backlogAgeMs.value_or(0)) / 60'000.0));
            while (!m_backlog.isEmpty() &&
                   m_backlog.front().x() < static_cast<double>(hourAgo) / 1000.0)
                m_backlog.removeFirst();
            m_snapshot = std::move(s);
            m_hasSnapshot = true;
            Q_EMIT updated();
        });
}

std::array<int, OverviewSnapshot::Minutes> OverviewModel::suppressionsPerMinute() const
{
    std::array<int, OverviewSnapshot::Minutes> perMinute{};
    const std::int64_t windowStart =
        m_snapshot.nowMs - std::int64_t{OverviewSnapshot::Minutes} * 60'000;
    for (std::int64_t at : m_recentSuppressions) {
        if (at < windowStart)
            continue;
        const auto minute = static_cast<std::size_t>((at - windowStart) / 60'000);
        ++perMinute[std::min<std::size_t>(minute, OverviewSnapshot::Minutes - 1)];
    }
    return perMinute;
}

} // namespace idempo
