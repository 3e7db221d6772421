// SPDX-License-Identifier: Apache-2.0
#include "pgconnection.h"

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include <libpq-fe.h>
#include <poll.h>
#include <spdlog/spdlog.h>

#include "error.h"

namespace idempo {
namespace {

/// libpq's messages span lines ("…failed: Connection refused\n\tIs the server running…");
/// callers print one line.
std::string oneLine(std::string_view message)
{
    std::string out;
    std::size_t start = 0;
    while (start <= message.size()) {
        std::size_t end = message.find('\n', start);
        if (end == std::string_view::npos)
            end = message.size();
        std::string_view line = message.substr(start, end - start);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
            line.remove_prefix(1);
        while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
            line.remove_suffix(1);
        if (!line.empty()) {
            if (!out.empty())
                out += "; ";
            out += line;
        }
        start = end + 1;
    }
    return out;
}

/// The ledger functions' own SQLSTATEs (0006_function_api.sql): class ID.
bool isLedgerRule(std::string_view state)
{
    return state.size() == 5 && state.starts_with("ID");
}

/// The engine's error code for a PostgreSQL SQLSTATE, decided here for the whole shared store.
ErrorCode codeForSqlState(std::string_view state)
{
    if (state.size() != 5)
        return ErrorCode::Internal;
    if (isLedgerRule(state)) {
        // ID001 … ID008, as 0006_function_api.sql numbers them; ID009 since schema 26.
        constexpr ErrorCode kRules[] = {
            ErrorCode::InvalidKey,        ErrorCode::InvalidJson, ErrorCode::PayloadTooLarge,
            ErrorCode::InvalidArgument,   ErrorCode::NotFound,    ErrorCode::StaleLease,
            ErrorCode::IllegalTransition, ErrorCode::Refused,     ErrorCode::InProgress};
        constexpr int kCount = sizeof kRules / sizeof kRules[0];
        const int n = (state[2] - '0') * 100 + (state[3] - '0') * 10 + (state[4] - '0');
        return n >= 1 && n <= kCount ? kRules[n - 1] : ErrorCode::Internal;
    }
    const std::string_view cls = state.substr(0, 2);
    // Nothing was written and the same request may pass in a moment: 40 serialization failure or
    // deadlock, 55P03 lock timeout, 57014 statement timeout or cancel, 53300 too many connections.
    if (cls == "40" || state == "55P03" || state == "57014" || state == "53300")
        return ErrorCode::LedgerBusy;
    // 08 connection, 57 operator intervention (57P01 admin shutdown, 57P02 crash shutdown, 57P03
    // cannot connect now), 53 resources (disk full), 28 authorization, 42501 missing privilege,
    // 25006 a read-only server (a standby): unusable now or for this role.
    if (cls == "08" || cls == "57" || cls == "53" || cls == "28" || state == "42501" ||
        state == "25006")
        return ErrorCode::LedgerUnavailable;
    if (state == "42P01" || state == "42703")
        return ErrorCode::SchemaMismatch;
    if (cls == "22")
        return ErrorCode::InvalidArgument;
    return ErrorCode::Internal;
}

void receiveNotice(void *, const PGresult *notice)
{
    const char *severity = PQresultErrorField(notice, PG_DIAG_SEVERITY_NONLOCALIZED);
    const char *message = PQresultErrorField(notice, PG_DIAG_MESSAGE_PRIMARY);
    if (!message)
        return;
    if (severity && std::strcmp(severity, "WARNING") == 0)
        spdlog::warn("postgresql: {}", message);
    else
        spdlog::debug("postgresql: {}", message);
}

} // namespace

PgParams &PgParams::text(std::string_view value)
{
    if (value.find('\0') != std::string_view::npos)
        throw Error(ErrorCode::InvalidArgument, "text for the ledger must not contain NUL bytes");
    m_values.emplace_back(std::string(value));
    return *this;
}

PgParams &PgParams::optionalText(const std::optional<std::string> &value)
{
    return value ? text(*value) : null();
}

PgParams &PgParams::integer(std::int64_t value)
{
    m_values.emplace_back(std::to_string(value));
    return *this;
}

PgParams &PgParams::real(double value)
{
    std::array<char, 32> buffer{};
    const auto end = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value).ptr;
    m_values.emplace_back(std::string(buffer.data(), end));
    return *this;
}

PgParams &PgParams::optionalInteger(std::optional<std::int64_t> value)
{
    return value ? integer(*value) : null();
}

PgParams &PgParams::boolean(bool value)
{
    m_values.emplace_back(value ? "true" : "false");
    return *this;
}

PgParams &PgParams::null()
{
    m_values.emplace_back(std::nullopt);
    return *this;
}

std::vector<const char *> PgParams::pointers() const
{
    std::vector<const char *> out;
    out.reserve(m_values.size());
    for (const auto &v : m_values)
        out.push_back(v ? v->c_str() : nullptr);
    return out;
}

PgResult::PgResult(pg_result *result) : m_result(result) {}

PgResult::PgResult(PgResult &&other) noexcept : m_result(std::exchange(other.m_result, nullptr)) {}

PgResult &PgResult::operator=(PgResult &&other) noexcept
{
    if (this != &other) {
        PQclear(m_result);
        m_result = std::exchange(other.m_result, nullptr);
    }
    return *this;
}

PgResult::~PgResult()
{
    PQclear(m_result);
}

pg_result *PgResult::release()
{
    return std::exchange(m_result, nullptr);
}

int PgResult::rows() const
{
    return PQntuples(m_result);
}

bool PgResult::isNull(int row, int column) const
{
    return PQgetisnull(m_result, row, column) != 0;
}

std::string PgResult::text(int row, int column) const
{
    return std::string(PQgetvalue(m_result, row, column),
                       static_cast<std::size_t>(PQgetlength(m_result, row, column)));
}

std::int64_t PgResult::integer(int row, int column) const
{
    const char *value = PQgetvalue(m_result, row, column);
    const char *end = value + PQgetlength(m_result, row, column);
    std::int64_t out = 0;
    const auto parsed = std::from_chars(value, end, out);
    if (parsed.ec != std::errc() || parsed.ptr != end || value == end) {
        throw Error(ErrorCode::Internal, "column " + std::string(PQfname(m_result, column)) +
                                             " holds '" + std::string(value, end) +
                                             "', not a whole number");
    }
    return out;
}

std::optional<std::int64_t> PgResult::optionalInteger(int row, int column) const
{
    if (isNull(row, column))
        return std::nullopt;
    return integer(row, column);
}

PgConnection::PgConnection(const std::string &conninfo, int connectTimeoutS)
{
    // libpq's own reason for a string it cannot parse quotes the string, password and all.
    if (!parseConninfo(conninfo)) {
        throw Error(ErrorCode::InvalidArgument,
                    "cannot read the ledger address " + redactConninfo(conninfo) +
                        ": libpq cannot parse it (keywords are lower case, URI parts "
                        "percent-encoded; psql with the same string names the fault)");
    }
    const std::string libpqForm = libpqConninfo(conninfo);
    // Entries before dbname are defaults the connection string may override; client_encoding
    // after it is forced: keys and payloads are UTF-8.
    const std::string timeout = std::to_string(connectTimeoutS);
    std::vector<const char *> keywords;
    std::vector<const char *> values;
    if (!std::getenv("PGCONNECT_TIMEOUT")) {
        keywords.push_back("connect_timeout");
        values.push_back(timeout.c_str());
    }
    // A server that vanishes mid-call (partition, dead host) fails the call within about a
    // minute instead of the operating system's hours: keepalives probe an idle connection,
    // tcp_user_timeout bounds unacknowledged writes. A slow statement is not affected.
    keywords.insert(keywords.end(), {"keepalives_idle", "keepalives_interval", "keepalives_count",
                                     "tcp_user_timeout", "fallback_application_name", "dbname",
                                     "client_encoding", nullptr});
    values.insert(values.end(),
                  {"30", "10", "3", "60000", "idempo", libpqForm.c_str(), "UTF8", nullptr});
    m_conn = PQconnectdbParams(keywords.data(), values.data(), 1);
    if (!m_conn)
        throw Error(ErrorCode::LedgerUnavailable, "cannot connect to the ledger: out of memory");
    if (PQstatus(m_conn) != CONNECTION_OK) {
        const std::string reason = oneLine(PQerrorMessage(m_conn));
        PQfinish(m_conn);
        m_conn = nullptr;
        throw Error(ErrorCode::LedgerUnavailable,
                    "cannot connect to the ledger " + redactConninfo(conninfo) + ": " + reason);
    }
    PQsetNoticeReceiver(m_conn, receiveNotice, nullptr);
}

PgConnection::~PgConnection()
{
    PQfinish(m_conn);
}

PgResult PgConnection::check(pg_result *raw, const char *what)
{
    PgResult result(raw);
    const ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY)
        return result;
    const char *state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    const char *primary = raw ? PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
    const bool lost = PQstatus(m_conn) == CONNECTION_BAD;
    const ErrorCode code =
        lost ? ErrorCode::LedgerUnavailable : codeForSqlState(state ? state : "");
    // A ledger function's refusal is the ledger's answer, worded as the embedded ledger words it.
    if (!lost && state && primary && isLedgerRule(state))
        throw Error(code, oneLine(primary));
    std::string message =
        std::string(what) + ": " + oneLine(primary ? primary : PQerrorMessage(m_conn));
    if (state)
        message += " (SQLSTATE " + std::string(state) + ")";
    if (lost)
        message += "; the connection to the ledger was lost, so a write in flight may or may not "
                   "have been applied";
    if (code == ErrorCode::SchemaMismatch)
        message += "; run `idempo init` to create or upgrade the ledger's schema";
    throw Error(code, message);
}

PgResult PgConnection::exec(const char *what, std::string_view sql, const PgParams &params)
{
    const std::string statement(sql);
    const std::vector<const char *> values = params.pointers();
    return check(PQexecParams(m_conn, statement.c_str(), params.size(), nullptr, values.data(),
                              nullptr, nullptr, 0),
                 what);
}

PgResult PgConnection::execPrepared(const char *what, const std::string &name, std::string_view sql,
                                    const PgParams &params)
{
    if (!m_prepared.contains(name)) {
        const std::string statement(sql);
        check(PQprepare(m_conn, name.c_str(), statement.c_str(), params.size(), nullptr), what);
        m_prepared.insert(name);
    }
    const std::vector<const char *> values = params.pointers();
    return check(
        PQexecPrepared(m_conn, name.c_str(), params.size(), values.data(), nullptr, nullptr, 0),
        what);
}

void PgConnection::execScript(const char *what, const std::string &sql)
{
    check(PQexec(m_conn, sql.c_str()), what);
}

void PgConnection::sendPrepared(const char *what, const std::string &name, std::string_view sql,
                                const PgParams &params)
{
    if (!m_prepared.contains(name)) {
        const std::string statement(sql);
        check(PQprepare(m_conn, name.c_str(), statement.c_str(), params.size(), nullptr), what);
        m_prepared.insert(name);
    }
    const std::vector<const char *> values = params.pointers();
    if (!PQsendQueryPrepared(m_conn, name.c_str(), params.size(), values.data(), nullptr, nullptr,
                             0))
        check(nullptr, what);
}

std::optional<PgResult> PgConnection::takeResult(const char *what)
{
    if (!PQconsumeInput(m_conn))
        throw Error(ErrorCode::LedgerUnavailable,
                    std::string(what) + ": " + oneLine(PQerrorMessage(m_conn)));
    if (PQisBusy(m_conn))
        return std::nullopt;
    std::optional<PgResult> first;
    // The statement's results end with a null one; only then is the connection free again.
    while (pg_result *raw = PQgetResult(m_conn)) {
        if (!first)
            first.emplace(raw);
        else
            PQclear(raw);
    }
    if (!first)
        throw Error(ErrorCode::Internal, std::string(what) + ": no statement was sent");
    return check(first->release(), what);
}

bool PgConnection::isIdle() const
{
    return PQstatus(m_conn) == CONNECTION_OK && PQtransactionStatus(m_conn) == PQTRANS_IDLE;
}

int PgConnection::socket() const
{
    return PQsocket(m_conn);
}

std::vector<PgNotification> PgConnection::takeNotifications()
{
    if (!PQconsumeInput(m_conn)) {
        throw Error(ErrorCode::LedgerUnavailable, "lost the ledger connection while listening: " +
                                                      oneLine(PQerrorMessage(m_conn)));
    }
    std::vector<PgNotification> out;
    while (PGnotify *n = PQnotifies(m_conn)) {
        out.push_back({n->relname, n->extra, n->be_pid});
        PQfreemem(n);
    }
    return out;
}

PgTransaction::PgTransaction(PgConnection &connection) : m_connection(connection)
{
    m_connection.exec("begin", "BEGIN");
}

PgTransaction::~PgTransaction()
{
    if (m_done)
        return;
    try {
        m_connection.exec("rollback", "ROLLBACK");
    } catch (const Error &) {
        // The connection is no longer idle: its owner replaces it before the next call.
    }
}

void PgTransaction::commit()
{
    m_done = true;
    m_connection.exec("commit", "COMMIT");
}

PgListener::PgListener(const std::string &conninfo, const std::string &channel, int connectTimeoutS)
    : m_connection(conninfo, connectTimeoutS)
{
    // LISTEN takes no parameters: the channel is quoted as an identifier instead.
    std::string quoted = "\"";
    for (char c : channel) {
        if (c == '\0')
            throw Error(ErrorCode::InvalidArgument, "a channel name must not contain NUL bytes");
        quoted += c;
        if (c == '"')
            quoted += '"';
    }
    quoted += '"';
    m_connection.execScript("listen", "LISTEN " + quoted);
}

std::vector<PgNotification> PgListener::waitForNotification(int timeoutMs)
{
    using Clock = std::chrono::steady_clock;
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
    for (;;) {
        std::vector<PgNotification> arrived = m_connection.takeNotifications();
        if (!arrived.empty())
            return arrived;
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0)
            return {};
        pollfd fd{m_connection.socket(), POLLIN, 0};
        if (::poll(&fd, 1, static_cast<int>(left)) < 0 && errno != EINTR) {
            throw Error(ErrorCode::LedgerUnavailable,
                        std::string("waiting for ledger notifications failed: ") +
                            std::strerror(errno));
        }
    }
}

int PgListener::socket() const
{
    return m_connection.socket();
}

std::vector<PgNotification> PgListener::takeNotifications()
{
    std::vector<PgNotification> arrived = m_connection.takeNotifications();
    // The server's goodbye (an administrator's termination) is read as input without error;
    // only the status then tells that nothing more will come.
    if (!m_connection.isIdle())
        throw Error(ErrorCode::LedgerUnavailable, "lost the ledger connection while listening");
    return arrived;
}

void PgListener::ping()
{
    m_connection.exec("ping", "SELECT 1");
}

} // namespace idempo
