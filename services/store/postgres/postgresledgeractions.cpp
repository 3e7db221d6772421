// SPDX-License-Identifier: Apache-2.0
// PostgresLedgerStore's guarded actions: each plan a command object decides is carried out by
// the function of schema idempo that owns its rules (functions/actions/), which checks
// everything again under the operation's row lock and appends the audit record itself.
#include <nlohmann/json.hpp>

#include "canonicaljson.h"
#include "error.h"
#include "keyprefix.h"
#include "postgresledgerrows.h"
#include "postgresledgerstore.h"

namespace idempo {
namespace {

constexpr const char *kApprovalColumns =
    "approval_id, namespace, operation_key, revision, decision, reason, operator, role, "
    "external_reference, proposal, status, operation_version, created_at_ms";

/// The approval in columns column0 … column0 + 12 of `row` (kApprovalColumns order).
ApprovalRecord readApproval(const PgResult &r, int row, int column0)
{
    const auto at = [column0](int i) { return column0 + i; };
    ApprovalRecord a;
    a.approvalId = r.text(row, at(0));
    a.ns = r.text(row, at(1));
    a.key = r.text(row, at(2));
    a.revision = static_cast<int>(r.integer(row, at(3)));
    a.decision = r.text(row, at(4));
    a.reason = r.text(row, at(5));
    a.operatorName = r.text(row, at(6));
    a.role = r.text(row, at(7));
    a.externalReference = r.text(row, at(8));
    a.proposal = r.text(row, at(9));
    a.status = r.text(row, at(10));
    a.operationVersion = r.integer(row, at(11));
    a.createdAtMs = r.integer(row, at(12));
    return a;
}

std::vector<ApprovalRecord> selectApprovals(PgConnection &c, const std::string &ns,
                                            const std::string &key)
{
    const PgResult r =
        c.execPrepared("read approvals", "idempo_approvals",
                       "SELECT " + std::string(kApprovalColumns) +
                           " FROM idempo.approvals WHERE namespace = $1 AND operation_key = $2 "
                           "ORDER BY created_at_ms, approval_id",
                       PgParams().text(ns).text(key));
    std::vector<ApprovalRecord> rows;
    for (int row = 0; row < r.rows(); ++row)
        rows.push_back(readApproval(r, row, 0));
    return rows;
}

std::optional<ApprovalRecord> selectApproval(PgConnection &c, const std::string &approvalId)
{
    const PgResult r = c.execPrepared("read approval", "idempo_approval",
                                      "SELECT " + std::string(kApprovalColumns) +
                                          " FROM idempo.approvals WHERE approval_id = $1",
                                      PgParams().text(approvalId));
    if (r.rows() == 0)
        return std::nullopt;
    return readApproval(r, 0, 0);
}

constexpr const char *kAuditColumns =
    "seq, at_ms, who, role, action, target, reason, before_state, after_state, "
    "approval_id, detail, prev_hash, target_prev_hash, hash";

std::vector<AuditRecord> readAudit(const PgResult &r)
{
    std::vector<AuditRecord> rows;
    rows.reserve(static_cast<std::size_t>(r.rows()));
    for (int row = 0; row < r.rows(); ++row) {
        AuditRecord a;
        a.seq = r.integer(row, 0);
        a.atMs = r.integer(row, 1);
        a.entry = {r.text(row, 2), r.text(row, 3), r.text(row, 4), r.text(row, 5), r.text(row, 6),
                   r.text(row, 7), r.text(row, 8), r.text(row, 9), r.text(row, 10)};
        a.prevHash = r.text(row, 11);
        a.targetPrevHash = r.text(row, 12);
        a.hash = r.text(row, 13);
        rows.push_back(std::move(a));
    }
    return rows;
}

AuditRecord auditRecord(PgConnection &c, std::int64_t seq)
{
    const std::vector<AuditRecord> rows = readAudit(c.execPrepared(
        "read audit record", "idempo_audit_record",
        "SELECT " + std::string(kAuditColumns) + " FROM idempo.audit_log WHERE seq = $1::bigint",
        PgParams().integer(seq)));
    if (rows.empty())
        throw Error(ErrorCode::Internal, "audit record " + std::to_string(seq) +
                                             " is missing right after it was appended");
    return rows.front();
}

/// A member of the plan's audit detail (canonical JSON the command wrote).
nlohmann::json detailMember(const AuditEntry &entry, const char *name)
{
    const nlohmann::json detail = nlohmann::json::parse(entry.detail, nullptr, false);
    if (!detail.is_object() || !detail.contains(name))
        throw Error(ErrorCode::Internal,
                    "the " + entry.action + " audit detail has no \"" + name + "\"");
    return detail.at(name);
}

/// "queue:NAME" → NAME.
std::string queueOf(const AuditEntry &entry)
{
    constexpr std::string_view prefix = "queue:";
    if (!entry.target.starts_with(prefix))
        throw Error(ErrorCode::Internal,
                    "a DLQ replay's audit target names its queue, not '" + entry.target + "'");
    return entry.target.substr(prefix.size());
}

/// A PostgreSQL array literal of msg_ids, e.g. {1,2,3}.
std::string idArray(const nlohmann::json &ids)
{
    std::string out = "{";
    for (const nlohmann::json &id : ids)
        out += (out.size() > 1 ? "," : "") + std::to_string(id.get<std::int64_t>());
    return out + "}";
}

} // namespace

ActorIdentity PostgresLedgerStore::actor()
{
    requireSchema();
    const PgResult r = connection().execPrepared("read identity", "idempo_actor",
                                                 "SELECT login, role FROM idempo.whoami()", {});
    return {r.text(0, 0), r.text(0, 1)};
}

ActionResult PostgresLedgerStore::applyAction(const ActionTarget &target,
                                              const ActionDecider &decide)
{
    if (!target.runId.empty())
        return applyRunAction(target, decide);
    requireSchema();
    PgConnection &c = connection();
    // The decider sees the ledger as it is now and builds the plan. Its refusals are the fast
    // path of rules the function enforces on its own, under its locks and for every login
    // (tst_ruleparity calls the functions directly and holds both to the same code and words):
    // a state that moved in between is refused there, not applied.
    ActionState state;
    state.nowMs = nowMs();
    std::optional<Operation> current;
    if (!target.key.empty()) {
        current = find(target.ns, target.key);
        if (current) {
            state.operation = &*current;
            state.approvals = selectApprovals(c, target.ns, target.key);
            state.history = readHistory(c, target.ns, target.key);
        }
    }
    if (!target.approvalId.empty())
        state.byApprovalId = selectApproval(c, target.approvalId);

    ActionResult result;
    result.plan = decide(state);
    result.operation = current;
    if (result.plan.answer)
        return result;
    if (!result.plan.audit)
        throw Error(ErrorCode::Internal,
                    "a guarded action on PostgreSQL is carried out with its audit record");
    const std::string &action = result.plan.audit->action;
    std::optional<std::int64_t> seq;
    if (action == "approve" || action == "reject")
        seq = callApprove(c, result);
    else if (action == "reconcile")
        seq = callReconcile(c, target, current, result);
    else if (action == "dlq_replay")
        seq = callReplayBegin(c, *result.plan.audit);
    else if (action == "dlq_replay_finished")
        seq = callReplayFinish(c, *result.plan.audit);
    else if (action == "setting" && result.plan.setting)
        seq = callSetting(c, result.plan);
    else
        throw Error(ErrorCode::InvalidArgument,
                    "the PostgreSQL ledger has no function for the guarded action '" + action +
                        "'");
    if (seq)
        result.audit = auditRecord(c, *seq);
    return result;
}

namespace {

/// The retention of the plan's final record (its first transition's), a day without one.
std::int64_t retentionOf(const ActionPlan &plan)
{
    return plan.transitions.empty() ? 24 * 3600'000 : plan.transitions.front().retentionMs;
}

} // namespace

std::optional<std::int64_t> PostgresLedgerStore::callApprove(PgConnection &c, ActionResult &result)
{
    if (!result.plan.approval)
        throw Error(ErrorCode::Internal, "an approval plan without its approval");
    const ApprovalRecord &a = *result.plan.approval;
    const AuditEntry &audit = *result.plan.audit;
    const std::vector<TransitionRequest> &moves = result.plan.transitions;
    const int extra =
        !moves.empty() && moves.front().extraAttempts ? *moves.front().extraAttempts : 3;
    PgParams params;
    params.integer(a.operationVersion)
        .text(a.ns)
        .text(a.key)
        .text(a.approvalId)
        .text(a.decision)
        .text(a.reason)
        .text(a.externalReference)
        .integer(extra)
        .integer(retentionOf(result.plan))
        .text(audit.who)
        .text(audit.role);
    appendClock(params);
    const PgResult r = c.execPrepared(
        "approve", "idempo_approve_seen",
        "SELECT * FROM idempo.approve_seen($1::bigint, $2, $3, $4, $5, $6, $7, $8::integer, "
        "$9::bigint, $10, $11, $12::bigint, $13::bigint)",
        params);
    ApprovalRecord stored = readApproval(r, 0, 1);
    result.operation = find(a.ns, a.key);
    if (r.text(0, 0) == "replayed") {
        result.plan = ActionPlan{};
        result.plan.answer = std::move(stored);
        return std::nullopt;
    }
    result.plan.approval = std::move(stored);
    return r.integer(0, 14);
}

std::int64_t PostgresLedgerStore::callReconcile(PgConnection &c, const ActionTarget &target,
                                                const std::optional<Operation> &current,
                                                ActionResult &result)
{
    if (!current)
        throw Error(ErrorCode::NotFound,
                    "no operation '" + target.key + "' in namespace '" + target.ns + "'");
    const AuditEntry &audit = *result.plan.audit;
    PgParams params;
    params.text(target.ns)
        .text(target.key)
        .text(canonicalJson(detailMember(audit, "evidence")))
        .text(audit.reason)
        .integer(current->version)
        .integer(retentionOf(result.plan))
        .text(audit.who)
        .text(audit.role);
    appendClock(params);
    const PgResult r = c.execPrepared(
        "reconcile", "idempo_reconcile",
        "SELECT * FROM idempo.reconcile($1, $2, $3, $4, $5::bigint, $6::bigint, $7, $8, "
        "$9::bigint, $10::bigint)",
        params);
    result.operation = find(target.ns, target.key);
    return r.integer(0, 2);
}

std::int64_t PostgresLedgerStore::callReplayBegin(PgConnection &c, const AuditEntry &audit)
{
    PgParams params;
    params.text(queueOf(audit))
        .text(detailMember(audit, "replay_id").get<std::string>())
        .text(idArray(detailMember(audit, "ids")))
        .text(audit.reason)
        .text(audit.detail)
        .integer(detailMember(audit, "idle_limit_ms").get<std::int64_t>())
        .text(audit.who)
        .text(audit.role);
    appendClock(params);
    return c
        .execPrepared("begin replay", "idempo_replay_begin",
                      "SELECT idempo.dlq_replay_begin($1, $2, $3::bigint[], $4, $5, "
                      "$6::bigint, $7, $8, $9::bigint, $10::bigint)",
                      params)
        .integer(0, 0);
}

std::int64_t PostgresLedgerStore::callReplayFinish(PgConnection &c, const AuditEntry &audit)
{
    PgParams params;
    params.text(queueOf(audit))
        .text(detailMember(audit, "replay_id").get<std::string>())
        .text(audit.reason)
        .text(audit.detail)
        .integer(detailMember(audit, "begun_seq").get<std::int64_t>())
        .text(audit.who)
        .text(audit.role);
    appendClock(params);
    return c
        .execPrepared("finish replay", "idempo_replay_finish",
                      "SELECT idempo.dlq_replay_finish($1, $2, $3, $4, $5::bigint, $6, $7, "
                      "$8::bigint, $9::bigint)",
                      params)
        .integer(0, 0);
}

std::int64_t PostgresLedgerStore::callSetting(PgConnection &c, const ActionPlan &plan)
{
    const AuditEntry &audit = *plan.audit;
    PgParams params;
    params.text(plan.setting->first)
        .text(plan.setting->second)
        .text(audit.reason)
        .text(audit.who)
        .text(audit.role);
    appendClock(params);
    return c
        .execPrepared("store setting", "idempo_setting_store",
                      "SELECT idempo.set_guard_setting($1, $2, $3, $4, $5, $6::bigint, $7::bigint)",
                      params)
        .integer(0, 0);
}

ActionResult PostgresLedgerStore::applyRunAction(const ActionTarget &target,
                                                 const ActionDecider &decide)
{
    requireSchema();
    PgConnection &c = connection();
    // As applyAction(): the decider sees the ledger as it is; idempo.run_action judges again
    // under the run's lock.
    ActionState state;
    state.nowMs = nowMs();
    const std::optional<RunRecord> run = findRun(target.ns, target.runId);
    state.run = run ? &*run : nullptr;
    state.runRequests = selectRunRequests(c, target.ns, target.runId);
    if (!target.approvalId.empty())
        state.byRequestId = selectRunRequest(c, target.approvalId);
    ActionResult result;
    result.plan = decide(state);
    result.run = run;
    if (result.plan.runAnswer)
        return result;
    if (!result.plan.audit || !result.plan.runRequest)
        throw Error(ErrorCode::Internal,
                    "a run action's plan without its request and audit record");
    const RunActionRecord &request = *result.plan.runRequest;
    const nlohmann::json asked = nlohmann::json::parse(request.proposal);
    const auto amount = [&asked](const char *name) -> std::optional<Amount> {
        const auto it = asked.find(name);
        if (it == asked.end() || it->is_null())
            return std::nullopt;
        return parseAmount(it->get<std::string>());
    };
    const auto count = [&asked](const char *name) {
        const auto it = asked.find(name);
        return it == asked.end() ? std::int64_t(0) : it->get<std::int64_t>();
    };
    nlohmann::json limits = nlohmann::json::object();
    for (const char *name : {"failed_dispatches", "no_progress_s", "tokens"})
        if (asked.contains(name))
            limits[name] = asked.at(name);
    if (asked.contains("spend")) {
        const std::optional<Amount> spend = amount("spend");
        limits["spend_minor"] = spend ? nlohmann::json(spend->minorUnits) : nlohmann::json();
        if (spend)
            limits["spend_currency"] = spend->currency;
    }
    const std::optional<Amount> add = amount("add_spend");
    PgParams params;
    params.text(request.ns)
        .text(request.runId)
        .text(request.requestId)
        .text(request.action)
        .text(request.reason)
        .integer(count("add_failed_dispatches"))
        .optionalInteger(add ? std::optional(add->minorUnits) : std::nullopt)
        .optionalText(add ? std::optional(add->currency) : std::nullopt)
        .integer(count("add_tokens"))
        .text(limits.dump())
        .text(result.plan.audit->who)
        .text(result.plan.audit->role);
    appendClock(params);
    const PgResult r = c.execPrepared("run action", "idempo_run_action",
                                      "SELECT * FROM idempo.run_action($1, $2, $3, $4, $5, "
                                      "$6::bigint, $7::bigint, $8, $9::bigint, "
                                      "$10::jsonb, $11, $12, $13::bigint, $14::bigint)",
                                      params);
    result.run = findRun(target.ns, target.runId);
    if (r.text(0, 0) == "replayed") {
        const std::optional<RunActionRecord> earlier = selectRunRequest(c, request.requestId);
        result.plan = ActionPlan{};
        result.plan.runAnswer = earlier;
        return result;
    }
    result.plan.runRequest->status = r.text(0, 0);
    result.audit = auditRecord(c, r.integer(0, 1));
    return result;
}

std::vector<AuditRecord> PostgresLedgerStore::auditLog(std::int64_t afterSeq, int limit)
{
    requireSchema();
    return readAudit(connection().execPrepared(
        "read audit log", "idempo_audit_log",
        "SELECT " + std::string(kAuditColumns) +
            " FROM idempo.audit_log WHERE seq > $1::bigint ORDER BY seq LIMIT $2::integer",
        PgParams().integer(afterSeq).integer(limit)));
}

std::vector<AuditRecord> PostgresLedgerStore::auditRecords(const AuditFilter &filter)
{
    checkAuditFilter(filter);
    requireSchema();
    PgParams params;
    const auto next = [&params] { return "$" + std::to_string(params.size()); };
    params.integer(filter.afterSeq);
    std::string statement = "SELECT " + std::string(kAuditColumns) +
                            " FROM idempo.audit_log WHERE seq " +
                            (filter.newestFirst && filter.afterSeq > 0 ? "<" : ">") + " $1::bigint";
    for (const auto &[column, value] :
         {std::pair{"target", &filter.target}, std::pair{"who", &filter.who},
          std::pair{"action", &filter.action}}) {
        if (value->empty())
            continue;
        params.text(*value);
        statement += std::string(" AND ") + column + " = " + next();
    }
    // Ranges, not LIKE: '%' and '_' stay plain characters. target is COLLATE "C" (byte order),
    // so the bound matches and audit_log_target serves the range.
    const auto prefixRange = [&](const std::string &prefix) {
        params.text(prefix);
        statement += " AND target >= " + next();
        if (const std::optional<std::string> upper = keyPrefixUpperBound(prefix)) {
            params.text(*upper);
            statement += " AND target < " + next();
        }
    };
    if (!filter.targetPrefix.empty())
        prefixRange(filter.targetPrefix);
    if (!filter.ns.empty())
        prefixRange(filter.ns + "/");
    if (filter.fromMs) {
        params.integer(*filter.fromMs);
        statement += " AND at_ms >= " + next() + "::bigint";
    }
    if (filter.toMs) {
        params.integer(*filter.toMs);
        statement += " AND at_ms < " + next() + "::bigint";
    }
    params.integer(filter.limit);
    statement += std::string(filter.newestFirst ? " ORDER BY seq DESC" : " ORDER BY seq") +
                 " LIMIT " + next() + "::integer";
    return readAudit(connection().exec("read audit log", statement, params));
}

std::optional<AuditHead> PostgresLedgerStore::auditHead()
{
    requireSchema();
    const PgResult r = connection().execPrepared("read audit head", "idempo_audit_head",
                                                 "SELECT seq, hash FROM idempo.audit_head", {});
    if (r.rows() == 0)
        return std::nullopt;
    return AuditHead{r.integer(0, 0), r.text(0, 1)};
}

std::vector<ApprovalRecord> PostgresLedgerStore::approvals(const std::string &ns,
                                                           const std::string &key)
{
    requireSchema();
    return selectApprovals(connection(), ns, key);
}

std::vector<PendingApproval> PostgresLedgerStore::pendingApprovals(int limit)
{
    requireSchema();
    // Two reads with no column of one table shadowing the other's; joined here by key, so an
    // operation that moved on between them drops its approval from the list.
    const std::string waiting =
        " FROM idempo.approvals AS a WHERE a.status = 'pending' AND a.revision = (SELECT "
        "max(x.revision) FROM idempo.approvals AS x WHERE x.namespace = a.namespace AND "
        "x.operation_key = a.operation_key) AND EXISTS (SELECT FROM idempo.operations AS o WHERE "
        "o.namespace = a.namespace AND o.operation_key = a.operation_key AND o.operation_version "
        "= a.operation_version) ORDER BY a.created_at_ms, a.approval_id LIMIT $1";
    PgConnection &c = connection();
    const PgResult ar = c.execPrepared("read pending approvals", "idempo_pending_approvals",
                                       "SELECT " + std::string(kApprovalColumns) + waiting,
                                       PgParams().integer(limit));
    const PgResult orow = c.execPrepared(
        "read operations awaiting a second approval", "idempo_pending_operations",
        "SELECT " + std::string(kOperationColumns) +
            ", (SELECT e.actor FROM idempo.operation_events AS e WHERE e.operation_id = "
            "operations.id ORDER BY e.id DESC LIMIT 1) FROM idempo.operations WHERE (namespace, "
            "operation_key) IN (SELECT a.namespace, a.operation_key" +
            waiting + ")",
        PgParams().integer(limit));
    std::vector<PendingApproval> rows;
    for (int row = 0; row < ar.rows(); ++row) {
        ApprovalRecord a = readApproval(ar, row, 0);
        for (int o = 0; o < orow.rows(); ++o) {
            Operation op = readOperation(orow, o, 0);
            if (op.ns == a.ns && op.key == a.key && op.version == a.operationVersion) {
                rows.push_back({std::move(a), std::move(op), orow.text(o, kOperationColumnCount)});
                break;
            }
        }
    }
    return rows;
}

std::optional<std::string> PostgresLedgerStore::guardSetting(const std::string &name)
{
    requireSchema();
    const PgResult r = connection().execPrepared(
        "read setting", "idempo_setting", "SELECT value FROM idempo.guard_settings WHERE name = $1",
        PgParams().text(name));
    if (r.rows() == 0)
        return std::nullopt;
    return r.text(0, 0);
}

} // namespace idempo
