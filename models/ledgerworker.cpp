// SPDX-License-Identifier: Apache-2.0
#include "ledgerworker.h"

#include "error.h"
#include "ledgerfactory.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "sqliteledgerstore.h"

#include <utility>

#include <QSocketNotifier>
#include <QSqlError>
#include <QSqlQuery>
#include <QTimer>

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

LedgerWorker::LedgerWorker(QObject *parent)
    : QObject(parent)
{
}

LedgerWorker::~LedgerWorker() = default;

void LedgerWorker::open(const QString &url)
{
    close();
    try {
        // Only the embedded default may be created: a mistyped path must not start a fresh ledger.
        const OpenMode mode = url == defaultLedgerUrl() ? OpenMode::CreateIfMissing : OpenMode::OpenExisting;
        m_store = openLedger(url, nullptr, mode);
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
    m_lastToken = -1;
    if (dynamic_cast<PostgresLedgerStore *>(m_store.get())) {
        // Follow changes before the views read their first rows, so no write falls between the two.
        m_listenConninfo = url.toStdString();
        try {
            listen();
        } catch (const std::exception &) {
            m_missedNotifications = true; // the first tick reports the failure and retries
        }
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

void LedgerWorker::listen()
{
    m_listener = std::make_unique<PgChangeFeed>(m_listenConninfo);
    m_notifier = new QSocketNotifier(static_cast<qintptr>(m_listener->socket()), QSocketNotifier::Read, this);
    connect(m_notifier, &QSocketNotifier::activated, this, &LedgerWorker::readNotifications);
}

void LedgerWorker::stopListening()
{
    // The notifier goes first: it must not watch a descriptor the listener closes.
    delete m_notifier;
    m_notifier = nullptr;
    m_listener.reset();
}

void LedgerWorker::readNotifications()
{
    try {
        if (!m_listener->takeNotifications().empty() && !m_coalesceTimer->isActive())
            m_coalesceTimer->start();
    } catch (const std::exception &e) {
        listenerLost(e);
    }
}

void LedgerWorker::listenerLost(const std::exception &e)
{
    stopListening();
    m_missedNotifications = true;
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
    stopListening();
    m_listenConninfo.clear();
    m_missedNotifications = false;
    m_queues.reset();
    m_store.reset();
}

void LedgerWorker::poll()
{
    if (!m_store)
        return;
    if (!m_listenConninfo.empty()) {
        if (m_listener) {
            try {
                m_listener->ping();
                readNotifications();
            } catch (const std::exception &e) {
                listenerLost(e);
                return;
            }
            if (m_listener)
                Q_EMIT polled(true, QString());
            return;
        }
        try {
            listen();
        } catch (const std::exception &e) {
            m_missedNotifications = true;
            Q_EMIT polled(false, QStringLiteral("live updates stopped: ") + QString::fromStdString(e.what()));
            return;
        }
        Q_EMIT polled(true, QString());
        // Whatever was written while nobody listened is unknown: every view re-reads once.
        if (std::exchange(m_missedNotifications, false))
            Q_EMIT changed();
        return;
    }
    try {
        const std::int64_t token = changeToken();
        const bool moved = m_lastToken >= 0 && token != m_lastToken;
        m_lastToken = token;
        Q_EMIT polled(true, QString());
        if (moved)
            Q_EMIT changed();
    } catch (const std::exception &e) {
        Q_EMIT polled(false, QString::fromStdString(e.what()));
    }
}

std::int64_t LedgerWorker::changeToken()
{
    // data_version moves whenever another connection commits: one page-cache read.
    auto *sqlite = dynamic_cast<SqliteLedgerStore *>(m_store.get());
    if (!sqlite)
        throw Error(ErrorCode::Internal, "no change signal for " + m_store->describe());
    QSqlQuery q(sqlite->connection().db);
    if (q.exec(QStringLiteral("PRAGMA data_version")) && q.next())
        return q.value(0).toLongLong();
    throw Error(ErrorCode::LedgerUnavailable, q.lastError().text().toStdString());
}

} // namespace idempo
