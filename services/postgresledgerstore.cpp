// SPDX-License-Identifier: Apache-2.0
#include "postgresledgerstore.h"

#include "auditchain.h"
#include "error.h"
#include "keyprefix.h"
#include "ledgerrules.h"
#include "migrations.h"
#include "postgresmessagequeue.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace idempo {
namespace {

constexpr std::string_view kColumns =
    "id, namespace, operation_key, run_id, step_id, target, tool_kind, state, payload, "
    "payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner, "
    "lease_expires_at_ms, fencing_token, next_attempt_at_ms, error_class, error_detail, result, "
    "receipt, created_at_ms, updated_at_ms, retention_expires_at_ms, operation_version, "
    "schema_version, value_minor, value_currency";

/// The server's clock; $1 pins it (tests), $2 offsets it.
constexpr std::string_view kNow = PostgresLedgerStore::ServerClockSql;

/// Expands {columns}, {o.columns} (qualified by the alias o) and {now} in a statement template.
/// The pieces are constants of this file: statements never carry input.
std::string sql(std::string_view text)
{
    std::string qualified;
    for (std::size_t start = 0; start < kColumns.size();) {
        std::size_t end = kColumns.find(", ", start);
        if (end == std::string_view::npos)
            end = kColumns.size();
        qualified +=
            (qualified.empty() ? "o." : ", o.") + std::string(kColumns.substr(start, end - start));
        start = end + 2;
    }
    const std::pair<std::string_view, std::string> tokens[] = {{"{columns}", std::string(kColumns)},
                                                               {"{o.columns}", qualified},
                                                               {"{now}", std::string(kNow)}};
    std::string out(text);
    for (const auto &[token, value] : tokens) {
        for (std::size_t at = out.find(token); at != std::string::npos;
             at = out.find(token, at + value.size()))
            out.replace(at, token.size(), value);
    }
    return out;
}

// The claim: one statement, one round trip. `existing` locks the key's row; the clock is read
// in `seen`, after the lock is held, so a claim that queued behind another judges leases at the
// moment it decides. `decided` is planClaim() (ledgerrules.cpp) case by case, projection and
// fingerprint first ('projection_differs' is ClaimResult::projectionDiffers, never recorded);
// `plan` names the write. At most one of created / replaced / moved writes; `event` and
// `announced` derive from what was written and `suppressed` from the answer, so a write that
// did not happen leaves no trace. One race remains: a key inserted by a claim that committed
// after this statement's snapshot is invisible to `existing`, and `created` then conflicts and
// writes nothing; the caller sees no record and runs the statement again with a fresh snapshot.
// Parameters: $1 $2 clock (see kNow), $3 namespace, $4 key, $5 run, $6 step, $7 target,
// $8 tool kind, $9 payload, $10 fingerprint, $11 fingerprint fields, $12 owner, $13 lease ms,
// $14 max attempts, $15 requires approval, $16 record schema version, $17 $18 value (minor units,
// currency; NULL when undeclared).
const std::string kClaimSql = sql(R"SQL(
WITH existing AS MATERIALIZED (
    SELECT {columns} FROM operations
    WHERE namespace = $3 AND operation_key = $4
    FOR UPDATE
),
seen AS MATERIALIZED (
    SELECT e.*, {now} AS now_ms
    FROM (VALUES (1)) AS one (v) LEFT JOIN existing AS e ON true
),
decided AS MATERIALIZED (
    SELECT s.*, CASE
        WHEN s.id IS NULL OR s.retention_expires_at_ms <= s.now_ms THEN
            CASE WHEN $15::boolean THEN 'in_progress' ELSE 'claimed' END
        WHEN s.fingerprint_fields <> $11
             AND ARRAY(SELECT DISTINCT f COLLATE "C"
                       FROM jsonb_array_elements_text(s.fingerprint_fields::jsonb) AS f ORDER BY 1)
                 IS DISTINCT FROM ARRAY(SELECT DISTINCT f COLLATE "C"
                                        FROM jsonb_array_elements_text($11::jsonb) AS f ORDER BY 1)
            THEN 'projection_differs'
        WHEN s.payload_fingerprint <> $10 THEN 'payload_mismatch'
        WHEN s.state IN ('succeeded', 'failed_terminal') THEN 'replayed'
        WHEN s.state IN ('awaiting_approval', 'confirmation_required') THEN 'in_progress'
        WHEN s.state = 'unknown_outcome' THEN 'reconcile_required'
        WHEN s.state IN ('received', 'failed_retryable') THEN
            CASE WHEN s.next_attempt_at_ms > s.now_ms THEN 'retry_later' ELSE 'claimed' END
        WHEN s.lease_expires_at_ms > s.now_ms THEN 'in_progress'
        WHEN s.tool_kind = 'protected_write' THEN 'reconcile_required'
        ELSE 'claimed'
    END AS outcome
    FROM seen AS s
),
plan AS MATERIALIZED (
    SELECT d.*, CASE
        WHEN d.id IS NULL THEN 'create'
        WHEN d.retention_expires_at_ms <= d.now_ms THEN 'replace'
        WHEN d.outcome = 'claimed' THEN 'dispatch'
        WHEN d.outcome = 'reconcile_required' AND d.state = 'dispatching' THEN 'revoke'
        ELSE 'none'
    END AS write
    FROM decided AS d
),
created AS (
    INSERT INTO operations (namespace, operation_key, run_id, step_id, target, tool_kind, state,
        payload, payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner,
        lease_expires_at_ms, fencing_token, created_at_ms, updated_at_ms, operation_version,
        schema_version, value_minor, value_currency)
    SELECT $3, $4, $5, $6, $7, $8,
           CASE WHEN $15::boolean THEN 'awaiting_approval' ELSE 'dispatching' END,
           $9, $10, $11,
           CASE WHEN $15::boolean THEN 0 ELSE 1 END,
           $14::integer,
           CASE WHEN $15::boolean THEN '' ELSE $12 END,
           CASE WHEN $15::boolean THEN NULL ELSE p.now_ms + $13::bigint END,
           CASE WHEN $15::boolean THEN 0 ELSE nextval('fencing_sequence') END,
           p.now_ms, p.now_ms, 1, $16::integer, $17::bigint, $18
    FROM plan AS p
    WHERE p.write = 'create'
    ON CONFLICT (namespace, operation_key) DO NOTHING
    RETURNING {columns}
),
replaced AS (
    UPDATE operations AS o SET
        id = DEFAULT, run_id = $5, step_id = $6, target = $7, tool_kind = $8,
        state = CASE WHEN $15::boolean THEN 'awaiting_approval' ELSE 'dispatching' END,
        payload = $9, payload_fingerprint = $10, fingerprint_fields = $11,
        attempt = CASE WHEN $15::boolean THEN 0 ELSE 1 END,
        max_attempts = $14::integer,
        lease_owner = CASE WHEN $15::boolean THEN '' ELSE $12 END,
        lease_expires_at_ms = CASE WHEN $15::boolean THEN NULL ELSE p.now_ms + $13::bigint END,
        fencing_token = CASE WHEN $15::boolean THEN 0 ELSE nextval('fencing_sequence') END,
        next_attempt_at_ms = NULL, error_class = NULL, error_detail = '', result = '', receipt = '',
        created_at_ms = p.now_ms, updated_at_ms = p.now_ms, retention_expires_at_ms = NULL,
        operation_version = 1, schema_version = $16::integer,
        value_minor = $17::bigint, value_currency = $18
    FROM plan AS p
    WHERE o.id = p.id AND p.write = 'replace'
    RETURNING {o.columns}
),
moved AS (
    UPDATE operations AS o SET
        state = CASE WHEN p.write = 'dispatch' THEN 'dispatching' ELSE 'unknown_outcome' END,
        fencing_token = nextval('fencing_sequence'),
        attempt = CASE WHEN p.write = 'dispatch' THEN o.attempt + 1 ELSE o.attempt END,
        lease_owner = CASE WHEN p.write = 'dispatch' THEN $12 ELSE o.lease_owner END,
        lease_expires_at_ms = CASE WHEN p.write = 'dispatch' THEN p.now_ms + $13::bigint END,
        next_attempt_at_ms = CASE WHEN p.write = 'dispatch' THEN NULL ELSE o.next_attempt_at_ms END,
        error_class = CASE WHEN p.write = 'revoke' THEN 'unknown_outcome' ELSE o.error_class END,
        error_detail = CASE WHEN p.write = 'revoke'
                            THEN 'lease of ' || o.lease_owner || ' lapsed during a protected write'
                            ELSE o.error_detail END,
        updated_at_ms = p.now_ms,
        operation_version = o.operation_version + 1
    FROM plan AS p
    WHERE o.id = p.id AND p.write IN ('dispatch', 'revoke')
    RETURNING {o.columns}
),
written AS (
    SELECT * FROM created UNION ALL SELECT * FROM replaced UNION ALL SELECT * FROM moved
),
history_dropped AS (
    DELETE FROM operation_events AS e USING replaced AS r, plan AS p
    WHERE e.operation_id = p.id
),
event AS (
    INSERT INTO operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt,
                                  actor, error_class, detail)
    SELECT w.id, w.updated_at_ms,
           CASE WHEN p.write IN ('dispatch', 'revoke') THEN p.state END,
           w.state, w.fencing_token, w.attempt, $12, w.error_class,
           CASE p.write
               WHEN 'create' THEN 'created'
               WHEN 'replace' THEN 'created (previous record expired)'
               WHEN 'revoke' THEN w.error_detail
               WHEN 'dispatch' THEN CASE WHEN p.state = 'dispatching'
                                         THEN 'lease of ' || p.lease_owner || ' lapsed; taken over'
                                         ELSE 'claimed' END
           END
    FROM written AS w CROSS JOIN plan AS p
),
announced AS (
    SELECT pg_notify('idempo_operations',
                     json_build_object('ns', w.namespace, 'key', w.operation_key,
                                       'run_id', left(w.run_id, 500), 'state', w.state,
                                       'version', w.operation_version)::text)
    FROM written AS w
),
answer AS (
    SELECT * FROM written
    UNION ALL
    SELECT {columns} FROM plan WHERE write = 'none'
),
suppressed AS (
    INSERT INTO suppressions (namespace, operation_key, at_ms, outcome, state, source, fingerprint)
    SELECT $3, $4, p.now_ms, p.outcome, a.state, $12, $10
    FROM answer AS a CROSS JOIN plan AS p
    WHERE p.outcome NOT IN ('claimed', 'projection_differs')
)
SELECT p.outcome, (SELECT count(*) FROM announced), a.*
FROM plan AS p LEFT JOIN answer AS a ON true
)SQL");

/// Locks the row for a transition and reads the clock once the lock is held (see kClaimSql).
/// Every column is named, so that pgbench can capture the row (pgbenchCycle()).
const std::string kLockSql = sql(R"SQL(
WITH locked AS MATERIALIZED (
    SELECT {columns} FROM operations
    WHERE namespace = $3 AND operation_key = $4
    FOR UPDATE
)
SELECT {now} AS now_ms, l.* FROM (VALUES (1)) AS one (v) LEFT JOIN locked AS l ON true
)SQL");

const std::string kTransitionSql = sql(R"SQL(
WITH updated AS (
    UPDATE operations SET state = $3, attempt = $4::integer, max_attempts = $5::integer,
        lease_owner = $6, lease_expires_at_ms = $7::bigint, fencing_token = $8::bigint,
        next_attempt_at_ms = $9::bigint, error_class = $10, error_detail = $11, result = $12,
        receipt = $13, updated_at_ms = $14::bigint, retention_expires_at_ms = $15::bigint,
        operation_version = $16::bigint
    WHERE id = $1::bigint AND operation_version = $2::bigint
    RETURNING id, namespace, operation_key, run_id, state, operation_version, updated_at_ms,
              fencing_token, attempt, error_class
),
event AS (
    INSERT INTO operation_events (operation_id, at_ms, from_state, to_state, fencing_token, attempt,
                                  actor, error_class, detail)
    SELECT id, updated_at_ms, $17, state, fencing_token, attempt, $18, error_class, $19 FROM updated
),
announced AS (
    SELECT pg_notify('idempo_operations',
                     json_build_object('ns', namespace, 'key', operation_key,
                                       'run_id', left(run_id, 500), 'state', state,
                                       'version', operation_version)::text)
    FROM updated
)
SELECT count(*) FROM announced
)SQL");

const std::string kFindSql =
    sql("SELECT {columns} FROM operations WHERE namespace = $1 AND operation_key = $2");

const std::string kHistorySql =
    "SELECT e.id, e.at_ms, e.from_state, e.to_state, e.fencing_token, e.attempt, e.actor, "
    "e.error_class, "
    "e.detail FROM operation_events AS e JOIN operations AS o ON o.id = e.operation_id "
    "WHERE o.namespace = $1 AND o.operation_key = $2 ORDER BY e.id";

const std::string kSuppressionColumns = "SELECT id, namespace, operation_key, at_ms, outcome, "
                                        "state, source, fingerprint FROM suppressions ";
const std::string kSuppressionsSql =
    kSuppressionColumns + "WHERE id > $1::bigint ORDER BY id LIMIT $2::integer";
const std::string kSuppressionsInNamespaceSql =
    kSuppressionColumns + "WHERE namespace = $3 AND id > $1::bigint ORDER BY id LIMIT $2::integer";

// The clock is a subquery: read once, and comparable with the retention index.
const std::string kPurgeSql = sql(R"SQL(
WITH gone AS (
    DELETE FROM operations WHERE retention_expires_at_ms <= (SELECT {now})
        AND ($3::text = '' OR namespace = $3::text) RETURNING id
),
history_gone AS (
    DELETE FROM operation_events WHERE operation_id IN (SELECT id FROM gone)
)
SELECT count(*) FROM gone
)SQL");

const std::string kLeaseMetricsSql = sql(R"SQL(
SELECT count(*) FILTER (WHERE o.lease_expires_at_ms > n.now_ms),
       count(*) FILTER (WHERE o.lease_expires_at_ms <= n.now_ms),
       (SELECT min(created_at_ms) FROM operations
         WHERE state = 'confirmation_required' AND ($3::text = '' OR namespace = $3::text)),
       (SELECT count(*) FROM operation_events AS e JOIN operations AS eo ON eo.id = e.operation_id
         WHERE $3::text = '' OR eo.namespace = $3::text)
FROM (SELECT {now} AS now_ms) AS n
LEFT JOIN operations AS o ON o.state = 'dispatching' AND ($3::text = '' OR o.namespace = $3::text)
)SQL");

const std::string kNowSql = sql("SELECT {now}");

std::optional<ErrorClass> optionalErrorClass(const PgResult &r, int row, int column)
{
    if (r.isNull(row, column))
        return std::nullopt;
    return parseErrorClass(r.text(row, column));
}

/// The operation in columns column0 … column0 + 27 of `row` ({columns} order).
Operation readOperation(const PgResult &r, int row, int column0)
{
    const auto at = [column0](int i) { return column0 + i; };
    Operation op;
    op.id = r.integer(row, at(0));
    op.ns = r.text(row, at(1));
    op.key = r.text(row, at(2));
    op.runId = r.text(row, at(3));
    op.stepId = r.text(row, at(4));
    op.target = r.text(row, at(5));
    op.kind = parseToolKind(r.text(row, at(6))).value_or(ToolKind::ProtectedWrite);
    op.state = parseState(r.text(row, at(7))).value_or(OperationState::Received);
    op.payload = r.text(row, at(8));
    op.fingerprint = r.text(row, at(9));
    op.fingerprintFields =
        nlohmann::json::parse(r.text(row, at(10))).get<std::vector<std::string>>();
    op.attempt = static_cast<int>(r.integer(row, at(11)));
    op.maxAttempts = static_cast<int>(r.integer(row, at(12)));
    op.leaseOwner = r.text(row, at(13));
    op.leaseExpiresAtMs = r.optionalInteger(row, at(14));
    op.fencingToken = r.integer(row, at(15));
    op.nextAttemptAtMs = r.optionalInteger(row, at(16));
    op.errorClass = optionalErrorClass(r, row, at(17));
    op.errorDetail = r.text(row, at(18));
    op.result = r.text(row, at(19));
    op.receipt = r.text(row, at(20));
    op.createdAtMs = r.integer(row, at(21));
    op.updatedAtMs = r.integer(row, at(22));
    op.retentionExpiresAtMs = r.optionalInteger(row, at(23));
    op.version = r.integer(row, at(24));
    op.schemaVersion = static_cast<int>(r.integer(row, at(25)));
    if (!r.isNull(row, at(26)))
        op.value = Amount{r.integer(row, at(26)), r.text(row, at(27))};
    return op;
}

std::optional<std::string> errorClassText(const std::optional<ErrorClass> &errorClass)
{
    if (!errorClass)
        return std::nullopt;
    return std::string(errorClassName(*errorClass));
}

Error newerSchema(const std::string &ledger, int version, int latest)
{
    return Error(ErrorCode::SchemaMismatch,
                 "ledger " + ledger + " has schema version " + std::to_string(version) +
                     ", newer than this build's " + std::to_string(latest) + "; upgrade idempo");
}

/// The history of (ns, key) on `c`, inside whatever transaction `c` holds.
std::vector<OperationEvent> readHistory(PgConnection &c, const std::string &ns, const std::string &key)
{
    const PgResult r = c.execPrepared("read history", "idempo_history", kHistorySql,
                                                 PgParams().text(ns).text(key));
    std::vector<OperationEvent> events;
    events.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row) {
        OperationEvent e;
        e.id = r.integer(row, 0);
        e.ns = ns;
        e.key = key;
        e.atMs = r.integer(row, 1);
        if (!r.isNull(row, 2))
            e.fromState = parseState(r.text(row, 2));
        e.toState = parseState(r.text(row, 3)).value_or(OperationState::Received);
        e.fencingToken = r.integer(row, 4);
        e.attempt = static_cast<int>(r.integer(row, 5));
        e.actor = r.text(row, 6);
        e.errorClass = optionalErrorClass(r, row, 7);
        e.detail = r.text(row, 8);
        events.push_back(std::move(e));
    }
    return events;
}

/// 0 when the ledger has no schema_migrations table.
int readSchemaVersion(PgConnection &c)
{
    if (c.exec("read schema version", "SELECT to_regclass('schema_migrations') IS NOT NULL")
            .text(0, 0) != "t")
        return 0;
    return static_cast<int>(
        c.exec("read schema version", "SELECT coalesce(max(version), 0) FROM schema_migrations")
            .integer(0, 0));
}

/// Idle connections per connection string, left by threads that ended: the next new thread
/// takes one instead of paying for a new server process. At most kMaxIdle per string stay open.
class IdleConnections final
{
public:
    static IdleConnections &instance()
    {
        static IdleConnections idle;
        return idle;
    }

    std::unique_ptr<PgConnection> take(const std::string &conninfo)
    {
        std::lock_guard lock(m_mutex);
        auto &pool = m_idle[conninfo];
        if (pool.empty())
            return nullptr;
        std::unique_ptr<PgConnection> connection = std::move(pool.back());
        pool.pop_back();
        return connection;
    }

    void put(const std::string &conninfo, std::unique_ptr<PgConnection> connection)
    {
        constexpr std::size_t kMaxIdle = 8;
        std::lock_guard lock(m_mutex);
        auto &pool = m_idle[conninfo];
        if (pool.size() < kMaxIdle)
            pool.push_back(std::move(connection));
    }

private:
    std::mutex m_mutex;
    std::unordered_map<std::string, std::vector<std::unique_ptr<PgConnection>>> m_idle;
};

/// This thread's own connection to each ledger it used, by connection string. Stores on the
/// same ledger share it: it holds no per-store state (the clock travels as parameters).
struct ThreadConnections
{
    std::unordered_map<std::string, std::unique_ptr<PgConnection>> byConninfo;

    ~ThreadConnections()
    {
        for (auto &[conninfo, connection] : byConninfo)
            if (connection->isIdle())
                IdleConnections::instance().put(conninfo, std::move(connection));
    }
};

thread_local ThreadConnections t_connections;

} // namespace

PostgresLedgerStore::PostgresLedgerStore(std::string conninfo)
    : PostgresLedgerStore(std::move(conninfo), Options{})
{
}

PostgresLedgerStore::PostgresLedgerStore(std::string conninfo, Options options)
    : m_conninfo(std::move(conninfo)), m_options(options), m_clockOffsetMs(options.clockOffsetMs),
      m_latestSchema(latestSchemaVersion(QStringLiteral("postgresql")))
{
    // Fails fast on an unreachable or refusing server instead of at the first ledger call.
    connection();
}

PostgresLedgerStore::~PostgresLedgerStore() = default;

PgConnection &PostgresLedgerStore::connection()
{
    auto &mine = t_connections.byConninfo;
    if (const auto it = mine.find(m_conninfo); it != mine.end()) {
        if (it->second->isIdle())
            return *it->second;
        mine.erase(it);
    }
    std::unique_ptr<PgConnection> connection = IdleConnections::instance().take(m_conninfo);
    if (!connection || !connection->isIdle())
        connection = std::make_unique<PgConnection>(m_conninfo, m_options.connectTimeoutS);
    return *(mine[m_conninfo] = std::move(connection));
}

PgParams PostgresLedgerStore::clockParams() const
{
    PgParams params;
    params.optionalInteger(m_options.pinnedClockMs).integer(m_clockOffsetMs.load());
    return params;
}

void PostgresLedgerStore::advanceClockMs(std::int64_t ms)
{
    m_clockOffsetMs += ms;
}

std::string PostgresLedgerStore::describe() const
{
    return redactConninfo(m_conninfo);
}

int PostgresLedgerStore::schemaVersion()
{
    return readSchemaVersion(connection());
}

void PostgresLedgerStore::requireSchema()
{
    if (m_schemaReady.load())
        return;
    const int version = schemaVersion();
    if (version == 0) {
        throw Error(ErrorCode::SchemaMismatch,
                    "ledger " + describe() +
                        " has no idempo schema; run `idempo init` to create it");
    }
    if (version > m_latestSchema)
        throw newerSchema(describe(), version, m_latestSchema);
    if (version < m_latestSchema) {
        throw Error(ErrorCode::SchemaMismatch,
                    "ledger " + describe() + " has schema version " + std::to_string(version) +
                        ", older than this build's " + std::to_string(m_latestSchema) +
                        "; run `idempo init` to upgrade it");
    }
    m_schemaReady = true;
}

void PostgresLedgerStore::migrate()
{
    PgConnection &c = connection();
    PgTransaction tx(c);
    // Concurrent `idempo init`s take turns; the key is arbitrary but fixed ("idempo" in ASCII).
    c.exec("lock migrations", "SELECT pg_advisory_xact_lock(115858279346287)");
    const int current = readSchemaVersion(c);
    if (current > m_latestSchema)
        throw newerSchema(describe(), current, m_latestSchema);
    if (current == 0) {
        c.exec("create schema_migrations",
               "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name "
               "text NOT NULL, "
               "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
    }
    for (const Migration &m : migrations(QStringLiteral("postgresql"))) {
        if (m.version <= current)
            continue;
        // One script, not statement by statement: DO blocks span lines that end in ';'.
        c.execScript("migrate", m.statements.join(QLatin1Char('\n')).toStdString());
        c.exec("record migration",
               "INSERT INTO schema_migrations (version, name) VALUES ($1::integer, $2)",
               PgParams().integer(m.version).text(m.name.toStdString()));
    }
    tx.commit();
    m_schemaReady = true;
}

std::int64_t PostgresLedgerStore::nowMs()
{
    return connection()
        .execPrepared("read clock", "idempo_now", kNowSql, clockParams())
        .integer(0, 0);
}

ClaimResult PostgresLedgerStore::claim(const ClaimRequest &request)
{
    requireSchema();
    PgParams params = clockParams();
    params.text(request.ns)
        .text(request.key)
        .text(request.runId)
        .text(request.stepId)
        .text(request.target)
        .text(toolKindName(request.kind))
        .text(request.payload)
        .text(request.fingerprint)
        .text(nlohmann::json(request.fingerprintFields).dump())
        .text(request.owner)
        .integer(request.leaseMs)
        .integer(request.maxAttempts)
        .boolean(request.requiresApproval)
        .integer(RecordSchemaVersion)
        .optionalInteger(request.value ? std::optional(request.value->minorUnits) : std::nullopt)
        .optionalText(request.value ? std::optional(request.value->currency) : std::nullopt);
    // Runs again only when a concurrent claim created the key after the statement's snapshot
    // (see kClaimSql): the next run sees that record.
    constexpr int kAttempts = 8;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        const PgResult r = connection().execPrepared("claim", "idempo_claim", kClaimSql, params);
        if (r.isNull(0, 2))
            continue;
        if (r.text(0, 0) == "projection_differs")
            return {ClaimOutcome::PayloadMismatch, readOperation(r, 0, 2), true};
        const auto outcome = parseClaimOutcome(r.text(0, 0));
        if (!outcome)
            throw Error(ErrorCode::Internal,
                        "claim answered an unknown outcome '" + r.text(0, 0) + "'");
        return {*outcome, readOperation(r, 0, 2)};
    }
    throw Error(ErrorCode::LedgerUnavailable,
                "claim of '" + request.key +
                    "' kept racing concurrent writers of the same key; try again");
}

Operation PostgresLedgerStore::transition(const TransitionRequest &request)
{
    requireSchema();
    PgConnection &c = connection();
    PgTransaction tx(c);
    Operation op = writeTransition(c, request);
    tx.commit();
    return op;
}

OutboxWrite PostgresLedgerStore::transitionAndSend(const TransitionRequest &request, const std::string &queue,
                                                   const std::string &messageJson, const std::string &headersJson)
{
    requireSchema();
    PgConnection &c = connection();
    PgTransaction tx(c);
    OutboxWrite written;
    written.operation = writeTransition(c, request);
    written.msgId = PostgresMessageQueue::sendInTransaction(c, queue, messageJson, headersJson, 0,
                                                            written.operation.updatedAtMs);
    tx.commit();
    return written;
}

Operation PostgresLedgerStore::writeTransition(PgConnection &c, const TransitionRequest &request)
{
    const auto [nowMs, existing] = lockOperation(c, request.ns, request.key);
    return writeLockedTransition(c, existing, request, nowMs);
}

std::pair<std::int64_t, std::optional<Operation>> PostgresLedgerStore::lockOperation(PgConnection &c,
                                                                                    const std::string &ns,
                                                                                    const std::string &key)
{
    PgParams lockParams = clockParams();
    lockParams.text(ns).text(key);
    const PgResult locked = c.execPrepared("read operation", "idempo_lock", kLockSql, lockParams);
    std::optional<Operation> existing;
    if (!locked.isNull(0, 1))
        existing = readOperation(locked, 0, 1);
    return {locked.integer(0, 0), existing};
}

Operation PostgresLedgerStore::planLockedTransition(PgConnection &c, const std::optional<Operation> &existing,
                                                    const TransitionRequest &request, std::int64_t nowMs)
{
    checkTransition(existing ? &*existing : nullptr, request);
    Operation op = *existing;
    applyTransition(op, request, nowMs, [&c] {
        return c
            .execPrepared("issue fencing token", "idempo_token",
                          "SELECT nextval('fencing_sequence')", {})
            .integer(0, 0);
    });
    return op;
}

void PostgresLedgerStore::writePlannedTransition(PgConnection &c, const Operation &existing, const Operation &op,
                                                 const TransitionRequest &request)
{
    PgParams params;
    params.integer(op.id)
        .integer(existing.version)
        .text(stateName(op.state))
        .integer(op.attempt)
        .integer(op.maxAttempts)
        .text(op.leaseOwner)
        .optionalInteger(op.leaseExpiresAtMs)
        .integer(op.fencingToken)
        .optionalInteger(op.nextAttemptAtMs)
        .optionalText(errorClassText(op.errorClass))
        .text(op.errorDetail)
        .text(op.result)
        .text(op.receipt)
        .integer(op.updatedAtMs)
        .optionalInteger(op.retentionExpiresAtMs)
        .integer(op.version)
        .text(stateName(existing.state))
        .text(request.actor)
        .text(request.detail);
    if (c.execPrepared("update operation", "idempo_transition", kTransitionSql, params)
            .integer(0, 0) != 1)
        throw Error(ErrorCode::Internal, "operation changed while its row was locked");
}

Operation PostgresLedgerStore::writeLockedTransition(PgConnection &c, const std::optional<Operation> &existing,
                                                     const TransitionRequest &request, std::int64_t nowMs)
{
    const Operation op = planLockedTransition(c, existing, request, nowMs);
    writePlannedTransition(c, *existing, op, request);
    return op;
}

std::optional<Operation> PostgresLedgerStore::find(const std::string &ns, const std::string &key)
{
    requireSchema();
    const PgResult r = connection().execPrepared("read operation", "idempo_find", kFindSql,
                                                 PgParams().text(ns).text(key));
    if (r.rows() == 0)
        return std::nullopt;
    return readOperation(r, 0, 0);
}

std::vector<OperationEvent> PostgresLedgerStore::history(const std::string &ns,
                                                         const std::string &key)
{
    requireSchema();
    return readHistory(connection(), ns, key);
}

std::vector<Operation> PostgresLedgerStore::list(const ListFilter &filter)
{
    requireSchema();
    // Unnamed statement, planned for the actual values: the planner drops absent filters and
    // turns the key prefix into an index range.
    const bool byValue = filter.order == ListOrder::ValueDescending;
    const std::string value = "coalesce(value_minor, " + std::to_string(ListFilter::NoValue) + ")";
    std::string statement = sql("SELECT {columns} FROM operations WHERE id > $1::bigint");
    PgParams params;
    params.integer(filter.afterId);
    const auto next = [&params] { return "$" + std::to_string(params.size()); };
    if (byValue && filter.afterValueMinor) {
        // The keyset continues after (value, id): a smaller value, or the same one and a later id.
        statement = sql("SELECT {columns} FROM operations WHERE id > 0");
        params.integer(*filter.afterValueMinor);
        const std::string after = next();
        statement += " AND (" + value + " < " + after + "::bigint OR (" + value + " = " + after
                     + "::bigint AND id > $1::bigint))";
    }
    if (!filter.ns.empty()) {
        params.text(filter.ns);
        statement += " AND namespace = " + next();
    }
    if (filter.state) {
        params.text(stateName(*filter.state));
        statement += " AND state = " + next();
    }
    if (!filter.runId.empty()) {
        params.text(filter.runId);
        statement += " AND run_id = " + next();
    }
    if (!filter.keyPrefix.empty()) {
        // A range, not LIKE: '%' and '_' in a prefix are plain characters. operation_key is
        // COLLATE "C" (byte order), so the bound matches and the key indexes serve the range.
        params.text(filter.keyPrefix);
        statement += " AND operation_key >= " + next();
        if (const std::optional<std::string> upper = keyPrefixUpperBound(filter.keyPrefix)) {
            params.text(*upper);
            statement += " AND operation_key < " + next();
        }
    }
    if (filter.updatedBeforeMs) {
        params.integer(*filter.updatedBeforeMs);
        statement += " AND updated_at_ms < " + next() + "::bigint";
    }
    params.integer(filter.limit);
    statement += (byValue ? " ORDER BY " + value + " DESC, id" : std::string(" ORDER BY id")) + " LIMIT " + next()
                 + "::integer";
    const PgResult r = connection().exec("list operations", statement, params);
    std::vector<Operation> ops;
    ops.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row)
        ops.push_back(readOperation(r, row, 0));
    return ops;
}

std::vector<Suppression> PostgresLedgerStore::suppressions(const std::string &ns,
                                                           std::int64_t afterId, int limit)
{
    requireSchema();
    PgParams params;
    params.integer(afterId).integer(limit);
    PgConnection &c = connection();
    const PgResult r = ns.empty() ? c.execPrepared("list suppressions", "idempo_suppressions",
                                                   kSuppressionsSql, params)
                                  : c.execPrepared("list suppressions", "idempo_suppressions_ns",
                                                   kSuppressionsInNamespaceSql, params.text(ns));
    std::vector<Suppression> rows;
    rows.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row) {
        Suppression s;
        s.id = r.integer(row, 0);
        s.ns = r.text(row, 1);
        s.key = r.text(row, 2);
        s.atMs = r.integer(row, 3);
        s.outcome = parseClaimOutcome(r.text(row, 4)).value_or(ClaimOutcome::Replayed);
        s.state = parseState(r.text(row, 5)).value_or(OperationState::Received);
        s.source = r.text(row, 6);
        s.fingerprint = r.text(row, 7);
        rows.push_back(std::move(s));
    }
    return rows;
}

std::int64_t PostgresLedgerStore::purgeExpired(const std::string &ns)
{
    requireSchema();
    return connection()
        .execPrepared("purge", "idempo_purge", kPurgeSql, clockParams().text(ns))
        .integer(0, 0);
}

LedgerMetrics PostgresLedgerStore::metrics(const std::string &ns)
{
    requireSchema();
    PgConnection &c = connection();
    LedgerMetrics m;
    const PgResult states =
        c.execPrepared("metrics", "idempo_metrics_states",
                       "SELECT state, count(*) FROM operations WHERE $1::text = '' OR namespace = $1::text "
                       "GROUP BY state",
                       PgParams().text(ns));
    for (int row = 0; row < states.rows(); ++row)
        if (const auto s = parseState(states.text(row, 0)))
            m.byState.emplace_back(*s, states.integer(row, 1));
    const PgResult outcomes =
        c.execPrepared("metrics", "idempo_metrics_outcomes",
                       "SELECT outcome, count(*) FROM suppressions WHERE $1::text = '' OR namespace = $1::text "
                       "GROUP BY outcome",
                       PgParams().text(ns));
    for (int row = 0; row < outcomes.rows(); ++row)
        if (const auto o = parseClaimOutcome(outcomes.text(row, 0)))
            m.suppressionsByOutcome.emplace_back(*o, outcomes.integer(row, 1));
    const PgResult leases =
        c.execPrepared("metrics", "idempo_metrics_leases", kLeaseMetricsSql, clockParams().text(ns));
    m.leasesLive = leases.integer(0, 0);
    m.leasesLapsed = leases.integer(0, 1);
    m.oldestPendingConfirmationMs = leases.optionalInteger(0, 2);
    m.events = leases.integer(0, 3);
    return m;
}

std::unique_ptr<PgListener> PostgresLedgerStore::listen() const
{
    return std::make_unique<PgListener>(m_conninfo, NotificationChannel, m_options.connectTimeoutS);
}

PostgresLedgerStore::PgbenchCycle PostgresLedgerStore::pgbenchCycle(const ClaimRequest &claim,
                                                                    const TransitionRequest &completion)
{
    if (completion.to != OperationState::Succeeded || completion.errorClass)
        throw Error(ErrorCode::InvalidArgument, "the pgbench cycle's transition is a completion: to succeeded, no error");
    PgbenchCycle cycle;
    // pgbench binds variables as text, like PgParams, but cannot define an empty one.
    const auto text = [&cycle](const char *name, std::string_view value) -> std::string {
        if (value.empty())
            return "''";
        cycle.defines.push_back(std::string(name) + '=' + std::string(value));
        return std::string(":") + name;
    };
    // The parameters of claim() in order; $1 (the pinned clock) is NULL, which pgbench cannot bind.
    const std::vector<std::string> claimArgs = {
        "NULL",
        text("clock_offset", "0"),
        text("ns", claim.ns),
        ":key",
        text("run_id", claim.runId),
        text("step_id", claim.stepId),
        text("target", claim.target),
        text("tool_kind", toolKindName(claim.kind)),
        text("payload", claim.payload),
        text("fingerprint", claim.fingerprint),
        text("fingerprint_fields", nlohmann::json(claim.fingerprintFields).dump()),
        text("owner", claim.owner),
        text("lease_ms", std::to_string(claim.leaseMs)),
        text("max_attempts", std::to_string(claim.maxAttempts)),
        text("requires_approval", claim.requiresApproval ? "true" : "false"),
        text("record_schema", std::to_string(RecordSchemaVersion)),
        claim.value ? text("value_minor", std::to_string(claim.value->minorUnits)) : "NULL",
        claim.value ? text("value_currency", claim.value->currency) : "NULL",
    };
    // The parameters of transition() for a completion, as applyTransition() sets them from the
    // row locked by kLockSql (captured as l_*): lease, retry and error cleared, retention from now.
    // The NULLs and '' are those cleared values.
    const std::vector<std::string> transitionArgs = {
        ":l_id",
        ":l_operation_version",
        text("to_state", stateName(completion.to)),
        ":l_attempt",
        ":l_max_attempts",
        ":l_lease_owner",
        "NULL",
        ":l_fencing_token",
        "NULL",
        "NULL",
        "''",
        completion.result ? text("result", *completion.result) : ":l_result",
        completion.receipt ? text("receipt", *completion.receipt) : ":l_receipt",
        ":l_now_ms",
        ":retention_at",
        ":next_version",
        ":l_state",
        text("actor", completion.actor),
        text("detail", completion.detail),
    };
    const std::string claimStatement = pgbenchStatement(kClaimSql, claimArgs);
    cycle.defines.push_back("cycle=0");
    cycle.script = "\\set cycle :cycle + 1\n"
                   "\\set key :client_id * 1000000000 + :cycle\n" +
                   claimStatement + ";\nBEGIN;\n" +
                   pgbenchStatement(kLockSql, {"NULL", ":clock_offset", ":ns", ":key"}) + " \\gset l_\n" +
                   "\\set next_version :l_operation_version + 1\n" +
                   "\\set retention_at :l_now_ms + " + std::to_string(completion.retentionMs) + "\n" +
                   pgbenchStatement(kTransitionSql, transitionArgs) + ";\nCOMMIT;\n" +
                   claimStatement + ";\n";
    return cycle;
}

std::optional<OperationNotification> parseOperationNotification(const std::string &payload)
{
    const nlohmann::json j = nlohmann::json::parse(payload, nullptr, false);
    if (!j.is_object())
        return std::nullopt;
    const auto text = [&j](const char *name) -> std::optional<std::string> {
        const auto it = j.find(name);
        if (it == j.end() || !it->is_string())
            return std::nullopt;
        return it->get<std::string>();
    };
    const auto ns = text("ns");
    const auto key = text("key");
    const auto runId = text("run_id");
    const auto state = text("state");
    const auto version = j.find("version");
    if (!ns || !key || !runId || !state || version == j.end() || !version->is_number_integer())
        return std::nullopt;
    const auto parsedState = parseState(*state);
    if (!parsedState)
        return std::nullopt;
    return OperationNotification{*ns, *key, *runId, *parsedState, version->get<std::int64_t>()};
}

} // namespace idempo

namespace idempo {
namespace {

const std::string kApprovalColumns =
    "approval_id, namespace, operation_key, revision, decision, reason, operator, role, "
    "external_reference, proposal, status, operation_version, created_at_ms";

ApprovalRecord readApproval(const PgResult &r, int row)
{
    ApprovalRecord a;
    a.approvalId = r.text(row, 0);
    a.ns = r.text(row, 1);
    a.key = r.text(row, 2);
    a.revision = static_cast<int>(r.integer(row, 3));
    a.decision = r.text(row, 4);
    a.reason = r.text(row, 5);
    a.operatorName = r.text(row, 6);
    a.role = r.text(row, 7);
    a.externalReference = r.text(row, 8);
    a.proposal = r.text(row, 9);
    a.status = r.text(row, 10);
    a.operationVersion = r.integer(row, 11);
    a.createdAtMs = r.integer(row, 12);
    return a;
}

std::vector<ApprovalRecord> readApprovals(const PgResult &r)
{
    std::vector<ApprovalRecord> rows;
    for (int row = 0; row < r.rows(); ++row)
        rows.push_back(readApproval(r, row));
    return rows;
}

std::vector<ApprovalRecord> selectApprovals(PgConnection &c, const std::string &ns, const std::string &key)
{
    return readApprovals(c.execPrepared("read approvals", "idempo_approvals",
                                        "SELECT " + kApprovalColumns
                                            + " FROM approvals WHERE namespace = $1 AND operation_key = $2 "
                                              "ORDER BY created_at_ms, approval_id",
                                        PgParams().text(ns).text(key)));
}

/// Serialises appends to the audit chain across connections; the key is arbitrary but fixed
/// ("idempoa" in ASCII).
constexpr std::int64_t kAuditLock = 29670604302066017;

AuditRecord appendAudit(PgConnection &c, const AuditEntry &entry, std::int64_t nowMs)
{
    c.execPrepared("lock audit chain", "idempo_audit_lock", "SELECT pg_advisory_xact_lock($1::bigint)",
                   PgParams().integer(kAuditLock));
    const PgResult last = c.execPrepared("read audit chain", "idempo_audit_last",
                                         "SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1", {});
    const AuditRecord r = chainAuditEntry(entry, last.rows() ? last.integer(0, 0) + 1 : 1, nowMs,
                                          last.rows() ? last.text(0, 1) : std::string(AuditGenesisHash));
    c.execPrepared("append audit record", "idempo_audit_append",
                   "INSERT INTO audit_log (seq, at_ms, who, role, action, target, reason, before_state, "
                   "after_state, approval_id, detail, prev_hash, hash) VALUES ($1::bigint, $2::bigint, $3, $4, "
                   "$5, $6, $7, $8, $9, $10, $11, $12, $13)",
                   PgParams()
                       .integer(r.seq)
                       .integer(r.atMs)
                       .text(entry.who)
                       .text(entry.role)
                       .text(entry.action)
                       .text(entry.target)
                       .text(entry.reason)
                       .text(entry.beforeState)
                       .text(entry.afterState)
                       .text(entry.approvalId)
                       .text(entry.detail)
                       .text(r.prevHash)
                       .text(r.hash));
    return r;
}

} // namespace

ActorIdentity PostgresLedgerStore::actor()
{
    requireSchema();
    const PgResult r = connection().execPrepared(
        "read identity", "idempo_actor",
        "SELECT current_user, CASE WHEN idempo_is_owner() THEN 'owner' "
        "WHEN idempo_acts_as('idempo_admin') THEN 'admin' "
        "WHEN idempo_acts_as('idempo_approver') THEN 'approver' "
        "WHEN idempo_acts_as('idempo_operator') THEN 'operator' "
        "WHEN idempo_acts_as('idempo_worker') THEN 'worker' "
        "WHEN idempo_acts_as('idempo_viewer') THEN 'viewer' ELSE 'none' END",
        {});
    return {r.text(0, 0), r.text(0, 1)};
}

ActionResult PostgresLedgerStore::applyAction(const ActionTarget &target, const ActionDecider &decide)
{
    requireSchema();
    PgConnection &c = connection();
    PgTransaction tx(c);
    ActionState state;
    std::optional<Operation> current;
    if (!target.key.empty()) {
        auto [nowMs, locked] = lockOperation(c, target.ns, target.key);
        state.nowMs = nowMs;
        current = std::move(locked);
    } else {
        state.nowMs = c.execPrepared("read clock", "idempo_now", kNowSql, clockParams()).integer(0, 0);
    }
    if (current) {
        state.operation = &*current;
        state.approvals = selectApprovals(c, target.ns, target.key);
        state.history = readHistory(c, target.ns, target.key);
    }
    if (!target.approvalId.empty()) {
        const PgResult r = c.execPrepared("read approval", "idempo_approval",
                                          "SELECT " + kApprovalColumns + " FROM approvals WHERE approval_id = $1",
                                          PgParams().text(target.approvalId));
        if (r.rows() > 0)
            state.byApprovalId = readApproval(r, 0);
    }

    ActionResult result;
    result.plan = decide(state);
    const ActionPlan &plan = result.plan;
    result.operation = current;
    if (plan.answer) {
        tx.commit();
        return result;
    }
    // Each step is planned on the record the previous one leaves; written after the audit record.
    std::vector<Operation> steps;
    for (const TransitionRequest &t : plan.transitions) {
        steps.push_back(planLockedTransition(c, steps.empty() ? current : std::optional(steps.back()), t, state.nowMs));
        result.operation = steps.back();
    }
    if (plan.approval) {
        const ApprovalRecord &a = *plan.approval;
        c.execPrepared("record approval", "idempo_approval_insert",
                       "INSERT INTO approvals (" + kApprovalColumns
                           + ") VALUES ($1, $2, $3, $4::integer, $5, $6, $7, $8, $9, $10, $11, $12::bigint, "
                             "$13::bigint)",
                       PgParams()
                           .text(a.approvalId)
                           .text(a.ns)
                           .text(a.key)
                           .integer(a.revision)
                           .text(a.decision)
                           .text(a.reason)
                           .text(a.operatorName)
                           .text(a.role)
                           .text(a.externalReference)
                           .text(a.proposal)
                           .text(a.status)
                           .integer(a.operationVersion)
                           .integer(state.nowMs));
    }
    for (const std::string &id : plan.seconded)
        c.execPrepared("second approval", "idempo_approval_second",
                       "UPDATE approvals SET status = 'seconded' WHERE approval_id = $1 AND status = 'pending'",
                       PgParams().text(id));
    if (plan.setting)
        c.execPrepared("store setting", "idempo_setting_store",
                       "INSERT INTO guard_settings (name, value) VALUES ($1, $2) "
                       "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                       PgParams().text(plan.setting->first).text(plan.setting->second));
    // The audit record goes first: the operations trigger admits a guarded role's change only
    // after its audit record (0005_guarded_actions.sql).
    if (plan.audit) {
        AuditEntry entry = *plan.audit;
        completeAuditEntry(entry, current ? &*current : nullptr, result.operation ? &*result.operation : nullptr);
        result.audit = appendAudit(c, entry, state.nowMs);
    }
    for (std::size_t i = 0; i < steps.size(); ++i)
        writePlannedTransition(c, i == 0 ? *current : steps[i - 1], steps[i], plan.transitions[i]);
    tx.commit();
    return result;
}

std::vector<AuditRecord> PostgresLedgerStore::auditLog(std::int64_t afterSeq, int limit)
{
    requireSchema();
    const PgResult r = connection().execPrepared(
        "read audit log", "idempo_audit_log",
        "SELECT seq, at_ms, who, role, action, target, reason, before_state, after_state, approval_id, detail, "
        "prev_hash, hash FROM audit_log WHERE seq > $1::bigint ORDER BY seq LIMIT $2::integer",
        PgParams().integer(afterSeq).integer(limit));
    std::vector<AuditRecord> rows;
    rows.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row) {
        AuditRecord a;
        a.seq = r.integer(row, 0);
        a.atMs = r.integer(row, 1);
        a.entry = {r.text(row, 2), r.text(row, 3), r.text(row, 4), r.text(row, 5), r.text(row, 6),
                   r.text(row, 7), r.text(row, 8), r.text(row, 9), r.text(row, 10)};
        a.prevHash = r.text(row, 11);
        a.hash = r.text(row, 12);
        rows.push_back(std::move(a));
    }
    return rows;
}

std::vector<ApprovalRecord> PostgresLedgerStore::approvals(const std::string &ns, const std::string &key)
{
    requireSchema();
    return selectApprovals(connection(), ns, key);
}

std::optional<std::string> PostgresLedgerStore::guardSetting(const std::string &name)
{
    requireSchema();
    const PgResult r = connection().execPrepared("read setting", "idempo_setting",
                                                 "SELECT value FROM guard_settings WHERE name = $1",
                                                 PgParams().text(name));
    if (r.rows() == 0)
        return std::nullopt;
    return r.text(0, 0);
}

} // namespace idempo
