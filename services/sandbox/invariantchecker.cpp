// SPDX-License-Identifier: Apache-2.0
#include "invariantchecker.h"

#include <map>
#include <set>
#include <unordered_map>

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

} // namespace

InvariantChecker::InvariantChecker(LedgerStore &store, SandboxJournal &journal)
    : m_store(store), m_journal(journal)
{
}

std::vector<InvariantResult> InvariantChecker::check(const std::string &ns)
{
    const std::vector<RunRecord> runs = m_journal.runs(ns);
    const std::vector<Effect> effects = m_journal.effects(ns);
    const std::map<std::string, Operation> ops = readOperations(m_store, ns);
    std::unordered_map<std::string, std::vector<HistoryRow>> events;
    for (HistoryRow &row : m_journal.history(ns))
        events[row.operationKey].push_back(std::move(row));
    const std::int64_t now = m_store.nowMs();
    std::vector<idempo::RunRecord> ledgerRuns;
    std::set<std::string> haltedRuns;
    {
        RunFilter filter;
        filter.ns = ns;
        filter.limit = 1000;
        for (;;) {
            std::vector<idempo::RunRecord> page = m_store.listRuns(filter);
            const bool more = static_cast<int>(page.size()) == filter.limit;
            if (more) {
                filter.afterNs = page.back().ns;
                filter.afterRunId = page.back().runId;
            }
            for (idempo::RunRecord &run : page) {
                if (run.state == idempo::RunState::Halted)
                    haltedRuns.insert(run.runId);
                ledgerRuns.push_back(std::move(run));
            }
            if (!more)
                break;
        }
    }

    std::set<std::string> naiveRuns;
    for (const RunRecord &r : runs)
        if (r.naive)
            naiveRuns.insert(r.runId);
    const auto runOf = [](const std::string &key) { return key.substr(0, key.find(':')); };

    InvariantResult once{
        "at_most_one_effect", "no business operation has more than one provider effect", 0, {}};
    InvariantResult receipts{
        "receipt_matches_effect",
        "every succeeded protected write has a receipt naming an effect performed for it",
        0,
        {}};
    InvariantResult recorded{
        "effect_recorded",
        "every effect is recorded with its receipt or waits for a person (confirmation_required)",
        0,
        {}};
    InvariantResult lost{
        "no_request_lost", "every accepted request settled; none lost, none stuck", 0, {}};
    InvariantResult approvals{"no_approval_twice", "no approval applied twice", 0, {}};
    InvariantResult stale{
        "no_stale_token_write", "no write with a stale fencing token was accepted", 0, {}};
    InvariantResult decisions{"decision_reused",
                              "every write carries the decision recorded before the write boundary",
                              0,
                              {}};

    std::map<std::string, std::vector<const Effect *>> effectsByOperation;
    std::unordered_map<std::string, const Effect *> effectById;
    for (const Effect &e : effects) {
        effectsByOperation[e.operationKey].push_back(&e);
        effectById[e.effectId] = &e;
    }
    for (const auto &[key, list] : effectsByOperation) {
        ++once.checked;
        if (list.size() > 1) {
            std::string ids;
            for (const Effect *e : list)
                ids += (ids.empty() ? "" : ", ") + e->effectId;
            once.violations.push_back({key, std::to_string(list.size()) + " effects at " +
                                                list.front()->provider + ": " + ids});
        }
        if (naiveRuns.count(runOf(key)))
            continue;
        ++recorded.checked;
        const auto op = ops.find(key);
        if (op == ops.end()) {
            recorded.violations.push_back(
                {key, "effect " + list.front()->effectId + " has no ledger record"});
            continue;
        }
        const OperationState s = op->second.state;
        const std::string receipt = receiptEffect(op->second.receipt);
        if (s == OperationState::Succeeded) {
            // The receipt accounts for one effect: any other effect of the operation is unrecorded.
            for (const Effect *e : list) {
                if (e->effectId != receipt)
                    recorded.violations.push_back(
                        {key, "effect " + e->effectId + " performed, but the ledger's receipt " +
                                  (receipt.empty() ? "is empty" : "names " + receipt)});
            }
            continue;
        }
        if (s != OperationState::ConfirmationRequired) {
            recorded.violations.push_back(
                {key, "effect " + list.front()->effectId + " performed, but the ledger says " +
                          std::string(stateName(s)) +
                          (receipt.empty() ? "" : " with receipt " + receipt)});
        }
    }

    for (const auto &[key, op] : ops) {
        if (op.kind == ToolKind::ProtectedWrite && op.state == OperationState::Succeeded) {
            ++receipts.checked;
            const std::string effectId = receiptEffect(op.receipt);
            const auto found = effectById.find(effectId);
            if (effectId.empty())
                receipts.violations.push_back({key, "succeeded without a receipt"});
            else if (found == effectById.end() || found->second->operationKey != key)
                receipts.violations.push_back(
                    {key, "receipt names " + effectId + ", which no provider performed for it"});
        }
        const auto history = events.find(key);
        if (history == events.end())
            continue;
        ++approvals.checked;
        ++stale.checked;
        int approved = 0;
        std::int64_t newest = 0;
        for (const HistoryRow &e : history->second) {
            if (e.from == OperationState::AwaitingApproval && e.to == OperationState::Received)
                ++approved;
            if (e.fencingToken < newest) {
                stale.violations.push_back({key, "a write to " + std::string(stateName(e.to)) +
                                                     " carried token " +
                                                     std::to_string(e.fencingToken) +
                                                     " after token " + std::to_string(newest)});
            }
            newest = std::max(newest, e.fencingToken);
        }
        if (approved > 1)
            approvals.violations.push_back(
                {key, "approved " + std::to_string(approved) + " times"});
    }

    for (const RunRecord &run : runs) {
        if (run.naive)
            continue;
        const Scenario *scenario = Scenario::find(run.scenario);
        if (!scenario)
            continue;
        ++lost.checked;
        const auto &steps = scenario->steps();
        for (std::size_t i = 0; i < steps.size(); ++i) {
            const std::string key = run.runId + ":" + steps[i].stepId;
            const auto op = ops.find(key);
            if (op == ops.end()) {
                lost.violations.push_back(
                    {key, i == 0 ? "the run was accepted but its first step has no record"
                                 : "the step before it succeeded, but this step has no record"});
                break;
            }
            const Operation &o = op->second;
            // A halted run's steps wait for the person who resumes it.
            if (!settled(o.state) && !haltedRuns.count(run.runId)) {
                const bool lapsed = o.state == OperationState::Dispatching && o.leaseExpiresAtMs &&
                                    *o.leaseExpiresAtMs <= now;
                lost.violations.push_back(
                    {key, lapsed ? "stuck in dispatching with a lapsed lease"
                                 : "left in " + std::string(stateName(o.state))});
                break;
            }
            if (o.state != OperationState::Succeeded)
                break;
            if (i > 0 && steps[i].writeBoundary && steps[i - 1].callsModel) {
                ++decisions.checked;
                const auto before = ops.find(run.runId + ":" + steps[i - 1].stepId);
                const nlohmann::json input = nlohmann::json::parse(o.payload, nullptr, false);
                const nlohmann::json previous =
                    before == ops.end()
                        ? nlohmann::json()
                        : nlohmann::json::parse(before->second.result, nullptr, false);
                const std::string used =
                    input.is_object() ? input.value("decision", std::string()) : std::string();
                const std::string kept = previous.is_object()
                                             ? previous.value("decision", std::string())
                                             : std::string();
                if (used != kept)
                    decisions.violations.push_back({key, "the write used decision '" + used +
                                                             "', the ledger recorded '" + kept +
                                                             "'"});
            }
        }
    }
    // Run budgets (runbudget.h): a halted run dispatched nothing after its halt, and no run spent
    // past its cap.
    InvariantResult afterHalt{"no_dispatch_after_halt",
                              "no operation of a halted run was dispatched after the halt",
                              0,
                              {}};
    InvariantResult withinCap{"spend_within_cap", "no run spent more than its spend cap", 0, {}};
    for (const idempo::RunRecord &run : ledgerRuns) {
        ++withinCap.checked;
        if (run.budgets.spend && run.spentMinor > run.budgets.spend->minorUnits)
            withinCap.violations.push_back(
                {run.runId, "spent " + formatAmount({run.spentMinor, run.currency}) +
                                " of a cap of " + formatAmount(*run.budgets.spend)});
        if (run.state != idempo::RunState::Halted || !run.haltedAtMs)
            continue;
        ++afterHalt.checked;
        for (const auto &[key, op] : ops) {
            if (op.runId != run.runId)
                continue;
            for (const OperationEvent &e : m_store.history(ns, key))
                if (e.toState == OperationState::Dispatching &&
                    e.fromState != OperationState::Dispatching && e.atMs > *run.haltedAtMs)
                    afterHalt.violations.push_back({key, "dispatched at " + std::to_string(e.atMs) +
                                                             " ms, after its run halted at " +
                                                             std::to_string(*run.haltedAtMs) +
                                                             " ms"});
        }
    }
    return {once, receipts, recorded, lost, approvals, stale, decisions, afterHalt, withinCap};
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
