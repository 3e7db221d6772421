// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "conninfo.h"

// libpq's handles, declared here so users of this header need not see libpq-fe.h.
struct pg_conn;
struct pg_result;

namespace idempo {

/// Values for a statement's $1, $2, … placeholders, in order. Every value travels as text
/// (integers in decimal; cast them in SQL, e.g. `$3::bigint`); SQL text never carries input.
class PgParams final
{
public:
    /// Throws Error(InvalidArgument) when `value` holds a NUL byte, which PostgreSQL text cannot.
    PgParams &text(std::string_view value);
    PgParams &optionalText(const std::optional<std::string> &value);
    PgParams &integer(std::int64_t value);
    PgParams &optionalInteger(std::optional<std::int64_t> value);
    /// The shortest text that reads back as the same double: a float8 in SQL equals `value`.
    PgParams &real(double value);
    PgParams &boolean(bool value);
    PgParams &null();

    int size() const { return static_cast<int>(m_values.size()); }
    /// The values in order, std::nullopt for NULL.
    const std::vector<std::optional<std::string>> &values() const { return m_values; }
    /// libpq's view: one pointer per value, nullptr for NULL; valid while this object lives.
    std::vector<const char *> pointers() const;

private:
    std::vector<std::optional<std::string>> m_values;
};

/// One statement's result, in text format; owns the libpq result.
class PgResult final
{
public:
    explicit PgResult(pg_result *result);
    PgResult(PgResult &&other) noexcept;
    PgResult &operator=(PgResult &&other) noexcept;
    PgResult(const PgResult &) = delete;
    PgResult &operator=(const PgResult &) = delete;
    ~PgResult();

    int rows() const;
    bool isNull(int row, int column) const;
    std::string text(int row, int column) const;
    /// Throws Error(Internal) when the value is not a whole number.
    std::int64_t integer(int row, int column) const;
    std::optional<std::int64_t> optionalInteger(int row, int column) const;
    /// Hands the libpq result over to the caller, who must PQclear() it.
    pg_result *release();

private:
    pg_result *m_result;
};

/// A notification received on a LISTEN channel.
struct PgNotification
{
    std::string channel;
    std::string payload;
    int senderPid = 0; ///< the notifying server process
};

/// One libpq connection. Not thread-safe: use it from one thread at a time.
/// Every failure throws idempo::Error: LedgerUnavailable when the server cannot be reached or
/// refuses (connection loss, shutdown, authentication, permissions, a full disk, a read-only
/// standby), LedgerBusy when nothing was written and the same request may pass in a moment (lock
/// or statement timeouts, serialization failures, deadlocks, too many connections),
/// SchemaMismatch when the ledger's tables are missing, InvalidArgument for values the server
/// rejects, Internal otherwise. Messages are one line and hold no password; after a lost
/// connection they say that a write in flight may or may not have been applied.
class PgConnection final
{
public:
    /// Connects to `conninfo`: a libpq URI (`postgresql://user@host:5432/db`) or keyword string
    /// (`host=… dbname=…`, `service=NAME`). Passwords come from libpq's own sources (.pgpass,
    /// PGPASSFILE, a service file). Waits at most `connectTimeoutS` seconds unless the string or
    /// PGCONNECT_TIMEOUT sets connect_timeout; a server lost later fails calls within about a
    /// minute (TCP keepalives, tcp_user_timeout; the string may override them). Throws
    /// Error(LedgerUnavailable) with libpq's reason, Error(InvalidArgument) for a string libpq
    /// cannot parse (named by redactConninfo(): nothing of it but its scheme).
    explicit PgConnection(const std::string &conninfo, int connectTimeoutS = 5);
    PgConnection(const PgConnection &) = delete;
    PgConnection &operator=(const PgConnection &) = delete;
    ~PgConnection();

    /// Runs one statement with `params`, planned for these values. `what` names the step in errors.
    PgResult exec(const char *what, std::string_view sql, const PgParams &params = {});

    /// Runs `sql`, prepared on this connection under `name` on first use.
    PgResult execPrepared(const char *what, const std::string &name, std::string_view sql,
                          const PgParams &params);

    /// Runs a script of ';'-separated statements without parameters (DO blocks allowed).
    void execScript(const char *what, const std::string &sql);

    /// Sends `sql` (prepared under `name` on first use) without waiting for its result; one
    /// statement at a time, collected with takeResult(). Throws like exec().
    void sendPrepared(const char *what, const std::string &name, std::string_view sql,
                      const PgParams &params);
    /// The result of the statement sendPrepared() sent once it has arrived, reading what the
    /// socket holds without blocking; std::nullopt while it has not. Throws like exec().
    std::optional<PgResult> takeResult(const char *what);

    /// True when the connection is open and outside any transaction: ready for the next call.
    /// A connection that is not (lost, or left inside a failed transaction) must be replaced.
    bool isIdle() const;

    /// The socket to wait on for notifications.
    int socket() const;

    /// Reads what the server sent without blocking; returns the notifications received, oldest
    /// first.
    std::vector<PgNotification> takeNotifications();

private:
    PgResult check(pg_result *result, const char *what);

    pg_conn *m_conn = nullptr;
    std::unordered_set<std::string> m_prepared;
};

/// BEGIN … COMMIT on one connection, rolled back when an exception leaves the scope. A failed
/// rollback leaves the connection outside idle (PgConnection::isIdle()), and the stores replace
/// such a connection instead of reusing it. Throws like PgConnection::exec().
class PgTransaction final
{
public:
    explicit PgTransaction(PgConnection &connection);
    PgTransaction(const PgTransaction &) = delete;
    PgTransaction &operator=(const PgTransaction &) = delete;
    ~PgTransaction();

    void commit();

private:
    PgConnection &m_connection;
    bool m_done = false;
};

/// A LISTEN on its own connection, for live views: the engine's connections are busy with
/// statements and cannot wait for notifications.
class PgListener final
{
public:
    /// Connects like PgConnection and LISTENs on `channel`. Throws Error(LedgerUnavailable).
    PgListener(const std::string &conninfo, const std::string &channel, int connectTimeoutS = 5);

    /// Waits up to `timeoutMs` milliseconds for a notification; returns every one that has
    /// arrived, oldest first (empty after a timeout). Throws Error(LedgerUnavailable) when the
    /// connection is lost.
    std::vector<PgNotification> waitForNotification(int timeoutMs);

    /// The socket to watch (e.g. with a QSocketNotifier) instead of blocking in
    /// waitForNotification(); call takeNotifications() when it is readable.
    int socket() const;
    /// Reads what arrived without blocking; returns the notifications, oldest first. Throws
    /// Error(LedgerUnavailable) when the connection is lost.
    std::vector<PgNotification> takeNotifications();
    /// One round trip (`SELECT 1`): a dropped connection, which a silent socket does not reveal,
    /// throws Error(LedgerUnavailable).
    void ping();

private:
    PgConnection m_connection;
};

/// Live views' change feed on a connection of its own, shaped like PgListener (socket(),
/// takeNotifications(), ping(), waitForNotification()): it long-polls idempo.wait_for_changes()
/// (functions/listing/wait_for_changes.sql), which answers as soon as an operation was created or
/// moved since the last answer, or after WaitMs with nothing. Writers never notify, so their
/// commits never queue behind PostgreSQL's notify lock. Each change arrives as a PgNotification on
/// channel `idempo_operations` whose payload is {"ns","key","run_id","state","version"}.
class PgChangeFeed final
{
public:
    /// How long one wait lasts on the server, in milliseconds.
    static constexpr int WaitMs = 400;

    /// Connects like PgConnection and starts following the changes of namespace `ns` (empty:
    /// every namespace) made from now on. Throws Error(LedgerUnavailable), Error(SchemaMismatch).
    PgChangeFeed(const std::string &conninfo, std::string ns = {}, int connectTimeoutS = 5);

    /// Waits up to `timeoutMs` milliseconds for changes; returns every one that has arrived,
    /// oldest first (empty after a timeout). Throws Error(LedgerUnavailable) when the
    /// connection is lost.
    std::vector<PgNotification> waitForNotification(int timeoutMs);
    /// The socket to watch: readable whenever a wait answered.
    int socket() const;
    /// Reads what arrived without blocking and asks for the next wait; returns the changes,
    /// oldest first. Throws Error(LedgerUnavailable) when the connection is lost.
    std::vector<PgNotification> takeNotifications();
    /// Throws Error(LedgerUnavailable) when the feed has not answered for far longer than a
    /// wait lasts: a dropped connection a silent socket does not reveal.
    void ping();

private:
    void ask();

    PgConnection m_connection;
    std::string m_ns;
    std::string m_snapshot;
    std::chrono::steady_clock::time_point m_askedAt;
};

} // namespace idempo
