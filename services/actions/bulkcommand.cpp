// SPDX-License-Identifier: Apache-2.0
#include "bulkcommand.h"

#include <algorithm>
#include <map>
#include <set>

#include "approvecommand.h"
#include "error.h"
#include "reconcilecommand.h"

namespace idempo {
namespace {

constexpr BulkResult AllResults[] = {BulkResult::Applied, BulkResult::Pending,
                                     BulkResult::AlreadyDone, BulkResult::SkippedChanged,
                                     BulkResult::Refused};

Capability capabilityOf(BulkAction action)
{
    return action == BulkAction::Reconcile ? Capability::Reconcile : Capability::Approve;
}

std::vector<OperationState> statesOf(BulkAction action)
{
    if (action == BulkAction::Reconcile)
        return {OperationState::UnknownOutcome, OperationState::Dispatching,
                OperationState::ConfirmationRequired};
    return {OperationState::AwaitingApproval, OperationState::ConfirmationRequired};
}

std::string plural(std::int64_t n, const char *word)
{
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// The operation version an audit record's snapshot (operationSnapshot()) names.
std::optional<std::int64_t> snapshotVersion(const std::string &snapshot)
{
    const nlohmann::json j = nlohmann::json::parse(snapshot, nullptr, false);
    if (!j.is_object() || !j.contains("version") || !j.at("version").is_number_integer())
        return std::nullopt;
    return j.at("version").get<std::int64_t>();
}

/// The latest of `acts` made on `version`, or null.
template <typename Act> const Act *actOn(const std::vector<Act> &acts, std::int64_t version)
{
    const auto it = std::find_if(acts.rbegin(), acts.rend(),
                                 [version](const Act &a) { return a.version == version; });
    return it == acts.rend() ? nullptr : &*it;
}

} // namespace

std::string_view bulkActionName(BulkAction action)
{
    switch (action) {
    case BulkAction::Approve:
        return "approve";
    case BulkAction::Reject:
        return "reject";
    case BulkAction::Reconcile:
        return "reconcile";
    }
    return "approve";
}

std::optional<BulkAction> parseBulkAction(std::string_view name)
{
    for (const BulkAction a : {BulkAction::Approve, BulkAction::Reject, BulkAction::Reconcile})
        if (bulkActionName(a) == name)
            return a;
    return std::nullopt;
}

std::string_view bulkResultName(BulkResult result)
{
    switch (result) {
    case BulkResult::Applied:
        return "applied";
    case BulkResult::Pending:
        return "pending";
    case BulkResult::AlreadyDone:
        return "already_done";
    case BulkResult::SkippedChanged:
        return "skipped_changed";
    case BulkResult::Refused:
        return "refused";
    }
    return "refused";
}

std::int64_t BulkOutcome::tally(BulkResult result) const
{
    std::int64_t n = 0;
    for (const BulkItem &item : items)
        n += item.result == result ? 1 : 0;
    return n;
}

nlohmann::json BulkOutcome::toJson() const
{
    nlohmann::json rows = nlohmann::json::array();
    for (const BulkItem &item : items)
        rows.push_back(
            {{"namespace", item.target.ns},
             {"key", item.target.key},
             {"version", item.target.version},
             {"result", bulkResultName(item.result)},
             {"detail", item.detail},
             {"state", item.state},
             {"audit_seq", item.auditSeq ? nlohmann::json(*item.auditSeq) : nlohmann::json()}});
    nlohmann::json j = {{"action", bulkActionName(action)},
                        {"count", count},
                        {"not_reached", notReached()},
                        {"cancelled", cancelled},
                        {"items", rows}};
    for (const BulkResult r : AllResults)
        j[std::string(bulkResultName(r))] = tally(r);
    return j;
}

std::string BulkOutcome::text() const
{
    std::string s = "Bulk " + std::string(bulkActionName(action)) + " of " +
                    plural(count, "operation") + ": " + std::to_string(tally(BulkResult::Applied)) +
                    " applied";
    if (const auto n = tally(BulkResult::Pending))
        s += ", " + std::to_string(n) + " waiting for a second approver";
    if (const auto n = tally(BulkResult::AlreadyDone))
        s += ", " + std::to_string(n) + " already done";
    s += ", " + std::to_string(tally(BulkResult::SkippedChanged)) +
         " skipped (changed since frozen), " + std::to_string(tally(BulkResult::Refused)) +
         " refused";
    if (cancelled)
        s += "; stopped, " + std::to_string(notReached()) + " not touched";
    return s + ".";
}

BulkCommand::BulkCommand(LedgerStore &store, ActorIdentity actor, Request request, Options options)
    : m_store(store), m_actor(std::move(actor)), m_request(std::move(request)),
      m_options(std::move(options))
{
    std::set<std::pair<std::string, std::string>> seen;
    std::vector<BulkTarget> unique;
    for (BulkTarget &t : m_request.targets)
        if (seen.insert({t.ns, t.key}).second)
            unique.push_back(std::move(t));
    m_request.targets = std::move(unique);
}

bool BulkCommand::takes(BulkAction action, const Operation &op, std::int64_t nowMs)
{
    if (action == BulkAction::Reconcile)
        return ReconcileCommand::eligible(op, nowMs);
    return op.state == OperationState::AwaitingApproval ||
           op.state == OperationState::ConfirmationRequired;
}

std::vector<BulkTarget> BulkCommand::freeze(LedgerStore &store, ListFilter filter,
                                            BulkAction action)
{
    std::vector<OperationState> states = statesOf(action);
    if (filter.state) {
        const bool taken = std::find(states.begin(), states.end(), *filter.state) != states.end();
        states = taken ? std::vector<OperationState>{*filter.state} : std::vector<OperationState>{};
    }
    const std::int64_t now = store.nowMs();
    std::vector<Operation> found;
    for (const OperationState state : states) {
        filter.state = state;
        filter.afterId = 0;
        filter.order = ListOrder::Id;
        filter.limit = 1000;
        for (;;) {
            const std::vector<Operation> page = store.list(filter);
            for (const Operation &op : page) {
                if (!takes(action, op, now))
                    continue;
                if (static_cast<std::int64_t>(found.size()) == MaxTargets)
                    throw Error(ErrorCode::InvalidArgument,
                                "more than " + std::to_string(MaxTargets) +
                                    " operations match: narrow the filter (one bulk run takes at "
                                    "most " +
                                    std::to_string(MaxTargets) + ")");
                found.push_back(op);
            }
            if (static_cast<int>(page.size()) < filter.limit)
                break;
            filter.afterId = page.back().id;
        }
    }
    std::sort(found.begin(), found.end(),
              [](const Operation &a, const Operation &b) { return a.id < b.id; });
    std::vector<BulkTarget> targets;
    targets.reserve(found.size());
    for (const Operation &op : found)
        targets.push_back({op.ns, op.key, op.version});
    return targets;
}

std::vector<std::string> BulkCommand::problems(bool needReason) const
{
    std::vector<std::string> problems;
    const Capability capability = capabilityOf(m_request.action);
    if (!roleMay(m_actor.role, capability))
        problems.push_back(roleRefusal(m_actor.role, capability));
    if (needReason && m_request.reason.empty())
        problems.push_back("a reason is required");
    if (m_request.targets.empty())
        problems.push_back("the set is empty: select operations or a filter that matches some");
    if (static_cast<std::int64_t>(m_request.targets.size()) > MaxTargets)
        problems.push_back("the set holds " + std::to_string(m_request.targets.size()) +
                           " operations; one bulk run takes at most " + std::to_string(MaxTargets));
    if (const auto rate =
            PacedRun::rateProblem(m_request.ratePerSecond, MaxRatePerSecond, "operations"))
        problems.push_back(*rate);
    if (m_request.action == BulkAction::Reconcile && !m_options.lookup)
        problems.push_back("reconciling needs a provider lookup");
    return problems;
}

std::vector<BulkCommand::OwnAct> BulkCommand::ownActs(const BulkTarget &target) const
{
    std::vector<OwnAct> acts;
    if (m_request.action != BulkAction::Reconcile) {
        const std::string_view decision =
            decisionName(m_request.action == BulkAction::Reject ? ApprovalDecision::Reject
                                                                : ApprovalDecision::Redispatch);
        for (const ApprovalRecord &a : m_store.approvals(target.ns, target.key)) {
            if (a.operatorName != m_actor.name || a.decision != decision ||
                !a.externalReference.empty())
                continue;
            // A pending approval leaves the operation as it was; an applied one moves it out of
            // the states approving takes.
            const bool pending = a.status == "pending";
            acts.push_back({a.operationVersion,
                            pending ? std::optional(a.operationVersion) : std::nullopt, pending,
                            a.decision + " (approval " + a.approvalId + ")"});
        }
        return acts;
    }
    AuditFilter filter;
    filter.target = target.ns + "/" + target.key;
    filter.who = m_actor.name;
    filter.action = "reconcile";
    filter.limit = 100;
    for (;;) {
        const std::vector<AuditRecord> page = m_store.auditRecords(filter);
        for (const AuditRecord &r : page)
            if (const auto before = snapshotVersion(r.entry.beforeState))
                acts.push_back({*before, snapshotVersion(r.entry.afterState), false,
                                "reconciliation (audit record " + std::to_string(r.seq) + ")"});
        if (static_cast<int>(page.size()) < filter.limit)
            break;
        filter.afterSeq = page.back().seq;
    }
    return acts;
}

std::int64_t BulkCommand::versionSeen(const BulkTarget &target, const Operation &current,
                                      const std::vector<OwnAct> &acts, std::int64_t nowMs) const
{
    // An older version is the one the operator saw: a frozen set, a KEY<TAB>VERSION line.
    if (target.version != current.version)
        return target.version;
    // The version read now (a bare KEY line, a filter frozen again) after this operator's own
    // act is that act's outcome, not a new sighting: the act's version stands, so that a run
    // again answers with it whichever way the set was named.
    const OwnAct *latest = nullptr;
    for (const OwnAct &a : acts) {
        if (a.version == current.version)
            return current.version;
        if (!latest || a.version > latest->version)
            latest = &a;
    }
    if (latest && (latest->after == current.version || !takes(m_request.action, current, nowMs)))
        return latest->version;
    return current.version;
}

void BulkCommand::answerFromAct(BulkItem &item, const OwnAct &act, const Operation &current) const
{
    item.target.version = act.version;
    if (act.pending && current.version == act.version) {
        item.result = BulkResult::Pending;
        item.detail = "pending: your approval is recorded, another approver must approve";
    } else if (act.pending) {
        item.result = BulkResult::SkippedChanged;
        item.detail = "changed since your " + act.what + " of version " +
                      std::to_string(act.version) + ", which no second approver applied (now " +
                      std::to_string(current.version) + ", " +
                      std::string(stateName(current.state)) + ")";
    } else {
        item.result = BulkResult::AlreadyDone;
        item.detail = "already done: your " + act.what + " of version " +
                      std::to_string(act.version) + " stands; nothing written again (" +
                      current.key + " is " + std::string(stateName(current.state)) + ")";
    }
}

std::vector<std::string> BulkCommand::validate()
{
    return problems(true);
}

std::vector<std::string> BulkCommand::dryRunProblems() const
{
    return problems(false);
}

ActionPreview BulkCommand::describe()
{
    nlohmann::json rows = nlohmann::json::array();
    std::map<std::string, std::int64_t> byState;
    std::int64_t changed = 0;
    std::int64_t notTaken = 0;
    std::int64_t alreadyDone = 0;
    std::set<std::string> notTakenStates;
    const std::int64_t now = m_store.nowMs();
    for (const BulkTarget &t : m_request.targets) {
        const std::optional<Operation> op = m_store.find(t.ns, t.key);
        const std::string state = op ? std::string(stateName(op->state)) : std::string("missing");
        // What execute() answers from this operator's earlier act, as act() finds it.
        BulkItem answer;
        answer.target = t;
        if (op) {
            const std::vector<OwnAct> acts = ownActs(t);
            answer.target.version = versionSeen(t, *op, acts, now);
            if (const OwnAct *earlier = actOn(acts, answer.target.version))
                answerFromAct(answer, *earlier, *op);
        }
        const bool done = op && answer.result == BulkResult::AlreadyDone;
        const bool moved = !op || (op->version != answer.target.version && !done);
        // A moved operation is skipped anyway; one unmoved in a state the action does not take
        // (a bare KEY line read now) will be refused: the person sees it before acting.
        const bool taken = moved || done || takes(m_request.action, *op, now);
        changed += moved ? 1 : 0;
        alreadyDone += done ? 1 : 0;
        if (!taken) {
            ++notTaken;
            notTakenStates.insert(state);
        }
        ++byState[state];
        rows.push_back({{"namespace", t.ns},
                        {"key", t.key},
                        {"version", answer.target.version},
                        {"state", state},
                        {"changed", moved},
                        {"taken", taken},
                        {"already_done", done}});
    }
    const auto count = static_cast<std::int64_t>(m_request.targets.size());
    std::string what;
    switch (m_request.action) {
    case BulkAction::Approve:
        what = "Approve " + plural(count, "operation") + ": dispatch each again";
        break;
    case BulkAction::Reject:
        what = "Reject " + plural(count, "operation") + ": none will be executed";
        break;
    case BulkAction::Reconcile:
        what = "Reconcile " + plural(count, "operation") +
               ": look each up at its provider and move it by the answer";
        break;
    }
    if (alreadyDone > 0)
        what += " (" + std::to_string(alreadyDone) +
                " already done by you before: nothing will be written for them)";
    if (changed > 0)
        what += " (" + std::to_string(changed) + " changed since frozen: they will be skipped)";
    if (notTaken > 0) {
        std::string states;
        for (const std::string &s : notTakenStates)
            states += (states.empty() ? "" : ", ") + s;
        what += " (" + std::to_string(notTaken) + " in a state " +
                std::string(bulkActionName(m_request.action)) + " does not take, " + states +
                ": they will be refused)";
    }
    return {what,
            {{"action", bulkActionName(m_request.action)},
             {"count", count},
             {"changed", changed},
             {"not_taken", notTaken},
             {"already_done", alreadyDone},
             {"rate_per_s", m_request.ratePerSecond},
             {"by_state", byState},
             {"targets", rows}}};
}

BulkOutcome BulkCommand::execute()
{
    if (const std::vector<std::string> p = problems(true); !p.empty())
        throw Error(p.front().starts_with("the rate") ? ErrorCode::InvalidArgument
                                                      : ErrorCode::Refused,
                    p.front());
    const auto count = static_cast<std::int64_t>(m_request.targets.size());
    if (!m_request.confirmCount || *m_request.confirmCount != count)
        throw Error(ErrorCode::Refused,
                    "confirm the count: the set holds " + plural(count, "operation") +
                        (m_request.confirmCount ? ", not " + std::to_string(*m_request.confirmCount)
                                                : std::string()));
    BulkOutcome outcome;
    outcome.action = m_request.action;
    outcome.count = count;
    PacedRun run(m_request.ratePerSecond, count, m_options.pacing);
    for (const BulkTarget &target : m_request.targets) {
        if (!run.next())
            break;
        outcome.items.push_back(act(target));
        run.done();
    }
    outcome.cancelled = run.cancelled();
    return outcome;
}

BulkItem BulkCommand::act(const BulkTarget &target)
{
    BulkItem item;
    item.target = target;
    const std::optional<Operation> current = m_store.find(target.ns, target.key);
    if (!current) {
        item.detail = "no operation '" + target.key + "' in namespace '" + target.ns + "'";
        return item;
    }
    item.state = stateName(current->state);
    const std::vector<OwnAct> acts = ownActs(target);
    const std::int64_t seen = versionSeen(target, *current, acts, m_store.nowMs());
    item.target.version = seen;
    if (const OwnAct *earlier = actOn(acts, seen)) {
        answerFromAct(item, *earlier, *current);
        return item;
    }
    const bool changed = current->version != seen;
    try {
        if (m_request.action == BulkAction::Reconcile) {
            if (changed) {
                item.result = BulkResult::SkippedChanged;
                item.detail = "changed since the set was frozen (version " + std::to_string(seen) +
                              ", now " + std::to_string(current->version) + ")";
                return item;
            }
            ReconcileCommand::Request r;
            r.ns = target.ns;
            r.key = target.key;
            r.reason = m_request.reason;
            ReconcileCommand command(m_store, *m_options.lookup, m_actor, r,
                                     {.retentionMs = m_options.retentionMs});
            if (const std::vector<std::string> p = command.validate(); !p.empty()) {
                item.detail = p.front();
                return item;
            }
            const ReconcileOutcome o = command.execute();
            if (!o.reconciled.empty()) {
                item.result = BulkResult::Applied;
                item.state = stateName(o.reconciled.front().to);
                item.auditSeq = o.reconciled.front().auditSeq;
                item.detail = o.text();
            } else {
                item.result = BulkResult::SkippedChanged;
                item.detail = o.skipped.empty() ? std::string("not reconciled") : o.skipped[0].why;
            }
            return item;
        }
        ApproveCommand::Request r;
        r.ns = target.ns;
        r.key = target.key;
        r.decision = m_request.action == BulkAction::Reject ? ApprovalDecision::Reject
                                                            : ApprovalDecision::Redispatch;
        r.reason = m_request.reason;
        r.version = seen;
        ApproveCommand command(
            m_store, m_actor, r,
            {.extraAttempts = m_options.extraAttempts, .retentionMs = m_options.retentionMs});
        const ApprovalOutcome o = command.execute();
        item.result = o.status == "applied"   ? BulkResult::Applied
                      : o.status == "pending" ? BulkResult::Pending
                                              : BulkResult::AlreadyDone;
        if (o.operation)
            item.state = stateName(o.operation->state);
        item.auditSeq = o.auditSeq;
        item.detail = o.text();
        // Answered as submitted before: the same submission landed since this run looked
        // (another run of the set at once); it answers as it would have.
        if (o.status == "replayed" && o.operation)
            if (const OwnAct *earlier = actOn(ownActs(target), seen))
                answerFromAct(item, *earlier, *o.operation);
    } catch (const Error &e) {
        if (e.code() != ErrorCode::Refused && e.code() != ErrorCode::IllegalTransition &&
            e.code() != ErrorCode::StaleLease && e.code() != ErrorCode::NotFound)
            throw;
        item.result = changed && e.code() != ErrorCode::Refused ? BulkResult::SkippedChanged
                                                                : BulkResult::Refused;
        item.detail = e.what();
    }
    return item;
}

} // namespace idempo
