// SPDX-License-Identifier: Apache-2.0
#include "runactioncommand.h"

#include <algorithm>
#include <type_traits>

#include "approvecommand.h"
#include "canonicaljson.h"
#include "error.h"
#include "money.h"
#include "recordjson.h"

namespace idempo {
namespace {

/// The longest limit or addition, as PostgreSQL's checks bound it.
constexpr std::int64_t kMaxCount = 1'000'000'000'000'000;

template <typename T> nlohmann::json changeJson(const RunActionCommand::Change<T> &change)
{
    if constexpr (std::is_same_v<T, Amount>)
        return *change ? nlohmann::json(amountText(**change)) : nlohmann::json();
    else
        return *change ? nlohmann::json(**change) : nlohmann::json();
}

/// What is asked, with the run version it was asked of: two requests pair (four-eyes) only when
/// this is equal.
nlohmann::json proposalOf(const RunActionCommand::Request &r, std::int64_t runVersion)
{
    nlohmann::json p = {{"action", RunActionCommand::kindName(r.kind)},
                        {"run_version", runVersion}};
    if (r.kind == RunActionCommand::Kind::Resume) {
        p["add_failed_dispatches"] = r.addFailed;
        p["add_spend"] = r.addSpend ? nlohmann::json(amountText(*r.addSpend)) : nlohmann::json();
        p["add_tokens"] = r.addTokens;
        return p;
    }
    const auto put = [&p](const char *name, const auto &change) {
        if (change)
            p[name] = changeJson(change);
    };
    put("failed_dispatches", r.failedDispatches);
    put("no_progress_s", r.noProgressS);
    put("spend", r.spend);
    put("tokens", r.tokens);
    return p;
}

/// What is asked, whatever the run's version when it was, in the shape idempo.run_action stores
/// (amounts in minor units, a budget's limits as one object), so that a proposal this command
/// wrote and one the PostgreSQL ledger wrote compare: a request id answers only the same ask.
nlohmann::json askOf(nlohmann::json p)
{
    p.erase("run_version");
    const auto minor = [](const nlohmann::json &amount) {
        return amount.is_null() ? nlohmann::json()
                                : nlohmann::json(parseAmount(amount.get<std::string>()).minorUnits);
    };
    if (p.value("action", "") == "resume") {
        if (p.contains("add_spend")) {
            p["add_spend_minor"] = minor(p["add_spend"]);
            p.erase("add_spend");
        }
        return p;
    }
    if (p.contains("limits"))
        return p;
    nlohmann::json limits = nlohmann::json::object();
    for (const char *name : {"failed_dispatches", "no_progress_s", "tokens"})
        if (p.contains(name))
            limits[name] = p[name];
    if (p.contains("spend")) {
        limits["spend_minor"] = minor(p["spend"]);
        if (!p["spend"].is_null())
            limits["spend_currency"] = parseAmount(p["spend"].get<std::string>()).currency;
    }
    return {{"action", p.value("action", "")}, {"limits", limits}};
}

/// The run after `r`, applied at `nowMs`.
RunRecord applied(const RunRecord &run, const RunActionCommand::Request &r, std::int64_t nowMs)
{
    RunRecord after = run;
    RunBudgets &b = after.budgets;
    if (r.kind == RunActionCommand::Kind::Resume) {
        if (b.failedDispatches)
            *b.failedDispatches += r.addFailed;
        if (b.spend && r.addSpend)
            b.spend->minorUnits += r.addSpend->minorUnits;
        if (b.tokens)
            *b.tokens += r.addTokens;
        after.state = RunState::Active;
        after.lastProgressAtMs = nowMs;
        after.haltBudget.reset();
        after.haltedAtMs.reset();
        after.haltDetail.clear();
    } else {
        if (r.failedDispatches)
            b.failedDispatches = *r.failedDispatches;
        if (r.noProgressS)
            b.noProgressMs = *r.noProgressS ? std::optional(**r.noProgressS * 1000) : std::nullopt;
        if (r.spend) {
            b.spend = *r.spend;
            if (*r.spend)
                after.currency = (*r.spend)->currency;
        }
        if (r.tokens)
            b.tokens = *r.tokens;
    }
    after.updatedAtMs = nowMs;
    after.version += 1;
    return after;
}

/// How far the request raises the spend cap, in minor units (0: it does not).
std::int64_t spendRaise(const RunRecord &run, const RunActionCommand::Request &r)
{
    if (r.kind == RunActionCommand::Kind::Resume)
        return r.addSpend ? r.addSpend->minorUnits : 0;
    if (!r.spend)
        return 0;
    if (!*r.spend)
        return run.budgets.spend ? kMaxCount : 0; // removing the cap raises it without bound
    if (!run.budgets.spend)
        return 0; // a first cap narrows a run that had none
    return std::max<std::int64_t>(0, (*r.spend)->minorUnits - run.budgets.spend->minorUnits);
}

struct Problem
{
    ErrorCode code;
    std::string message;
};

std::string countProblem(const char *what, std::int64_t value, std::int64_t low)
{
    if (value < low || value > kMaxCount)
        return std::string(what) + " must be " + std::to_string(low) + "..10^15, not " +
               std::to_string(value);
    return {};
}

} // namespace

struct RunActionCommand::Decision
{
    std::vector<Problem> problems;
    bool fourEyes = false;
    std::string proposal;
    std::optional<RunRecord> after;
    std::vector<std::string> pendingPartners; ///< pending requests with the same proposal
};

std::string_view RunActionCommand::kindName(Kind kind)
{
    return kind == Kind::Resume ? "resume" : "budget";
}

RunActionCommand::RunActionCommand(LedgerStore &store, ActorIdentity actor, Request request)
    : m_store(store), m_actor(std::move(actor)), m_request(std::move(request))
{
}

void RunActionCommand::load()
{
    m_run = m_store.findRun(m_request.ns, m_request.runId);
    m_threshold = m_store.guardSetting(FourEyesSetting);
    m_rates = m_store.guardSetting(ReferenceRatesSetting);
    // Derived from what is asked, by whom and why, not from the run's version (which the first
    // request moves): the same command again is the same request. A later ask of the same thing
    // for the same reason is answered as done; another reason or --request-id asks anew.
    if (m_request.requestId.empty() && m_run) {
        nlohmann::json ask = proposalOf(m_request, 0);
        ask.erase("run_version");
        m_request.requestId = "rr-" + payloadFingerprint({{"ns", m_request.ns},
                                                          {"run", m_request.runId},
                                                          {"proposal", ask},
                                                          {"operator", m_actor.name},
                                                          {"reason", m_request.reason}})
                                          .substr(0, 24);
    }
}

RunActionCommand::Decision RunActionCommand::judge(const RunRecord *run,
                                                   const std::vector<RunActionRecord> &requests,
                                                   std::int64_t nowMs) const
{
    Decision d;
    const Request &r = m_request;
    const auto refuse = [&d](ErrorCode code, std::string message) {
        if (!message.empty())
            d.problems.push_back({code, std::move(message)});
    };
    if (r.reason.empty())
        refuse(ErrorCode::Refused, "a reason is required");
    if (!roleMay(m_actor.role, Capability::ResumeRuns))
        refuse(ErrorCode::Refused, roleRefusal(m_actor.role, Capability::ResumeRuns));
    refuse(ErrorCode::InvalidArgument, countProblem("--add-failed", r.addFailed, 0));
    refuse(ErrorCode::InvalidArgument, countProblem("--add-tokens", r.addTokens, 0));
    for (const auto &[name, change] :
         {std::pair{"--failed-dispatches", &r.failedDispatches},
          std::pair{"--no-progress", &r.noProgressS}, std::pair{"--tokens", &r.tokens}})
        if (*change && **change)
            refuse(ErrorCode::InvalidArgument, countProblem(name, ***change, 1));
    if (r.kind == Kind::Budget && !r.failedDispatches && !r.noProgressS && !r.spend && !r.tokens)
        refuse(ErrorCode::InvalidArgument, "name at least one budget to set");
    if (!run) {
        refuse(ErrorCode::NotFound,
               "no run '" + r.runId + "' in namespace '" + r.ns + "': a claim naming it makes one");
        return d;
    }
    const RunBudgets &b = run->budgets;
    const std::string currency = b.spend ? b.spend->currency : run->currency;
    if (r.kind == Kind::Resume) {
        if (run->state != RunState::Halted)
            refuse(ErrorCode::IllegalTransition, "run '" + r.runId + "' is " +
                                                     std::string(runStateName(run->state)) +
                                                     ", not halted: only a halted run is resumed");
        if (r.addFailed > 0 && !b.failedDispatches)
            refuse(ErrorCode::Refused,
                   "run '" + r.runId + "' has no failed-dispatch limit to add to");
        if (r.addTokens > 0 && !b.tokens)
            refuse(ErrorCode::Refused, "run '" + r.runId + "' has no token cap to add to");
        if (r.addSpend && !b.spend)
            refuse(ErrorCode::Refused, "run '" + r.runId + "' has no spend cap to add to");
    }
    const std::optional<Amount> newSpend =
        r.kind == Kind::Resume ? r.addSpend : (r.spend ? *r.spend : std::nullopt);
    if (newSpend && !currency.empty() && newSpend->currency != currency)
        refuse(ErrorCode::Refused, "run '" + r.runId + "' counts its spend in " + currency +
                                       ", not " + newSpend->currency);
    if (!d.problems.empty())
        return d;

    d.proposal = canonicalText(proposalOf(r, run->version));
    d.after = applied(*run, r, nowMs);
    if (r.kind == Kind::Resume) {
        // The budget that halted the run must have room, or the next claim halts it again.
        const RunRecord &a = *d.after;
        const BudgetKind halted = run->haltBudget.value_or(BudgetKind::FailedDispatches);
        std::string still;
        if (halted == BudgetKind::FailedDispatches && a.budgets.failedDispatches &&
            a.failedDispatches >= *a.budgets.failedDispatches)
            still = "failed dispatches (" + std::to_string(a.failedDispatches) + " of " +
                    std::to_string(*a.budgets.failedDispatches) + "): add some with --add-failed N";
        else if (halted == BudgetKind::Spend && !r.addSpend)
            still = "spend (" + run->haltDetail + "): add some with --add-spend AMOUNT";
        else if (halted == BudgetKind::Tokens && r.addTokens == 0)
            still = "tokens (" + run->haltDetail + "): add some with --add-tokens N";
        if (!still.empty())
            refuse(ErrorCode::Refused, "run '" + r.runId + "' would still be out of " + still);
    }
    const std::int64_t raise = spendRaise(*run, r);
    const bool fourEyesOn = m_threshold && !m_threshold->empty() && !currency.empty();
    // Raising the cap to above the threshold needs two identities, however small the step: the
    // threshold bounds what one person lets a run spend, not each change (steps of a little each
    // would walk any cap up alone). No cap after the change is above every threshold.
    const std::optional<Amount> &capAfter = d.after->budgets.spend;
    d.fourEyes =
        fourEyesOn && raise > 0 && (!capAfter || needsFourEyes(*capAfter, m_threshold, m_rates));
    for (const RunActionRecord &q : requests) {
        if (q.status != "pending" || q.proposal != d.proposal)
            continue;
        if (q.operatorName == m_actor.name)
            refuse(ErrorCode::Refused,
                   "four-eyes: " + m_actor.name +
                       " already asked for this; a second, different identity is needed");
        d.pendingPartners.push_back(q.requestId);
    }
    return d;
}

std::vector<std::string> RunActionCommand::validate()
{
    load();
    std::vector<std::string> out;
    const std::vector<RunActionRecord> requests =
        m_run ? m_store.runRequests(m_request.ns, m_request.runId) : std::vector<RunActionRecord>{};
    // A resubmission is answered with the first request: only who asks, and why, are judged.
    const bool resubmitted =
        std::any_of(requests.begin(), requests.end(), [this](const RunActionRecord &r) {
            return r.requestId == m_request.requestId;
        });
    if (resubmitted) {
        if (m_request.reason.empty())
            out.push_back("a reason is required");
        if (!roleMay(m_actor.role, Capability::ResumeRuns))
            out.push_back(roleRefusal(m_actor.role, Capability::ResumeRuns));
        return out;
    }
    for (const Problem &p : judge(m_run ? &*m_run : nullptr, requests, m_store.nowMs()).problems)
        out.push_back(p.message);
    return out;
}

ActionPreview RunActionCommand::describe()
{
    if (!m_run)
        load();
    if (!m_run)
        throw Error(ErrorCode::NotFound,
                    "no run '" + m_request.runId + "' in namespace '" + m_request.ns + "'");
    const Decision d = judge(&*m_run, {}, m_store.nowMs());
    const std::string sentence = m_request.kind == Kind::Resume
                                     ? "Resume run " + m_request.runId
                                     : "Change the budgets of run " + m_request.runId;
    return {sentence,
            {{"run", runJson(*m_run)},
             {"action", kindName(m_request.kind)},
             {"proposal", proposalOf(m_request, m_run->version)},
             {"after", d.after ? runJson(*d.after) : nlohmann::json()},
             {"four_eyes", d.fourEyes},
             {"request_id", m_request.requestId}}};
}

ActionPlan RunActionCommand::decide(const ActionState &state) const
{
    ActionPlan plan;
    if (state.byRequestId) {
        const RunActionRecord &first = *state.byRequestId;
        const nlohmann::json asked = askOf(proposalOf(m_request, 0));
        if (first.ns != m_request.ns || first.runId != m_request.runId ||
            first.action != kindName(m_request.kind) || first.operatorName != m_actor.name ||
            askOf(nlohmann::json::parse(first.proposal)) != asked)
            throw Error(ErrorCode::Refused,
                        "request id " + m_request.requestId + " was used for another request (" +
                            first.action + " of run " + first.runId + " by " + first.operatorName +
                            ": " + askOf(nlohmann::json::parse(first.proposal)).dump() +
                            "): give this one an id of its own");
        plan.runAnswer = first;
        return plan;
    }
    const Decision d = judge(state.run, state.runRequests, state.nowMs);
    if (!d.problems.empty())
        throw Error(d.problems.front().code, d.problems.front().message);
    const bool pending = d.fourEyes && d.pendingPartners.empty();

    RunActionRecord request;
    request.requestId = m_request.requestId;
    request.ns = m_request.ns;
    request.runId = m_request.runId;
    request.action = std::string(kindName(m_request.kind));
    request.proposal = d.proposal;
    request.status = pending ? "pending" : "applied";
    request.operatorName = m_actor.name;
    request.role = m_actor.role;
    request.reason = m_request.reason;
    plan.runRequest = request;
    if (!pending) {
        plan.run = d.after;
        plan.secondedRequests = d.pendingPartners;
    }
    AuditEntry audit;
    audit.who = m_actor.name;
    audit.role = m_actor.role;
    audit.action = "run_" + request.action;
    audit.target = "run:" + m_request.ns + "/" + m_request.runId;
    audit.reason = m_request.reason;
    audit.beforeState = canonicalText(runJson(*state.run));
    audit.afterState = canonicalText(runJson(pending ? *state.run : *d.after));
    audit.approvalId = m_request.requestId;
    audit.detail = canonicalText({{"proposal", nlohmann::json::parse(d.proposal)},
                                  {"status", request.status},
                                  {"seconds", d.pendingPartners}});
    plan.audit = audit;
    return plan;
}

RunActionOutcome RunActionCommand::execute()
{
    load();
    if (!m_run)
        throw Error(ErrorCode::NotFound, "no run '" + m_request.runId + "' in namespace '" +
                                             m_request.ns + "': a claim naming it makes one");
    const ActionResult result =
        m_store.applyAction({m_request.ns, {}, m_request.requestId, m_request.runId},
                            [this](const ActionState &state) { return decide(state); });
    RunActionOutcome outcome;
    outcome.requestId = m_request.requestId;
    outcome.action = std::string(kindName(m_request.kind));
    outcome.operatorName = m_actor.name;
    outcome.run = result.run;
    if (result.plan.runAnswer) {
        // A request still waiting for its second identity is answered as what it is.
        outcome.status = result.plan.runAnswer->status == "pending" ? "pending" : "replayed";
        outcome.operatorName = result.plan.runAnswer->operatorName;
        return outcome;
    }
    outcome.status = result.plan.runRequest ? result.plan.runRequest->status : "applied";
    if (result.audit)
        outcome.auditSeq = result.audit->seq;
    return outcome;
}

} // namespace idempo
