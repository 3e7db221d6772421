// SPDX-License-Identifier: Apache-2.0
#include "ledgerworker.h"

#include <QSocketNotifier>
#include <QTimer>

#include "changefeed.h"
#include "error.h"
#include "ledgerfactory.h"

namespace idempo {

namespace {

/// Changes arriving within this many ms make one refresh: a busy ledger writes hundreds
/// a second, and each refresh re-reads the visible rows.
constexpr int CoalesceMs = 100;

/// What an operator should check for a ledger that would not open, by address kind.
QString hintFor(const QString &url, ErrorCode code)
{
    if (code == ErrorCode::SchemaMismatch)
        return QStringLiteral("The ledger's schema does not match this build: run `idempo init` "
                              "(PostgreSQL) or upgrade the console.");
    if (code == ErrorCode::InvalidArgument)
        return QStringLiteral("Use sqlite:PATH, a postgresql:// URI or a libpq keyword string "
                              "such as service=NAME.");
    if (url.startsWith(QLatin1String("sqlite:")))
        return QStringLiteral("Check that the directory exists and is writable, and that no "
                              "other program holds the file locked.");
    return QStringLiteral("Check host, port and database name, that the server accepts "
                          "connections from this machine (pg_hba.conf), and that ~/.pgpass "
                          "or PGPASSFILE holds the password.");
}

} // namespace

LedgerWorker::LedgerWorker(QObject *parent) : QObject(parent) {}

LedgerWorker::~LedgerWorker() = default;

void LedgerWorker::open(const QString &url)
{
    close();
    try {
        // Only the embedded default may be created: a mistyped path must not start a fresh ledger.
        const OpenMode mode =
            url == defaultLedgerUrl() ? OpenMode::CreateIfMissing : OpenMode::OpenExisting;
        m_store = openLedger(url, nullptr, mode);
        // A database without the schema (or with an older one) opens, but answers no query:
        // asking who acts goes through the schema check, so it fails here, with what to do.
        m_store->actor();
        try {
            m_queues = openQueue(url, nullptr, mode);
        } catch (const Error &) {
            // PostgreSQL ledgers have no queues yet: the DLQ view says so instead of failing.
            m_queues.reset();
        }
    } catch (const Error &e) {
        m_store.reset();
        Q_EMIT openFailed(QString::fromStdString(e.what()), hintFor(url, e.code()));
        return;
    }
    if (!m_pollTimer) {
        m_pollTimer = new QTimer(this);
        m_pollTimer->setInterval(m_pollIntervalMs);
        connect(m_pollTimer, &QTimer::timeout, this, &LedgerWorker::poll);
        m_coalesceTimer = new QTimer(this);
        m_coalesceTimer->setSingleShot(true);
        m_coalesceTimer->setInterval(CoalesceMs);
        connect(m_coalesceTimer, &QTimer::timeout, this, &LedgerWorker::changed);
    }
    // A pushing feed listens before the views read their first rows, so no write falls between
    // the two; one that cannot connect now is reported and retried by the first tick.
    try {
        openFeed();
    } catch (const std::exception &) {
        m_feedLost = true;
    }
    Q_EMIT opened(QString::fromStdString(m_store->describe()), m_queues != nullptr);
    poll();
    m_pollTimer->start();
}

void LedgerWorker::setPollInterval(int ms)
{
    m_pollIntervalMs = ms;
    if (m_pollTimer)
        m_pollTimer->setInterval(ms);
}

void LedgerWorker::openFeed()
{
    m_feed = m_store->changeFeed();
    if (m_feed && m_feed->socket() >= 0) {
        m_notifier = new QSocketNotifier(static_cast<qintptr>(m_feed->socket()),
                                         QSocketNotifier::Read, this);
        connect(m_notifier, &QSocketNotifier::activated, this, &LedgerWorker::readPushedChanges);
    }
}

void LedgerWorker::closeFeed()
{
    // The notifier goes first: it must not watch a descriptor the feed closes.
    delete m_notifier;
    m_notifier = nullptr;
    m_feed.reset();
}

void LedgerWorker::readPushedChanges()
{
    try {
        if (m_feed->changed() && !m_coalesceTimer->isActive())
            m_coalesceTimer->start();
    } catch (const std::exception &e) {
        feedLost(e);
    }
}

void LedgerWorker::feedLost(const std::exception &e)
{
    closeFeed();
    m_feedLost = true;
    Q_EMIT polled(false, QStringLiteral("live updates lost: ") + QString::fromStdString(e.what()));
}

void LedgerWorker::run(const LedgerJob &job)
{
    if (!m_store)
        return;
    try {
        job(*m_store, m_queues.get());
    } catch (const std::exception &e) {
        Q_EMIT jobFailed(QString::fromStdString(e.what()));
    }
}

void LedgerWorker::close()
{
    if (m_pollTimer)
        m_pollTimer->stop();
    if (m_coalesceTimer)
        m_coalesceTimer->stop();
    closeFeed();
    m_feedLost = false;
    m_queues.reset();
    m_store.reset();
}

void LedgerWorker::poll()
{
    if (!m_store)
        return;
    if (m_feedLost) {
        try {
            openFeed();
        } catch (const std::exception &e) {
            Q_EMIT polled(false, QStringLiteral("live updates stopped: ") +
                                     QString::fromStdString(e.what()));
            return;
        }
        m_feedLost = false;
        Q_EMIT polled(true, QString());
        // Whatever was written while nobody listened is unknown: every view re-reads once.
        Q_EMIT changed();
        return;
    }
    if (!m_feed) {
        Q_EMIT polled(true, QString());
        return;
    }
    if (m_feed->socket() >= 0) {
        try {
            m_feed->ping();
            readPushedChanges();
        } catch (const std::exception &e) {
            feedLost(e);
            return;
        }
        if (m_feed)
            Q_EMIT polled(true, QString());
        return;
    }
    try {
        const bool moved = m_feed->changed();
        Q_EMIT polled(true, QString());
        if (moved)
            Q_EMIT changed();
    } catch (const std::exception &e) {
        Q_EMIT polled(false, QString::fromStdString(e.what()));
    }
}

} // namespace idempo
