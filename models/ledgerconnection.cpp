// SPDX-License-Identifier: Apache-2.0
#include "ledgerconnection.h"

#include <exception>
#include <memory>

#include <QThread>
#include <QTimer>

#include "ledgerfactory.h"

namespace idempo {

namespace {
constexpr int StaleAfterMs = 3000;
}

LedgerConnection::LedgerConnection(QObject *parent)
    : QObject(parent), m_thread(new QThread(this)),
      m_worker(new LedgerWorker) // no parent: it moves to m_thread and is deleted there
      ,
      m_staleTimer(new QTimer(this))
{
    m_thread->setObjectName(QStringLiteral("idempo-ledger"));
    m_worker->moveToThread(m_thread);
    connect(m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    connect(m_worker, &LedgerWorker::opened, this,
            [this](const QString &description, bool hasQueues) {
                m_description = description;
                m_hasQueues = hasQueues;
                m_lastError.clear();
                m_sincePoll.start();
                Q_EMIT opened(description);
            });
    connect(m_worker, &LedgerWorker::openFailed, this,
            [this](const QString &message, const QString &hint) {
                m_description.clear();
                m_lastError = message;
                setLive(false);
                Q_EMIT openFailed(message, hint);
            });
    connect(m_worker, &LedgerWorker::jobFailed, this, [this](const QString &message) {
        m_lastError = message;
        Q_EMIT queryFailed(message);
    });
    connect(m_worker, &LedgerWorker::changed, this, &LedgerConnection::changed);
    connect(m_worker, &LedgerWorker::polled, this, [this](bool ok, const QString &message) {
        if (ok)
            m_sincePoll.restart();
        else
            m_lastError = message;
        setLive(ok);
    });
    m_staleTimer->setInterval(1000);
    connect(m_staleTimer, &QTimer::timeout, this, [this] {
        if (isOpen() && m_sincePoll.isValid() && m_sincePoll.elapsed() > StaleAfterMs) {
            // The worker answers polls between queries: a long one holds them back.
            m_lastError = tr("no answer from the ledger for %1 s (a long query may be running)")
                              .arg(m_sincePoll.elapsed() / 1000);
            setLive(false);
        }
    });
    m_staleTimer->start();
    m_thread->start();
}

LedgerConnection::~LedgerConnection()
{
    QMetaObject::invokeMethod(m_worker, &LedgerWorker::close, Qt::BlockingQueuedConnection);
    m_thread->quit();
    m_thread->wait();
}

void LedgerConnection::open(const QString &url)
{
    m_url = url;
    m_description.clear();
    m_hasQueues = false;
    m_lastError.clear();
    setLive(false);
    Q_EMIT closed();
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, url] { worker->open(url); }, Qt::QueuedConnection);
}

void LedgerConnection::pollNow()
{
    QMetaObject::invokeMethod(m_worker, &LedgerWorker::poll, Qt::QueuedConnection);
}

void LedgerConnection::setPollInterval(int ms)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, ms] { worker->setPollInterval(ms); }, Qt::QueuedConnection);
}

void LedgerConnection::post(LedgerJob job)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, job = std::move(job)] { worker->run(job); },
        Qt::QueuedConnection);
}

void LedgerConnection::startAlone(LedgerJob job, std::function<void(const QString &)> failed)
{
    QThread *thread =
        QThread::create([url = m_url, job = std::move(job), failed = std::move(failed)] {
            // Opened, used and closed on this thread: the stores' connections are per thread.
            std::shared_ptr<LedgerStore> store;
            std::shared_ptr<MessageQueue> queues;
            try {
                store = openLedger(url);
            } catch (const std::exception &e) {
                failed(QString::fromStdString(e.what()));
                return;
            }
            try {
                queues = openQueue(url);
            } catch (const std::exception &) {
                queues.reset(); // a ledger without queues, as LedgerWorker::open() has it
            }
            job(*store, queues.get());
        });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
}

void LedgerConnection::setLive(bool live)
{
    if (live == m_live)
        return;
    m_live = live;
    Q_EMIT liveChanged(live);
}

} // namespace idempo
