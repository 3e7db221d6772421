// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <unordered_map>

#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QString>
#include <QVariantList>

#include "error.h"

namespace idempo {

/// A shared (reader's) lock on the byte range SQLite's writers lock exclusively, taken on a
/// file description of its own (an OFD lock): a writer that closes the ledger meanwhile cannot
/// checkpoint into the file. Released when the object goes, without touching the locks SQLite
/// holds on the same file in this process.
class ReaderLock final
{
public:
    ReaderLock() = default;
    /// Locks `path`; holds nothing when the file cannot be opened or locked.
    explicit ReaderLock(const QString &path);
    ReaderLock(ReaderLock &&other) noexcept;
    ReaderLock &operator=(ReaderLock &&other) noexcept;
    ReaderLock(const ReaderLock &) = delete;
    ReaderLock &operator=(const ReaderLock &) = delete;
    ~ReaderLock();

private:
    int m_fd = -1;
};

/// One thread's connection to the embedded ledger with its prepared statements.
struct SqliteConnection
{
    ReaderLock readerLock; ///< held by read-only connections that read the file as immutable
    QString path;          ///< the ledger file, for messages
    QSqlDatabase db;
    std::unordered_map<QString, std::unique_ptr<QSqlQuery>> statements; ///< by SQL text
};

/// How openLedgerFile() opens the file.
struct SqliteOpenOptions
{
    int busyTimeoutMs = 10'000;
    QString synchronous = QStringLiteral("FULL"); ///< FULL or NORMAL
    bool readOnly = false;
};

/// Opens `connection.db` (added to Qt Sql, not yet open) on the ledger file at `path`.
/// Read-write: WAL, `synchronous`, foreign keys. Read-only: nothing is written, and nothing is
/// created beside the file: when no writer has the ledger open (no -wal or -journal file beside
/// it) the file is read as immutable under a ReaderLock, so that neither its folder nor the file
/// needs to be writable (an auditor's copy); otherwise it is opened read-only beside the
/// writer's -wal and -shm. Either way `query_only` refuses any write. Throws Error(LedgerBusy)
/// or Error(LedgerUnavailable) naming `path`.
void openLedgerFile(SqliteConnection &connection, const QString &path,
                    const SqliteOpenOptions &options);

/// A cached prepared statement, reset when the borrower is done so that no read snapshot or
/// lock outlives the call.
class Statement final
{
public:
    explicit Statement(QSqlQuery &query) : m_query(query) {}
    ~Statement() { m_query.finish(); }
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;
    QSqlQuery *operator->() { return &m_query; }
    QSqlQuery &operator*() { return m_query; }

private:
    QSqlQuery &m_query;
};

/// The engine's error for a failed SQLite call, decided here for the whole embedded store:
/// busy or locked past the busy timeout is Error(LedgerBusy) (try again); a full disk, an I/O
/// error, a read-only file or folder, a file that cannot be opened, is corrupt or is not a
/// database is Error(LedgerUnavailable), saying what to do; anything else is Error(Internal).
/// The message starts with `what` and holds SQLite's own words.
Error sqliteError(const QSqlError &error, const std::string &what);

/// Prepares `sql` once per connection, binds `binds` positionally and executes it.
/// Throws sqliteError() when SQLite refuses.
Statement run(SqliteConnection &connection, const QString &sql, const QVariantList &binds,
              const char *what);

/// BEGIN IMMEDIATE … COMMIT: takes the write lock up front, so a read-then-write cannot
/// interleave with another writer's; rolled back when an exception leaves the scope.
class WriteTransaction final
{
public:
    explicit WriteTransaction(SqliteConnection &connection);
    ~WriteTransaction();
    WriteTransaction(const WriteTransaction &) = delete;
    WriteTransaction &operator=(const WriteTransaction &) = delete;
    void commit();

private:
    SqliteConnection &m_connection;
    bool m_done = false;
};

} // namespace idempo
