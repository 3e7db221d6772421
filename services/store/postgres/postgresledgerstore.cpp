// SPDX-License-Identifier: Apache-2.0
#include "postgresledgerstore.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <QCryptographicHash>

#include "error.h"
#include "keyprefix.h"
#include "migrations.h"
#include "postgresledgerrows.h"
#include "postgresmessagequeue.h"
#include "queuename.h"
#include "queuerules.h"

namespace idempo {
namespace {

// Every write is one call of a function of schema idempo (functions/operations/), so one
// round trip; the clock's two arguments (pinned instant, offset) come last.
constexpr const char *kClaimSql = "SELECT * FROM idempo.claim($1, $2, $3, $4, $5, $6, $7::bigint, "
                                  "$8::integer, $9::boolean, $10, $11, $12, $13, $14, "
                                  "$15::bigint, $16, $17::integer, $18::bigint, $19, $20::bigint, "
                                  "$21::bigint, $22::bigint)";

constexpr const char *kTransitionArgs = "$1, $2, $3, $4::bigint, $5, $6, $7, $8, $9, $10, $11, "
                                        "$12::bigint, $13::bigint, $14::integer, $15::bigint";

const std::string kTransitionSql = "SELECT * FROM idempo.transition(" +
                                   std::string(kTransitionArgs) + ", $16::bigint, $17::bigint)";

const std::string kFindSql = "SELECT " + std::string(kOperationColumns) +
                             " FROM idempo.operations WHERE namespace = $1 AND operation_key = $2";

const std::string kSuppressionColumns = "SELECT id, namespace, operation_key, at_ms, outcome, "
                                        "state, source, fingerprint FROM idempo.suppressions ";
const std::string kSuppressionsSql =
    kSuppressionColumns + "WHERE id > $1::bigint ORDER BY id LIMIT $2::integer";
const std::string kSuppressionsInNamespaceSql =
    kSuppressionColumns + "WHERE namespace = $3 AND id > $1::bigint ORDER BY id LIMIT $2::integer";

constexpr const char *kNowSql = "SELECT idempo.now_ms($1::bigint, $2::bigint)";

// The figures of LedgerMetrics beyond the counts ($1 namespace or '' for all, $2 the store's
// clock, $3 the window's start, $4 the recent window's start). Operations by state are found on
// the listing's (state, ...) indexes and checked against the operations, which a write since the
// listing's refresh may have moved.
constexpr const char *kLedgerMetricsSql = R"SQL(
SELECT (SELECT count(*) FROM idempo.operation_listing AS l JOIN idempo.operations AS o ON o.id = l.id
         WHERE l.state = 'dispatching' AND o.state = 'dispatching' AND o.lease_expires_at_ms > $2::bigint
           AND ($1::text = '' OR l.namespace = $1::text)),
       (SELECT count(*) FROM idempo.operation_listing AS l JOIN idempo.operations AS o ON o.id = l.id
         WHERE l.state = 'dispatching' AND o.state = 'dispatching' AND o.lease_expires_at_ms <= $2::bigint
           AND ($1::text = '' OR l.namespace = $1::text)),
       (SELECT count(*) FROM idempo.operation_events AS e JOIN idempo.operations AS eo ON eo.id = e.operation_id
         WHERE $1::text = '' OR eo.namespace = $1::text),
       (SELECT min(o.updated_at_ms) FROM idempo.operation_listing AS l JOIN idempo.operations AS o ON o.id = l.id
         WHERE l.state = 'confirmation_required' AND o.state = 'confirmation_required'
           AND ($1::text = '' OR l.namespace = $1::text)),
       (SELECT min(o.updated_at_ms) FROM idempo.operation_listing AS l JOIN idempo.operations AS o ON o.id = l.id
         WHERE l.state = 'unknown_outcome' AND o.state = 'unknown_outcome'
           AND ($1::text = '' OR l.namespace = $1::text)),
       r.waiting, r.oldest,
       (SELECT count(*) FROM idempo.suppressions
         WHERE at_ms >= $3::bigint AND ($1::text = '' OR namespace = $1::text)),
       (SELECT count(*) FROM idempo.suppressions
         WHERE at_ms >= $4::bigint AND ($1::text = '' OR namespace = $1::text)),
       (SELECT count(*) FROM idempo.operation_listing AS l
         WHERE l.state IN ('succeeded', 'failed_terminal') AND l.updated_at_ms >= $3::bigint
           AND ($1::text = '' OR l.namespace = $1::text)),
       (SELECT count(*) FROM idempo.runs WHERE state = 'halted' AND ($1::text = '' OR namespace = $1::text))
FROM (SELECT count(*) AS waiting, min(o.updated_at_ms) AS oldest
      FROM idempo.operation_listing AS l JOIN idempo.operations AS o ON o.id = l.id
      WHERE l.state IN ('failed_retryable', 'received') AND ($1::text = '' OR l.namespace = $1::text)
        AND (o.state = 'failed_retryable' OR (o.state = 'received' AND o.next_attempt_at_ms IS NOT NULL))) AS r
)SQL";

// A loose index scan over the (namespace, key) and (namespace, run id) keys: one probe per
// namespace instead of a read of every record.
constexpr const char *kNamespacesSql = R"SQL(
WITH RECURSIVE o(ns) AS (
    SELECT min(namespace) FROM idempo.operations
    UNION ALL SELECT (SELECT min(namespace) FROM idempo.operations WHERE namespace > o.ns) FROM o WHERE o.ns IS NOT NULL),
r(ns) AS (
    SELECT min(namespace) FROM idempo.runs
    UNION ALL SELECT (SELECT min(namespace) FROM idempo.runs WHERE namespace > r.ns) FROM r WHERE r.ns IS NOT NULL)
SELECT ns FROM (SELECT ns FROM o UNION SELECT ns FROM r) AS u WHERE ns IS NOT NULL ORDER BY ns COLLATE "C"
)SQL";

// Creation to final state of the window's latest finals ($1 namespace, $2 window start, $3 limit).
constexpr const char *kFinalDurationsSql = R"SQL(
SELECT o.updated_at_ms - o.created_at_ms
FROM idempo.operation_listing AS l JOIN idempo.operations AS o ON o.id = l.id AND o.state = l.state
WHERE l.state IN ('succeeded', 'failed_terminal') AND l.updated_at_ms >= $2::bigint
  AND ($1::text = '' OR l.namespace = $1::text)
ORDER BY l.updated_at_ms DESC LIMIT $3::integer
)SQL";

std::string sha256Hex(const std::string &text)
{
    return QCryptographicHash::hash(QByteArrayView(text), QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

std::optional<std::string> errorClassText(const std::optional<ErrorClass> &errorClass)
{
    if (!errorClass)
        return std::nullopt;
    return std::string(errorClassName(*errorClass));
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
    appendClock(params);
    return params;
}

PgParams &PostgresLedgerStore::appendClock(PgParams &params) const
{
    return params.optionalInteger(m_options.pinnedClockMs).integer(m_clockOffsetMs.load());
}

void PostgresLedgerStore::advanceClockMs(std::int64_t ms)
{
    m_clockOffsetMs += ms;
}

std::string PostgresLedgerStore::describe() const
{
    return redactConninfo(m_conninfo);
}

PgParams PostgresLedgerStore::claimArguments(const ClaimRequest &request)
{
    PgParams params;
    params.text(request.ns)
        .text(request.key)
        .text(request.payload)
        .text(sha256Hex(request.payload))
        .text(request.owner)
        .text(toolKindName(request.kind))
        .integer(request.leaseMs)
        .integer(request.maxAttempts)
        .boolean(request.requiresApproval)
        .text(request.runId)
        .text(request.stepId)
        .text(request.target)
        .text(nlohmann::json(request.fingerprintFields).dump())
        .text(request.fingerprint)
        .optionalInteger(request.value ? std::optional(request.value->minorUnits) : std::nullopt)
        .optionalText(request.value ? std::optional(request.value->currency) : std::nullopt)
        .integer(RecordSchemaVersion)
        .optionalInteger(request.cost ? std::optional(request.cost->minorUnits) : std::nullopt)
        .optionalText(request.cost ? std::optional(request.cost->currency) : std::nullopt)
        .integer(request.tokens);
    return params;
}

PgParams PostgresLedgerStore::transitionArguments(const TransitionRequest &request)
{
    PgParams params;
    params.text(request.ns)
        .text(request.key)
        .text(stateName(request.from))
        .integer(request.fencingToken)
        .text(stateName(request.to))
        .text(request.actor)
        .text(request.detail)
        .optionalText(request.result)
        .optionalText(request.receipt)
        .optionalText(errorClassText(request.errorClass))
        .optionalText(request.errorDetail)
        .optionalInteger(request.retryDelayMs)
        .optionalInteger(request.leaseMs)
        .optionalInteger(request.extraAttempts ? std::optional<std::int64_t>(*request.extraAttempts)
                                               : std::nullopt)
        .integer(request.retentionMs);
    return params;
}

const char *PostgresLedgerStore::claimSql()
{
    return kClaimSql;
}

const std::string &PostgresLedgerStore::transitionSql()
{
    return kTransitionSql;
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
    PgParams params = claimArguments(request);
    appendClock(params);
    const PgResult r = connection().execPrepared("claim", "idempo_claim", kClaimSql, params);
    if (r.text(0, 0) == "projection_differs")
        return {ClaimOutcome::PayloadMismatch, readOperation(r, 0, 1), true};
    const auto outcome = parseClaimOutcome(r.text(0, 0));
    if (!outcome)
        throw Error(ErrorCode::Internal,
                    "claim answered an unknown outcome '" + r.text(0, 0) + "'");
    return {*outcome, readOperation(r, 0, 1), false, readExhaustion(r, 0, 29)};
}

Operation PostgresLedgerStore::transition(const TransitionRequest &request)
{
    requireSchema();
    PgParams params = transitionArguments(request);
    appendClock(params);
    return readOperation(
        connection().execPrepared("transition", "idempo_transition", kTransitionSql, params), 0, 0);
}

OutboxWrite PostgresLedgerStore::transitionAndSend(const TransitionRequest &request,
                                                   const std::string &queue,
                                                   const std::string &messageJson,
                                                   const std::string &headersJson)
{
    requireSchema();
    const QueueName name(queue);
    const OutgoingMessage message = prepareMessage(messageJson, headersJson);
    PgParams params = transitionArguments(request);
    params.text(name.str())
        .text(message.message)
        .optionalText(message.headers.empty() ? std::nullopt : std::optional(message.headers));
    appendClock(params);
    const PgResult r = connection().execPrepared(
        "transition and send", "idempo_transition_and_send",
        "SELECT (r.operation).*, r.msg_id FROM idempo.transition_and_send($1, $2, $3, $4::bigint, "
        "$5, $16, $17, $18, "
        "$6, $7, $8, $9, $10, $11, $12::bigint, $13::bigint, $14::integer, $15::bigint, "
        "$19::bigint, $20::bigint) AS r",
        params);
    return {readOperation(r, 0, 0), r.integer(0, kOperationColumnCount)};
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
    const std::vector<PayloadMatch> terms = payloadTerms(filter.payload, filter.customer);
    requireSchema();
    PgConnection &c = connection();
    refreshListing(c);
    // Unnamed statement, planned for the actual values: the planner drops absent filters and
    // turns the key prefix into an index range. The page is chosen on the listing (its columns
    // carry the operations' names) among the records that exist and still match the state and
    // age asked for (a write since the refresh may have moved one), so a page is short only at
    // the end; it is read from the operations.
    PgParams params;
    params.integer(filter.afterId);
    ListingOrder order = listingOrder(filter, params);
    const auto next = [&params] { return "$" + std::to_string(params.size()); };
    // In id order the first payload term drives the scan: its side-table range is in operation
    // id order. In any other order each term is a probe of the side table's key.
    const bool driven = !terms.empty() && filter.order == ListOrder::Id;
    std::string from = " FROM idempo.operation_listing WHERE ";
    std::string otherTerms;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        params.text(terms[i].pointer);
        const std::string pointer = next();
        params.text(terms[i].value);
        if (i == 0 && driven)
            from = " FROM idempo.payload_fields AS f JOIN idempo.operation_listing ON id = "
                   "f.operation_id WHERE f.pointer = " +
                   pointer + " AND f.value = " + next() + " AND ";
        else
            otherTerms +=
                " AND EXISTS (SELECT FROM idempo.payload_fields AS g WHERE g.pointer = " + pointer +
                " AND g.value = " + next() + " AND g.operation_id = id)";
    }
    if (driven)
        order = {"f.operation_id > $1::bigint", "f.operation_id"};
    // The page is ranked after its limit: ranked before it, the sort of an order no index serves
    // would not stop at the limit.
    const std::string rankBy = driven ? "id" : order.orderBy;
    std::string page = "SELECT idempo.operation_listing.*" + from + order.cursor + otherTerms;
    std::string current =
        " AND EXISTS (SELECT FROM idempo.operations AS current WHERE current.id = "
        "idempo.operation_listing.id";
    if (!filter.ns.empty()) {
        params.text(filter.ns);
        page += " AND namespace = " + next();
    }
    if (filter.state) {
        params.text(stateName(*filter.state));
        page += " AND state = " + next();
        current += " AND current.state = " + next();
    }
    if (!filter.runId.empty()) {
        params.text(filter.runId);
        page += " AND run_id = " + next();
    }
    if (!filter.keyPrefix.empty()) {
        // A range, not LIKE: '%' and '_' in a prefix are plain characters. operation_key is
        // COLLATE "C" (byte order), so the bound matches and the key indexes serve the range.
        params.text(filter.keyPrefix);
        page += " AND operation_key >= " + next();
        if (const std::optional<std::string> upper = keyPrefixUpperBound(filter.keyPrefix)) {
            params.text(*upper);
            page += " AND operation_key < " + next();
        }
    }
    if (filter.updatedBeforeMs) {
        params.integer(*filter.updatedBeforeMs);
        page += " AND updated_at_ms < " + next() + "::bigint";
        current += " AND current.updated_at_ms < " + next() + "::bigint";
    }
    params.integer(filter.limit);
    page += current + ") ORDER BY " + order.orderBy + " LIMIT " + next() + "::integer";
    const std::string statement =
        "SELECT " + std::string(kOperationColumns) +
        " FROM (SELECT id AS listed_id, row_number() OVER (ORDER BY " + rankBy +
        ") AS listed_rank FROM (" + page +
        ") AS listed) AS page JOIN idempo.operations ON id = page.listed_id ORDER BY "
        "page.listed_rank";
    const PgResult r = c.exec("list operations", statement, params);
    std::vector<Operation> ops;
    ops.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row)
        ops.push_back(readOperation(r, row, 0));
    return ops;
}

void PostgresLedgerStore::refreshListing(PgConnection &c) const
{
    const PgResult r = c.execPrepared("refresh the listing", "idempo_refresh_listing",
                                      "SELECT idempo.refresh_listing()", PgParams());
    if (r.isNull(0, 0))
        spdlog::warn("the listing of {} was not brought up to date (a read-only transaction or "
                     "server, or another session holding the refresh): the newest writes may be "
                     "missing from this list",
                     describe());
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
    PgParams params;
    params.text(ns);
    appendClock(params);
    return connection()
        .execPrepared("purge", "idempo_purge",
                      "SELECT idempo.purge_expired($1, $2::bigint, $3::bigint)", params)
        .integer(0, 0);
}

LedgerMetrics PostgresLedgerStore::metrics(const std::string &ns)
{
    requireSchema();
    PgConnection &c = connection();
    refreshListing(c);
    LedgerMetrics m;
    const PgResult states = c.execPrepared(
        "metrics", "idempo_metrics_states",
        "SELECT state, count(*) FROM idempo.operations WHERE $1::text = '' OR namespace = $1::text "
        "GROUP BY state",
        PgParams().text(ns));
    for (int row = 0; row < states.rows(); ++row)
        if (const auto s = parseState(states.text(row, 0)))
            m.byState.emplace_back(*s, states.integer(row, 1));
    const PgResult outcomes = c.execPrepared("metrics", "idempo_metrics_outcomes",
                                             "SELECT outcome, count(*) FROM idempo.suppressions "
                                             "WHERE $1::text = '' OR namespace = $1::text "
                                             "GROUP BY outcome",
                                             PgParams().text(ns));
    for (int row = 0; row < outcomes.rows(); ++row)
        if (const auto o = parseClaimOutcome(outcomes.text(row, 0)))
            m.suppressionsByOutcome.emplace_back(*o, outcomes.integer(row, 1));
    m.nowMs = nowMs();
    const std::int64_t windowStart = m.nowMs - LedgerMetrics::WindowMs;
    const PgResult r = c.execPrepared("metrics", "idempo_metrics_figures", kLedgerMetricsSql,
                                      PgParams()
                                          .text(ns)
                                          .integer(m.nowMs)
                                          .integer(windowStart)
                                          .integer(m.nowMs - LedgerMetrics::RecentWindowMs));
    m.leasesLive = r.integer(0, 0);
    m.leasesLapsed = r.integer(0, 1);
    m.events = r.integer(0, 2);
    m.oldestConfirmationMs = r.optionalInteger(0, 3);
    m.oldestUnknownOutcomeMs = r.optionalInteger(0, 4);
    m.retriesWaiting = r.integer(0, 5);
    m.oldestRetryMs = r.optionalInteger(0, 6);
    m.suppressionsInWindow = r.integer(0, 7);
    m.suppressionsRecent = r.integer(0, 8);
    m.finalsInWindow = r.integer(0, 9);
    m.runsHalted = r.integer(0, 10);
    const PgResult finals = c.execPrepared(
        "metrics", "idempo_metrics_finals", kFinalDurationsSql,
        PgParams().text(ns).integer(windowStart).integer(LedgerMetrics::FinalSampleLimit));
    for (int row = 0; row < finals.rows(); ++row)
        m.finalDurationsMs.push_back(finals.integer(row, 0));
    return m;
}

std::vector<std::string> PostgresLedgerStore::namespaces()
{
    requireSchema();
    const PgResult r = connection().execPrepared("list namespaces", "idempo_namespaces",
                                                 kNamespacesSql, PgParams());
    std::vector<std::string> names;
    for (int row = 0; row < r.rows(); ++row)
        names.push_back(r.text(row, 0));
    return names;
}

std::unique_ptr<PgChangeFeed> PostgresLedgerStore::listen() const
{
    return std::make_unique<PgChangeFeed>(m_conninfo, std::string(), m_options.connectTimeoutS);
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
