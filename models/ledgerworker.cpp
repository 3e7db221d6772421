// SPDX-License-Identifier: Apache-2.0
#include "ledgerworker.h"

#include "error.h"
#include "ledgerfactory.h"
#include "sqliteledgerstore.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QTimer>

namespace idempo {

namespace {

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
        m_pollTimer->setInterval(1000);
        connect(m_pollTimer, &QTimer::timeout, this, &LedgerWorker::poll);
    }
    m_lastToken = -1;
    Q_EMIT opened(QString::fromStdString(m_store->describe()), m_queues != nullptr);
    poll();
    m_pollTimer->start();
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
    m_queues.reset();
    m_store.reset();
}

void LedgerWorker::poll()
{
    if (!m_store)
        return;
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
    if (auto *sqlite = dynamic_cast<SqliteLedgerStore *>(m_store.get())) {
        // data_version moves whenever another connection commits: one page-cache read.
        QSqlQuery q(sqlite->connection().db);
        if (q.exec(QStringLiteral("PRAGMA data_version")) && q.next())
            return q.value(0).toLongLong();
        throw Error(ErrorCode::LedgerUnavailable, q.lastError().text().toStdString());
    }
    // Other stores: the history only grows, so its size plus the state counts name a version.
    const LedgerMetrics m = m_store->metrics({});
    std::int64_t token = m.events;
    for (const auto &[state, count] : m.byState)
        token = token * 31 + count;
    for (const auto &[outcome, count] : m.suppressionsByOutcome)
        token = token * 31 + count;
    return token;
}

} // namespace idempo
