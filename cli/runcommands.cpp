// SPDX-License-Identifier: Apache-2.0
// The run commands: a run's budgets, what it used, why it halted, and the guarded actions that
// resume it or change its budgets (runactioncommand.h).
#include <memory>
#include <string>

#include "context.h"
#include "guardedactionbuilder.h"
#include "guardsettingcommand.h"
#include "operationkey.h"
#include "optionvalue.h"
#include "recordjson.h"
#include "runactioncommand.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

/// The largest limit or addition an option takes (the ledger's bound).
constexpr std::int64_t MaxLimit = 1'000'000'000'000'000;

std::string runId(const Context &c)
{
    const std::string run = c.positional(2, "RUN (the run id)").toStdString();
    if (run.empty())
        throw UsageError{"RUN is empty: name the run id"};
    validateIdentifier(run, "run id");
    return run;
}

std::string limitText(const std::optional<std::int64_t> &v, const char *unit = "")
{
    return v ? std::to_string(*v) + unit : std::string("none");
}

std::string describe(const RunRecord &run)
{
    const RunBudgets &b = run.budgets;
    const std::string currency = b.spend ? b.spend->currency : run.currency;
    std::string s =
        run.runId + "  " + std::string(runStateName(run.state)) +
        "  failed_dispatches=" + std::to_string(run.failedDispatches) + "/" +
        limitText(b.failedDispatches) + "  spend=" +
        (currency.empty() ? std::string("0") : amountText({run.spentMinor, currency})) + "/" +
        (b.spend ? amountText(*b.spend) : std::string("none")) +
        "  tokens=" + std::to_string(run.tokensUsed) + "/" + limitText(b.tokens) +
        "  no_progress=" +
        limitText(b.noProgressMs ? std::optional(*b.noProgressMs / 1000) : std::nullopt, " s") +
        "  last_progress=" + when(run.lastProgressAtMs);
    if (run.state == RunState::Halted)
        s += "\nhalted " + when(run.haltedAtMs) + ": " +
             std::string(budgetName(run.haltBudget.value_or(BudgetKind::FailedDispatches))) + ": " +
             escapedText(run.haltDetail);
    return s;
}

/// A limit option: unset, "none" (no limit) or a whole number within 1..MaxLimit.
RunActionCommand::Change<std::int64_t> limitOption(const Context &c, const QString &name)
{
    if (!c.parser.isSet(name))
        return std::nullopt;
    if (c.parser.value(name) == QLatin1String("none"))
        return std::optional<std::int64_t>();
    return std::optional(c.integerOption(name, 1, MaxLimit));
}

int cmdRunShow(Context &c)
{
    const std::string run = runId(c);
    const std::optional<RunRecord> found = c.engine().store().findRun(c.ns, run);
    if (!found)
        throw Error(ErrorCode::NotFound, "no run '" + run + "' in namespace '" + c.ns +
                                             "': a claim naming it makes one");
    c.print(runJson(*found), describe(*found));
    return ExitOk;
}

int cmdRunList(Context &c)
{
    RunFilter filter;
    filter.ns = c.ns;
    filter.limit = pageLimit(c);
    if (c.parser.isSet(QStringLiteral("state"))) {
        const std::string state = c.parser.value(QStringLiteral("state")).toStdString();
        filter.state = parseRunState(state);
        if (!filter.state)
            throw UsageError{"--state must be active, halted or finished, not " +
                             quotedValue(state)};
    }
    filter.afterNs = c.ns;
    filter.afterRunId = c.parser.value(QStringLiteral("after")).toStdString();
    const std::vector<RunRecord> runs = c.engine().store().listRuns(filter);
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const RunRecord &run : runs) {
        rows.push_back(runJson(run));
        human += (human.empty() ? "" : "\n") + describe(run);
    }
    const bool more = static_cast<int>(runs.size()) == filter.limit;
    c.print({{"runs", rows},
             {"next_after", more ? nlohmann::json(runs.back().runId) : nlohmann::json()}},
            runs.empty() ? std::string("no runs") : human);
    return ExitOk;
}

int runAction(Context &c, RunActionCommand::Request request)
{
    request.ns = c.ns;
    request.runId = runId(c);
    request.reason = requiredReason(c);
    request.requestId = c.parser.value(QStringLiteral("request-id")).toStdString();
    LedgerStore &store = c.engine().store();
    RunActionCommand command = GuardedActionBuilder(c.engine().settings())
                                   .runAction(store, store.actor(), std::move(request));
    requireValid(command.validate());
    const ActionPreview preview = command.describe();
    const RunActionOutcome outcome = command.execute();
    c.print(outcome.toJson(), preview.sentence + ": " + outcome.text() +
                                  (outcome.run ? "\n" + describe(*outcome.run) : std::string()));
    return ExitOk;
}

int cmdRunResume(Context &c)
{
    RunActionCommand::Request r;
    r.kind = RunActionCommand::Kind::Resume;
    r.addFailed = c.integerOption(QStringLiteral("add-failed"), 0, MaxLimit, 0);
    r.addTokens = c.integerOption(QStringLiteral("add-tokens"), 0, MaxLimit, 0);
    if (c.parser.isSet(QStringLiteral("add-spend")))
        r.addSpend = parseAmount(c.parser.value(QStringLiteral("add-spend")).toStdString());
    return runAction(c, std::move(r));
}

int cmdRunBudget(Context &c)
{
    RunActionCommand::Request r;
    r.kind = RunActionCommand::Kind::Budget;
    r.failedDispatches = limitOption(c, QStringLiteral("failed-dispatches"));
    r.noProgressS = limitOption(c, QStringLiteral("no-progress"));
    r.tokens = limitOption(c, QStringLiteral("tokens"));
    if (c.parser.isSet(QStringLiteral("spend"))) {
        const std::string spend = c.parser.value(QStringLiteral("spend")).toStdString();
        r.spend = spend == "none" ? std::optional<Amount>() : std::optional(parseAmount(spend));
    }
    return runAction(c, std::move(r));
}

int cmdRunSweep(Context &c)
{
    const std::int64_t halted = c.engine().store().sweepRuns(c.ns);
    c.print({{"halted", halted}}, std::to_string(halted) + " run(s) halted for want of progress");
    return ExitOk;
}

int cmdRunDefaults(Context &c)
{
    LedgerStore &store = c.engine().store();
    const std::vector<std::pair<QString, std::string_view>> options = {
        {QStringLiteral("failed-dispatches"), RunFailedDispatchesSetting},
        {QStringLiteral("no-progress"), RunNoProgressSetting},
        {QStringLiteral("spend"), RunSpendCapSetting},
        {QStringLiteral("tokens"), RunTokenCapSetting}};
    std::vector<std::unique_ptr<GuardSettingCommand>> changes;
    for (const auto &[option, setting] : options) {
        if (!c.parser.isSet(option))
            continue;
        std::string value = c.parser.value(option).toStdString();
        if (value == "none")
            value.clear();
        changes.push_back(std::make_unique<GuardSettingCommand>(
            store, store.actor(), std::string(setting), value, requiredReason(c)));
        requireValid(changes.back()->validate());
    }
    for (const auto &change : changes)
        change->execute();
    const RunBudgets b = defaultRunBudgets(
        [&store](std::string_view name) { return store.guardSetting(std::string(name)); });
    RunRecord shown;
    shown.runId = "(new runs)";
    shown.budgets = b;
    const nlohmann::json j = runJson(shown).at("budgets");
    c.print(
        {{"defaults", j}, {"changed", changes.size()}},
        "new runs get: failed_dispatches=" + limitText(b.failedDispatches) + "  no_progress=" +
            limitText(b.noProgressMs ? std::optional(*b.noProgressMs / 1000) : std::nullopt, " s") +
            "  spend=" + (b.spend ? amountText(*b.spend) : std::string("none")) +
            "  tokens=" + limitText(b.tokens));
    return ExitOk;
}

int cmdRun(Context &c)
{
    const QStringList limits = {QStringLiteral("failed-dispatches"), QStringLiteral("no-progress"),
                                QStringLiteral("spend"), QStringLiteral("tokens")};
    const QStringList guarded = {QStringLiteral("reason"), QStringLiteral("request-id")};
    return dispatch(
        c, "run",
        {{QStringLiteral("show"), {1, {}, cmdRunShow}},
         {QStringLiteral("list"),
          {0,
           {QStringLiteral("state"), QStringLiteral("limit"), QStringLiteral("after")},
           cmdRunList}},
         {QStringLiteral("resume"),
          {1,
           guarded + QStringList{QStringLiteral("add-failed"), QStringLiteral("add-spend"),
                                 QStringLiteral("add-tokens")},
           cmdRunResume}},
         {QStringLiteral("budget"), {1, guarded + limits, cmdRunBudget}},
         {QStringLiteral("sweep"), {0, {}, cmdRunSweep}},
         {QStringLiteral("defaults"),
          {0, limits + QStringList{QStringLiteral("reason")}, cmdRunDefaults}}});
}

} // namespace

void addRunCommands(std::map<QString, Command> &table)
{
    table.insert({
        {QStringLiteral("run"),
         {2,
          "run show|list|resume|budget|sweep|defaults [RUN] [OPTIONS]",
          "A run's budgets (failed dispatches, time without progress, spend and token caps), what\n"
          "it used and why it halted; a halted run dispatches nothing (budget_exhausted, exit 75)\n"
          "until a person resumes it:\n"
          "  show RUN                        budgets, used, state, halt reason\n"
          "  list [--state active|halted|finished] [--limit N] [--after RUN]\n"
          "  resume RUN --reason TEXT [--add-failed N] [--add-spend AMOUNT] [--add-tokens N]\n"
          "      a guarded action: audited, idempotent by --request-id, four-eyes when the added\n"
          "      spend is above the threshold (status pending, exit 0, until a second identity)\n"
          "  budget RUN --reason TEXT [--failed-dispatches N] [--no-progress S] [--spend AMOUNT]\n"
          "      [--tokens N]     set limits (none: no limit); a guarded action like resume\n"
          "  sweep                           halt runs without progress for their limit\n"
          "  defaults [--failed-dispatches N] [--no-progress S] [--spend AMOUNT] [--tokens N]\n"
          "      --reason TEXT   show or set what new runs get (admins; audited)",
          {opt("state", "list: active, halted or finished (active, every operation final).", "S"),
           opt("limit", "list: page size (default 50).", "N"),
           opt("after", "list: continue after this run id (the previous page's next_after).",
               "RUN"),
           opt("reason", "resume, budget, defaults: why (required).", "TEXT"),
           opt("request-id", "resume, budget: idempotency id (default: derived from it).", "ID"),
           opt("add-failed", "resume: failed dispatches to add to the limit.", "N"),
           opt("add-spend", "resume: spend to add to the cap, e.g. \"50.00 EUR\".", "AMOUNT"),
           opt("add-tokens", "resume: tokens to add to the cap.", "N"),
           opt("failed-dispatches", "budget, defaults: failed dispatches allowed, or none.", "N"),
           opt("no-progress", "budget, defaults: seconds without progress allowed, or none.", "S"),
           opt("spend", "budget, defaults: the spend cap, e.g. \"100.00 EUR\", or none.", "AMOUNT"),
           opt("tokens", "budget, defaults: the token cap, or none.", "N")},
          cmdRun}},
    });
}

} // namespace idempo::cli
