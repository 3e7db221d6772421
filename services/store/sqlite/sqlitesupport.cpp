// SPDX-License-Identifier: Apache-2.0
#include "sqlitesupport.h"

#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include <QFile>
#include <QFileInfo>
#include <QUrl>

namespace idempo {
namespace {

[[noreturn]] void fail(const SqliteConnection &c, const QSqlQuery &query, const char *what)
{
    throw sqliteError(query.lastError(),
                      std::string(what) + " on ledger sqlite:" + c.path.toStdString());
}

/// SQLite's lock bytes (os_unix.c with the default PENDING_BYTE): readers share this range,
/// a writer locks it exclusively to checkpoint and delete the -wal when it closes.
constexpr off_t kSharedFirst = 0x40000000 + 2;
constexpr off_t kSharedSize = 510;

} // namespace

ReaderLock::ReaderLock(const QString &path)
{
    m_fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_CLOEXEC);
    if (m_fd < 0)
        return;
    struct flock lock = {};
    lock.l_type = F_RDLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = kSharedFirst;
    lock.l_len = kSharedSize;
    if (::fcntl(m_fd, F_OFD_SETLK, &lock) != 0) {
        ::close(m_fd);
        m_fd = -1;
    }
}

ReaderLock::ReaderLock(ReaderLock &&other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}

ReaderLock &ReaderLock::operator=(ReaderLock &&other) noexcept
{
    if (this != &other) {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
}

ReaderLock::~ReaderLock()
{
    if (m_fd >= 0)
        ::close(m_fd);
}

void openLedgerFile(SqliteConnection &c, const QString &path, const SqliteOpenOptions &options)
{
    QSqlDatabase &db = c.db;
    c.path = path;
    const QString busy = QStringLiteral("QSQLITE_BUSY_TIMEOUT=%1").arg(options.busyTimeoutMs);
    const auto unavailable = [&](const QSqlError &error) {
        const Error classified = sqliteError(error, "cannot open ledger " + path.toStdString());
        // Whatever SQLite says, a ledger that does not open is unavailable (or busy).
        return classified.code() == ErrorCode::Internal
                   ? Error(ErrorCode::LedgerUnavailable, classified.what())
                   : classified;
    };
    QStringList pragmas;
    if (!options.readOnly) {
        db.setDatabaseName(path);
        db.setConnectOptions(busy);
        const QString synchronous =
            options.synchronous.compare(QLatin1String("NORMAL"), Qt::CaseInsensitive) == 0
                ? QStringLiteral("NORMAL")
                : QStringLiteral("FULL");
        pragmas = {QStringLiteral("PRAGMA journal_mode = WAL"),
                   QStringLiteral("PRAGMA synchronous = ") + synchronous,
                   QStringLiteral("PRAGMA foreign_keys = ON")};
    } else {
        // A WAL reader creates -wal and -shm beside the file (and cannot remove them again):
        // impossible in a folder it may not write, and a change to an auditor's copy. Without
        // a writer every committed transaction is in the file itself, so it is read as an
        // immutable file; the ReaderLock keeps a writer that opens and closes it meanwhile from
        // checkpointing into it. A writer's burst of checkpointed pages during a long read is
        // the one change such a read would not notice.
        c.readerLock = ReaderLock(path);
        const bool writer = QFileInfo::exists(path + QStringLiteral("-wal")) ||
                            QFileInfo::exists(path + QStringLiteral("-journal"));
        if (writer) {
            db.setDatabaseName(path);
            db.setConnectOptions(busy + QStringLiteral(";QSQLITE_OPEN_READONLY"));
        } else {
            db.setDatabaseName(
                QStringLiteral("file:") +
                QString::fromLatin1(QUrl::toPercentEncoding(path, QByteArrayLiteral("/"))) +
                QStringLiteral("?immutable=1"));
            db.setConnectOptions(busy + QStringLiteral(";QSQLITE_OPEN_READONLY;QSQLITE_OPEN_URI"));
        }
        pragmas = {QStringLiteral("PRAGMA query_only = ON")};
    }
    if (!db.open())
        throw unavailable(db.lastError());
    for (const QString &pragma : pragmas) {
        QSqlQuery q(db);
        if (!q.exec(pragma))
            throw unavailable(q.lastError());
    }
}

Error sqliteError(const QSqlError &error, const std::string &what)
{
    bool numeric = false;
    // Extended result codes (SQLITE_IOERR_WRITE = 778, …) keep the primary code in the low byte.
    const int code = error.nativeErrorCode().toInt(&numeric) & 0xff;
    const std::string message = what + ": " + error.text().toStdString();
    if (!numeric)
        return Error(ErrorCode::Internal, message);
    switch (code) {
    case 5: // SQLITE_BUSY
    case 6: // SQLITE_LOCKED
        return Error(ErrorCode::LedgerBusy,
                     message + " (another process held the ledger past the busy timeout; nothing "
                               "was written: try again)");
    case 13: // SQLITE_FULL
        return Error(ErrorCode::LedgerUnavailable,
                     message + " (the ledger's disk is full; nothing of this write was kept: free "
                               "space, then repeat)");
    case 10: // SQLITE_IOERR
        return Error(ErrorCode::LedgerUnavailable,
                     message +
                         " (an I/O error on the ledger file; nothing of this write was kept)");
    case 3:  // SQLITE_PERM
    case 8:  // SQLITE_READONLY
    case 23: // SQLITE_AUTH
        return Error(
            ErrorCode::LedgerUnavailable,
            message +
                " (the ledger file or its folder is not writable for this user; commands that only "
                "read, such as show, list and check, open it read-only)");
    case 14: // SQLITE_CANTOPEN
        return Error(ErrorCode::LedgerUnavailable,
                     message +
                         " (cannot open the ledger file, or the -wal and -shm files beside it)");
    case 11: // SQLITE_CORRUPT
    case 26: // SQLITE_NOTADB
        return Error(ErrorCode::LedgerUnavailable,
                     message + " (the file is damaged or not an Idempo ledger)");
    default:
        return Error(ErrorCode::Internal, message);
    }
}

Statement run(SqliteConnection &c, const QString &sql, const QVariantList &binds, const char *what)
{
    auto &slot = c.statements[sql];
    if (!slot) {
        auto query = std::make_unique<QSqlQuery>(c.db);
        query->setForwardOnly(true);
        if (!query->prepare(sql))
            fail(c, *query, what);
        slot = std::move(query);
    }
    QSqlQuery &query = *slot;
    for (int i = 0; i < binds.size(); ++i)
        query.bindValue(i, binds.at(i));
    if (!query.exec()) {
        query.finish();
        fail(c, query, what);
    }
    return Statement(query);
}

WriteTransaction::WriteTransaction(SqliteConnection &connection) : m_connection(connection)
{
    run(m_connection, QStringLiteral("BEGIN IMMEDIATE"), {}, "begin");
}

WriteTransaction::~WriteTransaction()
{
    if (!m_done)
        QSqlQuery(m_connection.db).exec(QStringLiteral("ROLLBACK"));
}

void WriteTransaction::commit()
{
    run(m_connection, QStringLiteral("COMMIT"), {}, "commit");
    m_done = true;
}

} // namespace idempo
