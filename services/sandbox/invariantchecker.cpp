// SPDX-License-Identifier: Apache-2.0
#include "invariantchecker.h"

#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

#include "error.h"
#include "ledgerstore.h"
#include "sandboxjournal.h"
#include "scenario.h"

namespace idempo::sandbox {
namespace {

std::map<std::string, Operation> readOperations(LedgerStore &store, const std::string &ns)
{
    std::map<std::string, Operation> ops;
    ListFilter filter;
    filter.ns = ns;
    filter.limit = 1000;
    for (;;) {
        const std::vector<Operation> page = store.list(filter);
        for (const Operation &op : page)
            ops.emplace(op.key, op);
        if (static_cast<int>(page.size()) < filter.limit)
            break;
        filter.afterId = page.back().id;
    }
    return ops;
}

/// The effect a receipt names, whoever wrote it: a worker or the sandbox's reconciler
/// ({"effect_id", "provider"}), `idempo reconcile` ({"external_reference", "provider",
/// "reconciled_by"}) or an approver's confirm ({"approval_id", "confirmed_by",
/// "external_reference"}). Empty when it names none.
std::string receiptEffect(const std::string &receipt)
{
    if (receipt.empty())
        return {};
    const nlohmann::json j = nlohmann::json::parse(receipt, nullptr, false);
    if (!j.is_object())
        return {};
    for (const char *field : {"effect_id", "external_reference"}) {
        const auto it = j.find(field);
        if (it != j.end() && it->is_string() && !it->get<std::string>().empty())
            return it->get<std::string>();
    }
    return {};
}

bool settled(OperationState s)
{
    return s == OperationState::Succeeded || s == OperationState::FailedTerminal ||
           s == OperationState::ConfirmationRequired || s == OperationState::AwaitingApproval;
}

std::string runOf(const std::string &key)
{
    return key.substr(0, key.find(':'));
}

/// Every run of `ns` in the ledger (runbudget.h), in the ledger's order.
std::vector<idempo::RunRecord> readLedgerRuns(LedgerStore &store, const std::string &ns)
{
    std::vector<idempo::RunRecord> runs;
    RunFilter filter;
    filter.ns = ns;
    filter.limit = 1000;
    for (;;) {
        std::vector<idempo::RunRecord> page = store.listRuns(filter);
        const bool more = static_cast<int>(page.size()) == filter.limit;
        if (more) {
            filter.afterNs = page.back().ns;
            filter.afterRunId = page.back().runId;
        }
        for (idempo::RunRecord &run : page)
            runs.push_back(std::move(run));
        if (!more)
            return runs;
    }
}

/// What the checker reads of a namespace: the sandbox's runs and effects, the ledger's
/// operations, history and runs, and indexes over them (into `effects`, which a move keeps in
/// place).
struct Snapshot
{
    std::vector<RunRecord> runs;
    std::vector<Effect> effects;
    std::map<std::string, Operation> ops;                            ///< by operation key
    std::unordered_map<std::string, std::vector<HistoryRow>> events; ///< by operation key
    std::int64_t nowMs = 0;
    std::vector<idempo::RunRecord> ledgerRuns;
    std::set<std::string> haltedRuns; ///< run ids
    std::set<std::string> naiveRuns;  ///< run ids
    std::map<std::string, std::vector<const Effect *>> effectsByOperation;
    std::unordered_map<std::string, const Effect *> effectById;
};

/// Reads namespace `ns` of `store` and of its sandbox `journal`.
Snapshot readSnapshot(LedgerStore &store, SandboxJournal &journal, const std::string &ns)
{
    Snapshot s;
    s.runs = journal.runs(ns);
    s.effects = journal.effects(ns);
    s.ops = readOperations(store, ns);
    for (HistoryRow &row : journal.history(ns))
        s.events[row.operationKey].push_back(std::move(row));
    s.nowMs = store.nowMs();
    s.ledgerRuns = readLedgerRuns(store, ns);
    for (const idempo::RunRecord &run : s.ledgerRuns)
        if (run.state == idempo::RunState::Halted)
            s.haltedRuns.insert(run.runId);
    for (const RunRecord &r : s.runs)
        if (r.naive)
            s.naiveRuns.insert(r.runId);
    for (const Effect &e : s.effects) {
        s.effectsByOperation[e.operationKey].push_back(&e);
        s.effectById[e.effectId] = &e;
    }
    return s;
}

InvariantResult atMostOneEffect(const Snapshot &s)
{
    InvariantResult once{
        "at_most_one_effect", "no business operation has more than one provider effect", 0, {}};
    for (const auto &[key, list] : s.effectsByOperation) {
        ++once.checked;
        if (list.size() <= 1)
            continue;
        std::string ids;
        for (const Effect *e : list)
            ids += (ids.empty() ? "" : ", ") + e->effectId;
        once.violations.push_back({key, std::to_string(list.size()) + " effects at " +
                                            list.front()->provider + ": " + ids});
    }
    return once;
}

/// What is wrong with the effects `list` of operation `key` (of an engine run), given the
/// ledger's record of it; nothing when they are recorded or handed to a person.
std::vector<Violation> unrecordedEffects(const std::string &key,
                                         const std::vector<const Effect *> &list, const Snapshot &s)
{
    const auto op = s.ops.find(key);
    if (op == s.ops.end())
        return {{key, "effect " + list.front()->effectId + " has no ledger record"}};
    const OperationState state = op->second.state;
    const std::string receipt = receiptEffect(op->second.receipt);
    std::vector<Violation> found;
    if (state == OperationState::Succeeded) {
        // The receipt accounts for one effect: any other effect of the operation is unrecorded.
        for (const Effect *e : list) {
            if (e->effectId != receipt)
                found.push_back({key, "effect " + e->effectId +
                                          " performed, but the ledger's receipt " +
                                          (receipt.empty() ? "is empty" : "names " + receipt)});
        }
    } else if (state != OperationState::ConfirmationRequired) {
        found.push_back({key, "effect " + list.front()->effectId +
                                  " performed, but the ledger says " +
                                  std::string(stateName(state)) +
                                  (receipt.empty() ? "" : " with receipt " + receipt)});
    }
    return found;
}

InvariantResult effectRecorded(const Snapshot &s)
{
    InvariantResult recorded{
        "effect_recorded",
        "every effect is recorded with its receipt or waits for a person (confirmation_required)",
        0,
        {}};
    for (const auto &[key, list] : s.effectsByOperation) {
        if (s.naiveRuns.count(runOf(key)))
            continue;
        ++recorded.checked;
        for (Violation &v : unrecordedEffects(key, list, s))
            recorded.violations.push_back(std::move(v));
    }
    return recorded;
}

InvariantResult receiptMatchesEffect(const Snapshot &s)
{
    InvariantResult receipts{
        "receipt_matches_effect",
        "every succeeded protected write has a receipt naming an effect performed for it",
        0,
        {}};
    for (const auto &[key, op] : s.ops) {
        if (op.kind != ToolKind::ProtectedWrite || op.state != OperationState::Succeeded)
            continue;
        ++receipts.checked;
        const std::string effectId = receiptEffect(op.receipt);
        const auto found = s.effectById.find(effectId);
        if (effectId.empty())
            receipts.violations.push_back({key, "succeeded without a receipt"});
        else if (found == s.effectById.end() || found->second->operationKey != key)
            receipts.violations.push_back(
                {key, "receipt names " + effectId + ", which no provider performed for it"});
    }
    return receipts;
}

InvariantResult noApprovalTwice(const Snapshot &s)
{
    InvariantResult approvals{"no_approval_twice", "no approval applied twice", 0, {}};
    for (const auto &[key, op] : s.ops) {
        const auto history = s.events.find(key);
        if (history == s.events.end())
            continue;
        ++approvals.checked;
        int approved = 0;
        for (const HistoryRow &e : history->second)
            if (e.from == OperationState::AwaitingApproval && e.to == OperationState::Received)
                ++approved;
        if (approved > 1)
            approvals.violations.push_back(
                {key, "approved " + std::to_string(approved) + " times"});
    }
    return approvals;
}

InvariantResult noStaleTokenWrite(const Snapshot &s)
{
    InvariantResult stale{
        "no_stale_token_write", "no write with a stale fencing token was accepted", 0, {}};
    for (const auto &[key, op] : s.ops) {
        const auto history = s.events.find(key);
        if (history == s.events.end())
            continue;
        ++stale.checked;
        std::int64_t newest = 0;
        for (const HistoryRow &e : history->second) {
            if (e.fencingToken < newest) {
                stale.violations.push_back({key, "a write to " + std::string(stateName(e.to)) +
                                                     " carried token " +
                                                     std::to_string(e.fencingToken) +
                                                     " after token " + std::to_string(newest)});
            }
            newest = std::max(newest, e.fencingToken);
        }
    }
    return stale;
}

/// The "decision" member of a JSON object's text; empty when it has none.
std::string decisionIn(const std::string &text)
{
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    return j.is_object() ? j.value("decision", std::string()) : std::string();
}

/// Whether the write `o` of step `i` of `run` carries the decision the ledger recorded for the
/// step before it, which asked the model; what differs, if it does not.
std::optional<std::string> decisionProblem(const RunRecord &run, const Scenario &scenario,
                                           std::size_t i, const Operation &o, const Snapshot &s)
{
    const auto before = s.ops.find(run.runId + ":" + scenario.steps()[i - 1].stepId);
    const std::string used = decisionIn(o.payload);
    const std::string kept =
        before == s.ops.end() ? std::string() : decisionIn(before->second.result);
    if (used == kept)
        return std::nullopt;
    return "the write used decision '" + used + "', the ledger recorded '" + kept + "'";
}

/// Follows the steps of an engine run in order while they succeeded: the first one without a
/// record, or left unsettled outside a halted run, is lost; each write after a model step is
/// checked for its decision.
void followRun(const RunRecord &run, const Scenario &scenario, const Snapshot &s,
               InvariantResult &lost, InvariantResult &decisions)
{
    ++lost.checked;
    const auto &steps = scenario.steps();
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const std::string key = run.runId + ":" + steps[i].stepId;
        const auto op = s.ops.find(key);
        if (op == s.ops.end()) {
            lost.violations.push_back(
                {key, i == 0 ? "the run was accepted but its first step has no record"
                             : "the step before it succeeded, but this step has no record"});
            return;
        }
        const Operation &o = op->second;
        // A halted run's steps wait for the person who resumes it.
        if (!settled(o.state) && !s.haltedRuns.count(run.runId)) {
            const bool lapsed = o.state == OperationState::Dispatching && o.leaseExpiresAtMs &&
                                *o.leaseExpiresAtMs <= s.nowMs;
            lost.violations.push_back({key, lapsed ? "stuck in dispatching with a lapsed lease"
                                                   : "left in " + std::string(stateName(o.state))});
            return;
        }
        if (o.state != OperationState::Succeeded)
            return;
        if (i > 0 && steps[i].writeBoundary && steps[i - 1].callsModel) {
            ++decisions.checked;
            if (std::optional<std::string> problem = decisionProblem(run, scenario, i, o, s))
                decisions.violations.push_back({key, std::move(*problem)});
        }
    }
}

/// no_request_lost and decision_reused, which follow the same steps.
std::pair<InvariantResult, InvariantResult> requestsAndDecisions(const Snapshot &s)
{
    InvariantResult lost{
        "no_request_lost", "every accepted request settled; none lost, none stuck", 0, {}};
    InvariantResult decisions{"decision_reused",
                              "every write carries the decision recorded before the write boundary",
                              0,
                              {}};
    for (const RunRecord &run : s.runs) {
        if (run.naive)
            continue;
        if (const Scenario *scenario = Scenario::find(run.scenario))
            followRun(run, *scenario, s, lost, decisions);
    }
    return {lost, decisions};
}

// Run budgets (runbudget.h): a halted run dispatched nothing after its halt, and no run spent
// past its cap.

InvariantResult noDispatchAfterHalt(LedgerStore &store, const std::string &ns, const Snapshot &s)
{
    InvariantResult afterHalt{"no_dispatch_after_halt",
                              "no operation of a halted run was dispatched after the halt",
                              0,
                              {}};
    for (const idempo::RunRecord &run : s.ledgerRuns) {
        if (run.state != idempo::RunState::Halted || !run.haltedAtMs)
            continue;
        ++afterHalt.checked;
        for (const auto &[key, op] : s.ops) {
            if (op.runId != run.runId)
                continue;
            for (const OperationEvent &e : store.history(ns, key))
                if (e.toState == OperationState::Dispatching &&
                    e.fromState != OperationState::Dispatching && e.atMs > *run.haltedAtMs)
                    afterHalt.violations.push_back({key, "dispatched at " + std::to_string(e.atMs) +
                                                             " ms, after its run halted at " +
                                                             std::to_string(*run.haltedAtMs) +
                                                             " ms"});
        }
    }
    return afterHalt;
}

InvariantResult spendWithinCap(const Snapshot &s)
{
    InvariantResult withinCap{"spend_within_cap", "no run spent more than its spend cap", 0, {}};
    for (const idempo::RunRecord &run : s.ledgerRuns) {
        ++withinCap.checked;
        if (run.budgets.spend && run.spentMinor > run.budgets.spend->minorUnits)
            withinCap.violations.push_back(
                {run.runId, "spent " + formatAmount({run.spentMinor, run.currency}) +
                                " of a cap of " + formatAmount(*run.budgets.spend)});
    }
    return withinCap;
}

} // namespace

InvariantChecker::InvariantChecker(LedgerStore &store, SandboxJournal &journal)
    : m_store(store), m_journal(journal)
{
}

std::vector<InvariantResult> InvariantChecker::check(const std::string &ns)
{
    const Snapshot s = readSnapshot(m_store, m_journal, ns);
    auto [lost, decisions] = requestsAndDecisions(s);
    return {atMostOneEffect(s),   receiptMatchesEffect(s),
            effectRecorded(s),    std::move(lost),
            noApprovalTwice(s),   noStaleTokenWrite(s),
            std::move(decisions), noDispatchAfterHalt(m_store, ns, s),
            spendWithinCap(s)};
}

bool InvariantChecker::allHold(const std::vector<InvariantResult> &results)
{
    return std::all_of(results.begin(), results.end(),
                       [](const InvariantResult &r) { return r.holds(); });
}

nlohmann::json InvariantChecker::toJson(const std::vector<InvariantResult> &results,
                                        std::size_t maxExamples)
{
    nlohmann::json list = nlohmann::json::array();
    for (const InvariantResult &r : results) {
        nlohmann::json examples = nlohmann::json::array();
        for (std::size_t i = 0; i < r.violations.size() && i < maxExamples; ++i)
            examples.push_back(
                {{"operation", r.violations[i].operation}, {"message", r.violations[i].message}});
        list.push_back({{"name", r.name},
                        {"ok", r.holds()},
                        {"checked", r.checked},
                        {"violations", r.violations.size()},
                        {"examples", examples}});
    }
    return {{"ok", allHold(results)}, {"invariants", list}};
}

std::string InvariantChecker::toText(const std::vector<InvariantResult> &results,
                                     std::size_t maxExamples)
{
    std::string s;
    for (const InvariantResult &r : results) {
        s += std::string(r.holds() ? "  ok    " : "  FAIL  ") + r.name + "  (" +
             std::to_string(r.checked) + " checked, " + std::to_string(r.violations.size()) +
             " violations): " + r.description + '\n';
        for (std::size_t i = 0; i < r.violations.size() && i < maxExamples; ++i)
            s += "          " + r.violations[i].operation + ": " + r.violations[i].message + '\n';
        if (r.violations.size() > maxExamples)
            s += "          … and " + std::to_string(r.violations.size() - maxExamples) + " more\n";
    }
    return s;
}

} // namespace idempo::sandbox
