// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <functional>
#include <utility>

#include <QElapsedTimer>
#include <QObject>
#include <QPointer>
#include <QString>

#include "ledgerworker.h"

class QThread;
class QTimer;

namespace idempo {

/// The GUI side of the open ledger: owns the worker thread, forwards queries to it and hands
/// results back on the GUI thread as plain values. Tracks whether live updates are flowing:
/// `live` turns false when a poll fails or none has answered for three seconds.
class LedgerConnection final : public QObject
{
    Q_OBJECT
public:
    explicit LedgerConnection(QObject *parent = nullptr);
    ~LedgerConnection() override;

    /// Opens `url` on the worker thread; opened() or openFailed() follows.
    void open(const QString &url);
    QString url() const { return m_url; }
    /// The open ledger's address without secrets; empty until opened.
    QString description() const { return m_description; }
    bool isOpen() const { return !m_description.isEmpty(); }
    bool hasQueues() const { return m_hasQueues; }
    bool isLive() const { return m_live; }
    QString lastError() const { return m_lastError; }

    /// Runs `job(store, queues)` on the worker thread and then `done(result)` on this thread,
    /// unless `context` is gone by then. `job` must only capture values.
    template <typename Job, typename Done> void query(QObject *context, Job job, Done done)
    {
        QPointer<QObject> guard(context);
        post([this, guard, job = std::move(job), done = std::move(done)](LedgerStore &store,
                                                                         MessageQueue *queues) {
            auto result = job(store, queues);
            QMetaObject::invokeMethod(
                this,
                [guard, done, result = std::move(result)]() mutable {
                    if (guard)
                        done(std::move(result));
                },
                Qt::QueuedConnection);
        });
    }

    /// Runs `job(store, queues)` on a thread of its own, over a second opening of url(), and then
    /// `done(result)` on this thread, unless `context` is gone by then: for a job that takes long
    /// (a rate-limited DLQ replay) and must not hold up the views' queries meanwhile. `queues`
    /// is null when the ledger has none. `failed(message)` replaces `done` when the ledger would
    /// not open. `job` must only capture values and answer its own errors.
    template <typename Job, typename Done, typename Failed>
    void runAlone(QObject *context, Job job, Done done, Failed failed)
    {
        QPointer<QObject> guard(context);
        startAlone(
            [guard, job = std::move(job), done = std::move(done)](LedgerStore &store,
                                                                  MessageQueue *queues) {
                auto result = job(store, queues);
                QMetaObject::invokeMethod(
                    guard,
                    [guard, done, result = std::move(result)]() mutable {
                        if (guard)
                            done(std::move(result));
                    },
                    Qt::QueuedConnection);
            },
            [guard, failed = std::move(failed)](const QString &message) {
                QMetaObject::invokeMethod(
                    guard,
                    [guard, failed, message] {
                        if (guard)
                            failed(message);
                    },
                    Qt::QueuedConnection);
            });
    }

    /// Asks the worker to look for changes at once (tests and the refresh shortcut).
    void pollNow();
    /// The worker's tick in ms (1000 by default): the SQLite change poll, or on PostgreSQL the
    /// ping and reconnect of the notification listener. Live updates go stale after 3000 ms
    /// without a tick that answered.
    void setPollInterval(int ms);

Q_SIGNALS:
    /// The previous ledger is gone (open() was called): nothing shown may stay from it.
    void closed();
    void opened(const QString &description);
    void openFailed(const QString &message, const QString &hint);
    void queryFailed(const QString &message);
    /// Someone wrote to the ledger; views refresh what they show.
    void changed();
    void liveChanged(bool live);

private:
    void post(LedgerJob job);
    void startAlone(LedgerJob job, std::function<void(const QString &)> failed);
    void setLive(bool live);

    QThread *m_thread = nullptr;
    LedgerWorker *m_worker = nullptr;
    QTimer *m_staleTimer = nullptr;
    QElapsedTimer m_sincePoll;
    QString m_url;
    QString m_description;
    QString m_lastError;
    bool m_hasQueues = false;
    bool m_live = false;
};

} // namespace idempo
