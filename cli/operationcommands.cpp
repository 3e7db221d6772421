// SPDX-License-Identifier: Apache-2.0
// The operation commands: the ledger itself and one operation's claim, outcome and record.
#include <string>

#include "context.h"
#include "engine.h"
#include "optionvalue.h"
#include "recordjson.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

/// A lease as the engine takes it: 1 ms to 24 h.
constexpr double MinLeaseSeconds = 0.001;
constexpr double MaxLeaseSeconds = Engine::MaxLeaseMs / 1000.0;

std::string describe(const Operation &op)
{
    std::string s = op.key + "  " + std::string(stateName(op.state)) +
                    "  kind=" + std::string(toolKindName(op.kind)) +
                    "  token=" + std::to_string(op.fencingToken) +
                    "  attempt=" + std::to_string(op.attempt) + "/" +
                    std::to_string(op.maxAttempts);
    if (op.value)
        s += "  value=" + amountText(*op.value);
    if (op.state == OperationState::Dispatching)
        s += "  owner=" + escapedText(op.leaseOwner) + "  lease_until=" + when(op.leaseExpiresAtMs);
    if (op.nextAttemptAtMs)
        s += "  next_attempt=" + when(op.nextAttemptAtMs);
    if (op.errorClass)
        s += "  error=" + std::string(errorClassName(*op.errorClass)) +
             (op.errorDetail.empty() ? "" : ": " + escapedText(op.errorDetail));
    return s;
}

int cmdInit(Context &c)
{
    LedgerStore &store = c.engine().store();
    store.migrate();
    const int version = store.schemaVersion();
    c.print({{"ledger", store.describe()}, {"schema_version", version}},
            "ledger " + store.describe() + " ready (schema version " + std::to_string(version) +
                ")");
    return ExitOk;
}

int cmdClaim(Context &c)
{
    ClaimInput in;
    in.ns = c.ns;
    in.key = c.key();
    if (!c.parser.isSet(QStringLiteral("payload")))
        throw UsageError{"missing --payload JSON (or @FILE)"};
    in.payloadJson = c.jsonArgument(QStringLiteral("payload"));
    if (c.parser.isSet(QStringLiteral("kind"))) {
        const auto kind = parseToolKind(c.parser.value(QStringLiteral("kind")).toStdString());
        if (!kind)
            throw UsageError{"--kind must be read, idempotent_write or protected_write, not " +
                             quotedValue(c.parser.value(QStringLiteral("kind")).toStdString())};
        in.kind = *kind;
    }
    in.owner = c.parser.value(QStringLiteral("owner")).toStdString();
    if (c.parser.isSet(QStringLiteral("lease")))
        in.leaseMs = c.secondsOption(QStringLiteral("lease"), MinLeaseSeconds, MaxLeaseSeconds);
    in.runId = c.parser.value(QStringLiteral("run")).toStdString();
    in.stepId = c.parser.value(QStringLiteral("step")).toStdString();
    in.target = c.parser.value(QStringLiteral("target")).toStdString();
    if (c.parser.isSet(QStringLiteral("max-attempts")))
        in.maxAttempts = static_cast<int>(
            c.integerOption(QStringLiteral("max-attempts"), 1, Engine::MaxAttempts));
    in.requiresApproval = c.parser.isSet(QStringLiteral("requires-approval"));
    if (c.parser.isSet(QStringLiteral("value")))
        in.value = parseAmount(c.parser.value(QStringLiteral("value")).toStdString());
    if (c.parser.isSet(QStringLiteral("cost")))
        in.cost = parseAmount(c.parser.value(QStringLiteral("cost")).toStdString());
    in.tokens = c.integerOption(QStringLiteral("tokens"), 0, Engine::MaxClaimTokens, 0);
    for (const QString &list : c.parser.values(QStringLiteral("fingerprint-fields")))
        for (const QString &pointer : list.split(QLatin1Char(','), Qt::SkipEmptyParts))
            in.fingerprintFields.push_back(pointer.trimmed().toStdString());

    const ClaimResult result = c.engine().claim(in);
    const Operation &op = result.operation;
    std::string human = std::string(claimOutcomeName(result.outcome)) + "  " + describe(op);
    if (result.outcome == ClaimOutcome::Replayed && !op.result.empty())
        human += "\nresult: " + escapedJson(op.result);
    if (result.exhausted)
        human += "\nrun " + escapedText(op.runId) +
                 " is halted: " + std::string(budgetName(result.exhausted->budget)) + ": " +
                 escapedText(result.exhausted->detail);
    c.print(claimJson(result), human);
    return exitFor(result.outcome);
}

int cmdComplete(Context &c)
{
    const Operation op =
        c.engine().complete(c.ns, c.key(), c.token(), c.jsonArgument(QStringLiteral("result")),
                            c.jsonArgument(QStringLiteral("receipt")));
    c.print(operationJson(op), describe(op));
    return ExitOk;
}

int cmdFail(Context &c)
{
    if (!c.parser.isSet(QStringLiteral("class")))
        throw UsageError{"missing --class (transient, rate_limited, validation, auth, "
                         "policy_denied, unknown_outcome)"};
    const auto errorClass = parseErrorClass(c.parser.value(QStringLiteral("class")).toStdString());
    if (!errorClass)
        throw UsageError{"unknown --class " +
                         quotedValue(c.parser.value(QStringLiteral("class")).toStdString())};
    std::optional<std::int64_t> retryAfter;
    if (c.parser.isSet(QStringLiteral("retry-after")))
        retryAfter = c.secondsOption(QStringLiteral("retry-after"), 0, MaxSeconds);
    const Operation op =
        c.engine().fail(c.ns, c.key(), c.token(), *errorClass,
                        c.parser.value(QStringLiteral("detail")).toStdString(), retryAfter);
    std::string human = describe(op);
    // The failure that uses up the run's budget halts it: say so now, not at the next claim.
    if (!op.runId.empty())
        if (const std::optional<RunRecord> run = c.engine().store().findRun(op.ns, op.runId);
            run && run->state == RunState::Halted && run->haltedAtMs &&
            *run->haltedAtMs >= op.updatedAtMs)
            human += "\nrun " + escapedText(op.runId) +
                     " is halted: " + escapedText(run->haltDetail) + " (idempo run resume " +
                     escapedText(op.runId) + " --reason …)";
    c.print(operationJson(op), human);
    return ExitOk;
}

int cmdHeartbeat(Context &c)
{
    std::optional<std::int64_t> lease;
    if (c.parser.isSet(QStringLiteral("lease")))
        lease = c.secondsOption(QStringLiteral("lease"), MinLeaseSeconds, MaxLeaseSeconds);
    const Operation op = c.engine().heartbeat(c.ns, c.key(), c.token(), lease);
    c.print(operationJson(op), describe(op));
    return ExitOk;
}

int cmdShow(Context &c)
{
    const Operation op = c.engine().get(c.ns, c.key());
    std::string human = describe(op) + "\nrun=" + op.runId + " step=" + op.stepId +
                        " fingerprint=" + op.fingerprint + "\npayload: " + escapedJson(op.payload);
    if (!op.result.empty())
        human += "\nresult: " + escapedJson(op.result);
    if (!op.receipt.empty())
        human += "\nreceipt: " + escapedJson(op.receipt);
    c.print(operationJson(op), human);
    return ExitOk;
}

int cmdHistory(Context &c)
{
    const std::string key = c.key();
    const Operation op = c.engine().get(c.ns, key);
    nlohmann::json events = nlohmann::json::array();
    std::string human;
    for (const OperationEvent &e : c.engine().store().history(c.ns, key)) {
        events.push_back(eventJson(e));
        human += when(e.atMs) + "  " +
                 (e.fromState ? std::string(stateName(*e.fromState)) : std::string("(new)")) +
                 " -> " + std::string(stateName(e.toState)) +
                 "  token=" + std::to_string(e.fencingToken) +
                 "  attempt=" + std::to_string(e.attempt) + "  " + escapedText(e.actor) +
                 (e.detail.empty() ? "" : "  " + escapedText(e.detail)) + '\n';
    }
    if (!human.empty())
        human.pop_back();
    c.print({{"key", op.key}, {"namespace", op.ns}, {"events", events}}, human);
    return ExitOk;
}

int cmdList(Context &c)
{
    ListFilter filter;
    filter.ns = c.ns;
    if (c.parser.isSet(QStringLiteral("state"))) {
        filter.state = parseState(c.parser.value(QStringLiteral("state")).toStdString());
        if (!filter.state)
            throw UsageError{"unknown --state " +
                             quotedValue(c.parser.value(QStringLiteral("state")).toStdString())};
    }
    filter.runId = c.filterOption(QStringLiteral("run"));
    filter.keyPrefix = c.filterOption(QStringLiteral("key-prefix"));
    for (const QString &term : c.parser.values(QStringLiteral("where")))
        filter.payload.push_back(parsePayloadMatch(term.toStdString()));
    filter.customer = c.filterOption(QStringLiteral("customer"));
    filter.afterId = c.integerOption(QStringLiteral("after"), 0, MaxWholeNumber, 0);
    filter.limit = static_cast<int>(c.integerOption(QStringLiteral("limit"), 1, 10'000, 50));
    const auto ops = c.engine().store().list(filter);
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const Operation &op : ops) {
        rows.push_back(operationJson(op));
        human += describe(op) + '\n';
    }
    const bool full = static_cast<int>(ops.size()) == filter.limit;
    nlohmann::json next = full ? nlohmann::json(ops.back().id) : nlohmann::json();
    if (full)
        human += "(more: --after " + std::to_string(ops.back().id) + ")\n";
    if (!human.empty())
        human.pop_back();
    c.print({{"operations", rows}, {"next_after", next}}, human.empty() ? "no operations" : human);
    return ExitOk;
}

int cmdPurge(Context &c)
{
    const std::int64_t purged = c.engine().store().purgeExpired(c.ns);
    c.print({{"purged", purged}}, "purged " + std::to_string(purged) + " expired operation(s)");
    return ExitOk;
}

} // namespace

void addOperationCommands(std::map<QString, Command> &table)
{
    const QCommandLineOption token = opt("token", "Fencing token returned by the claim.", "N");
    const QCommandLineOption lease = opt("lease", "Lease length in seconds (default 30).", "S");
    table.insert({
        {QStringLiteral("init"), {0, "init", "Create or migrate the ledger.", {}, cmdInit}},
        {QStringLiteral("claim"),
         {1,
          "claim KEY --payload JSON|@FILE [options]",
          "Claim the operation KEY: prints the outcome (claimed, replayed, in_progress, "
          "retry_later,\n"
          "reconcile_required, payload_mismatch, budget_exhausted).",
          {opt("payload", "The operation's payload: JSON text, @FILE, or @- for stdin.", "JSON"),
           opt("kind", "read, idempotent_write or protected_write (default).", "K"),
           opt("owner", "Lease owner (default host:pid).", "ID"), lease,
           opt("run", "Execution (run) id.", "R"), opt("step", "Step id.", "S"),
           opt("target", "Target of the step.", "T"),
           opt("fingerprint-fields", "Comma-separated JSON Pointers the fingerprint covers.",
               "PTRS"),
           opt("max-attempts", "Attempt limit (default 3).", "N"),
           opt("requires-approval", "A new operation waits in awaiting_approval."),
           opt("value",
               "What the operation moves, e.g. \"1250.00 EUR\" (ISO 4217; recorded by the\n"
               "claim that creates the record).",
               "AMOUNT"),
           opt("cost",
               "What this dispatch may spend, e.g. \"0.40 EUR\": charged to the run's\n"
               "spend cap (needs --run).",
               "AMOUNT"),
           opt("tokens", "Model tokens this dispatch may use, charged to the run's token cap.",
               "N")},
          cmdClaim}},
        {QStringLiteral("complete"),
         {1,
          "complete KEY --token N [--result JSON] [--receipt JSON]",
          "Record success of the attempt holding the lease.",
          {token, opt("result", "Result JSON, @FILE or @-.", "JSON"),
           opt("receipt", "Provider receipt / external reference JSON.", "JSON")},
          cmdComplete}},
        {QStringLiteral("fail"),
         {1,
          "fail KEY --token N --class CLASS [--detail TEXT] [--retry-after S]",
          "Record a failed attempt; the retry policy decides what comes next.",
          {token,
           opt("class",
               "transient, rate_limited, validation, auth, policy_denied, unknown_outcome.",
               "CLASS"),
           opt("detail", "What went wrong.", "TEXT"),
           opt("retry-after", "Provider's Retry-After, seconds.", "S")},
          cmdFail}},
        {QStringLiteral("heartbeat"),
         {1,
          "heartbeat KEY --token N [--lease S]",
          "Extend the lease.",
          {token, lease},
          cmdHeartbeat}},
        {QStringLiteral("show"), {1, "show KEY", "Print the operation record.", {}, cmdShow}},
        {QStringLiteral("history"),
         {1, "history KEY", "Print the operation's state history.", {}, cmdHistory}},
        {QStringLiteral("list"),
         {0,
          "list [--state S] [--run R] [--key-prefix P] [--where /POINTER=VALUE]... "
          "[--customer C] [--limit N] [--after ID]",
          "List operations, oldest first, a page at a time.",
          {opt("state", "Only this state.", "S"), opt("run", "Only this run.", "R"),
           opt("key-prefix", "Only keys starting with P.", "P"),
           opt("where",
               "Only payloads holding VALUE at the JSON Pointer (repeatable; numbers, true, "
               "false and null match their text).",
               "/POINTER=VALUE"),
           opt("customer",
               "Only payloads whose customer (customer, customer_id, client, "
               "client_id) is C.",
               "C"),
           opt("limit", "Page size (default 50).", "N"),
           opt("after", "Continue after this id (the previous page's next_after).", "ID")},
          cmdList}},
        {QStringLiteral("purge"),
         {0, "purge", "Remove operations whose retention expired.", {}, cmdPurge}},
    });
}

} // namespace idempo::cli
