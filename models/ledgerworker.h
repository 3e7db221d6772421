// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "ledgerstore.h"
#include "messagequeue.h"

#include <QObject>
#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

class QSocketNotifier;
class QTimer;

namespace idempo {

class PgChangeFeed;

/// A job the worker runs against the open ledger; `queues` is null when the ledger has none.
using LedgerJob = std::function<void(LedgerStore &store, MessageQueue *queues)>;

/// Owns the ledger on a worker thread: opens it there, runs every query there (the SQLite store
/// gives this thread its own connection) and watches for changes. A PostgreSQL ledger is followed
/// through its change feed (PgChangeFeed) on a connection of its own, watched by a
/// QSocketNotifier on this thread, and its tick only pings that connection (and reconnects it
/// when it dropped). Other ledgers are polled for a cheap change signal each tick.
/// Lives in LedgerConnection's thread; only LedgerConnection talks to it, through queued calls.
class LedgerWorker final : public QObject
{
    Q_OBJECT
public:
    explicit LedgerWorker(QObject *parent = nullptr);
    ~LedgerWorker() override;

    /// Opens `url` (see openLedger), closing any ledger open before. Emits opened() or openFailed().
    void open(const QString &url);
    /// Runs `job` if a ledger is open; an engine error becomes jobFailed().
    void run(const LedgerJob &job);
    /// Drops the store on this thread, so its per-thread connection closes where it was opened.
    void close();
    /// Checks once for a change now instead of at the next tick.
    void poll();
    /// The tick, in ms (1000 by default): change poll, or ping and reconnect of the listener.
    void setPollInterval(int ms);
    /// Whether changes arrive from the PostgreSQL change feed (it is connected).
    bool isListening() const { return m_listener != nullptr; }

Q_SIGNALS:
    void opened(const QString &description, bool hasQueues);
    void openFailed(const QString &message, const QString &hint);
    void jobFailed(const QString &message);
    /// The ledger was written by someone since the previous poll.
    void changed();
    /// Emitted after every poll: whether the ledger answered.
    void polled(bool ok, const QString &message);

private:
    std::int64_t changeToken();
    void listen();
    void stopListening();
    void readNotifications();
    void listenerLost(const std::exception &e);

    std::shared_ptr<LedgerStore> m_store;
    std::shared_ptr<MessageQueue> m_queues;
    QTimer *m_pollTimer = nullptr;
    QTimer *m_coalesceTimer = nullptr;
    std::int64_t m_lastToken = -1;
    int m_pollIntervalMs = 1000;
    std::string m_listenConninfo; ///< set while the open ledger is PostgreSQL
    std::unique_ptr<PgChangeFeed> m_listener;
    bool m_missedNotifications = false; ///< the listener was down: re-read once it is back
    QSocketNotifier *m_notifier = nullptr;
};

} // namespace idempo
