// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <memory>

#include <QObject>
#include <QString>

#include "ledgerstore.h"
#include "messagequeue.h"

class QSocketNotifier;
class QTimer;

namespace idempo {

class ChangeFeed;

/// A job the worker runs against the open ledger; `queues` is null when the ledger has none.
using LedgerJob = std::function<void(LedgerStore &store, MessageQueue *queues)>;

/// Owns the ledger on a worker thread: opens it there, runs every query there (the SQLite store
/// gives this thread its own connection) and watches for changes through the store's change
/// feed (LedgerStore::changeFeed()). A pushing feed (PostgreSQL's long poll of
/// idempo.wait_for_changes() on a connection of its own) is watched by a QSocketNotifier on this
/// thread, and the tick only pings it (and opens it again when it dropped); a polled feed (SQLite's
/// data_version) is asked each tick. Lives in LedgerConnection's thread; only LedgerConnection
/// talks to it, through queued calls.
class LedgerWorker final : public QObject
{
    Q_OBJECT
public:
    explicit LedgerWorker(QObject *parent = nullptr);
    ~LedgerWorker() override;

    /// Opens `url` (see openLedger), closing any ledger open before. Emits opened() or
    /// openFailed().
    void open(const QString &url);
    /// Runs `job` if a ledger is open; an engine error becomes jobFailed().
    void run(const LedgerJob &job);
    /// Drops the store on this thread, so its per-thread connection closes where it was opened.
    void close();
    /// Checks once for a change now instead of at the next tick.
    void poll();
    /// The tick, in ms (1000 by default): change poll, or ping and reconnect of a pushing feed.
    void setPollInterval(int ms);

Q_SIGNALS:
    void opened(const QString &description, bool hasQueues);
    void openFailed(const QString &message, const QString &hint);
    void jobFailed(const QString &message);
    /// The ledger was written by someone since the previous poll.
    void changed();
    /// Emitted after every poll: whether the ledger answered.
    void polled(bool ok, const QString &message);

private:
    void openFeed();
    void closeFeed();
    void readPushedChanges();
    void feedLost(const std::exception &e);

    std::shared_ptr<LedgerStore> m_store;
    std::shared_ptr<MessageQueue> m_queues;
    QTimer *m_pollTimer = nullptr;
    QTimer *m_coalesceTimer = nullptr;
    int m_pollIntervalMs = 1000;
    std::unique_ptr<ChangeFeed> m_feed;
    bool m_feedLost =
        false; ///< a pushing feed dropped or never connected: open it again, then re-read
    QSocketNotifier *m_notifier = nullptr;
};

} // namespace idempo
