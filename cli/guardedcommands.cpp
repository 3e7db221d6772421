// SPDX-License-Identifier: Apache-2.0
// The guarded actions: each command object validates, describes and executes
// (approvecommand.h, reconcilecommand.h, guardsettingcommand.h); the CLI only gathers arguments
// and prints. Also the audit log they write.
#include <memory>

#include <QDateTime>

#include "approvecommand.h"
#include "auditchange.h"
#include "auditverify.h"
#include "context.h"
#include "error.h"
#include "guardedactionbuilder.h"
#include "guardsettingcommand.h"
#include "journallookup.h"
#include "money.h"
#include "operationkey.h"
#include "optionvalue.h"
#include "output.h"
#include "reconcilecommand.h"
#include "recordjson.h"
#include "textescape.h"
#include "usageerror.h"

namespace idempo::cli {
namespace {

/// `reference` is approve's --reference (reject has none).
int runApproval(Context &c, ApprovalDecision decision, const std::string &reference)
{
    ApproveCommand::Request request;
    request.ns = c.ns;
    request.key = c.key();
    request.decision = decision;
    request.reason = requiredReason(c);
    request.externalReference = reference;
    request.approvalId = c.parser.value(QStringLiteral("approval-id")).toStdString();
    if (c.parser.isSet(QStringLiteral("approval-id")) && request.approvalId.empty())
        throw UsageError{"--approval-id is empty: give the id, or leave the option out to derive "
                         "one"};
    LedgerStore &store = c.engine().store();
    ApproveCommand command =
        GuardedActionBuilder(c.engine().settings()).approve(store, store.actor(), request);
    requireValid(command.validate());
    const ActionPreview preview = command.describe();
    if (c.parser.isSet(QStringLiteral("dry-run"))) {
        c.print({{"dry_run", true}, {"action", preview.sentence}, {"preview", preview.details}},
                preview.sentence + "\n(dry run: nothing written; approval id " +
                    escapedText(command.approvalId()) + ")");
        return ExitOk;
    }
    const nlohmann::json result = command.execute().toJson();
    const std::string status = result.at("status").get<std::string>();
    std::string human = preview.sentence + "\n" + status + ": approval " +
                        escapedText(command.approvalId()) + ", revision " +
                        std::to_string(result.at("revision").get<int>());
    if (status == "pending")
        human += " (waiting for a second approver)";
    if (status == "replayed")
        human += " (submitted before: the first decision stands, nothing applied again)";
    c.print({{"action", preview.sentence}, {"result", result}}, human);
    return ExitOk;
}

int cmdApprove(Context &c)
{
    if (!c.parser.isSet(QStringLiteral("decision")))
        throw UsageError{"missing --decision redispatch|confirm|reject"};
    const auto decision = parseDecision(c.parser.value(QStringLiteral("decision")).toStdString());
    if (!decision)
        throw UsageError{"--decision must be redispatch, confirm or reject, not " +
                         quotedValue(c.parser.value(QStringLiteral("decision")).toStdString())};
    return runApproval(c, *decision, c.parser.value(QStringLiteral("reference")).toStdString());
}

int cmdReject(Context &c)
{
    return runApproval(c, ApprovalDecision::Reject, std::string());
}

int cmdReconcile(Context &c)
{
    ReconcileCommand::Request request;
    request.ns = c.ns;
    const QStringList args = c.parser.positionalArguments();
    request.key = args.size() > 1 ? args.at(1).toStdString() : std::string();
    const bool bulk = request.key.empty();
    if (c.parser.isSet(QStringLiteral("state"))) {
        request.state = parseState(c.parser.value(QStringLiteral("state")).toStdString());
        if (!request.state)
            throw UsageError{"unknown --state " +
                             quotedValue(c.parser.value(QStringLiteral("state")).toStdString())};
    }
    request.keyPrefix = c.filterOption(QStringLiteral("key-prefix"));
    request.runId = c.filterOption(QStringLiteral("run"));
    if (!bulk && (request.state || !request.keyPrefix.empty() || !request.runId.empty()))
        throw UsageError{"give a KEY or a filter (--state, --key-prefix, --run), not both"};
    if (bulk && !request.state && request.keyPrefix.empty() && request.runId.empty())
        throw UsageError{"missing KEY, or a filter: --state, --key-prefix or --run"};
    request.reason = requiredReason(c);
    LedgerStore &store = c.engine().store();
    const auto lookup = openProviderLookup(store);
    ReconcileCommand command = GuardedActionBuilder(c.engine().settings())
                                   .reconcile(store, *lookup, store.actor(), request);
    requireValid(command.validate());
    const ActionPreview preview = command.describe();
    if (c.parser.isSet(QStringLiteral("dry-run")) ||
        (bulk && !c.parser.isSet(QStringLiteral("yes")))) {
        c.print({{"dry_run", true}, {"action", preview.sentence}, {"preview", preview.details}},
                preview.sentence + "\n(nothing written" +
                    (bulk ? std::string("; add --yes to reconcile them") : std::string()) + ")");
        return ExitOk;
    }
    const nlohmann::json result = command.execute().toJson();
    std::string human = preview.sentence;
    for (const auto &row : result.at("reconciled"))
        human += "\n" + row.at("key").get<std::string>() + ": " +
                 row.at("from").get<std::string>() + " -> " + row.at("to").get<std::string>() +
                 " (provider: " + row.at("evidence").at("status").get<std::string>() + ")";
    for (const auto &row : result.at("skipped"))
        human += "\n" + row.at("key").get<std::string>() + ": skipped, " +
                 escapedText(row.at("why").get<std::string>());
    c.print({{"action", preview.sentence}, {"result", result}}, human);
    return ExitOk;
}

nlohmann::json auditJson(const AuditRecord &r)
{
    const auto embedded = [](const std::string &text) {
        return text.empty() ? nlohmann::json() : nlohmann::json::parse(text, nullptr, false);
    };
    return {{"seq", r.seq},
            {"at", timestampJson(r.atMs)},
            {"who", r.entry.who},
            {"role", r.entry.role},
            {"action", r.entry.action},
            {"target", r.entry.target},
            {"reason", r.entry.reason},
            {"before", embedded(r.entry.beforeState)},
            {"after", embedded(r.entry.afterState)},
            {"approval_id", r.entry.approvalId},
            {"detail", embedded(r.entry.detail)},
            {"prev_hash", r.prevHash},
            {"target_prev_hash", r.targetPrevHash},
            {"hash", r.hash}};
}

/// --since / --until: an ISO 8601 time with its zone (2026-12-01T21:55:00Z).
std::optional<std::int64_t> timeOption(const Context &c, const char *name)
{
    const QString option = QLatin1String(name);
    if (!c.parser.isSet(option))
        return std::nullopt;
    const QString value = c.parser.value(option);
    const QDateTime t = QDateTime::fromString(value, Qt::ISODateWithMs);
    if (!t.isValid() || t.timeSpec() == Qt::LocalTime)
        throw UsageError{"--" + std::string(name) +
                         " takes an ISO 8601 time with its zone (2026-12-01T21:55:00Z), not " +
                         quotedValue(value.toStdString())};
    return t.toMSecsSinceEpoch();
}

/// The filters of `audit list`; the namespace narrows only when --namespace is given, so that
/// queue and setting records stay listed by default.
AuditFilter auditFilter(const Context &c)
{
    AuditFilter f;
    const auto value = [&c](const char *name) { return c.filterOption(QLatin1String(name)); };
    f.target = value("target");
    if (c.parser.isSet(QStringLiteral("operation"))) {
        if (!f.target.empty())
            throw UsageError{"give --operation KEY or --target TARGET, not both"};
        validateOperationKey(value("operation"));
        validateNamespace(c.ns);
        f.target = c.ns + "/" + value("operation");
    }
    if (c.parser.isSet(QStringLiteral("namespace")))
        f.ns = c.ns;
    f.who = value("actor");
    f.action = value("action");
    f.fromMs = timeOption(c, "since");
    f.toMs = timeOption(c, "until");
    if (f.fromMs && f.toMs && *f.fromMs >= *f.toMs)
        throw UsageError{"--since must be before --until"};
    f.newestFirst = c.parser.isSet(QStringLiteral("newest-first"));
    f.afterSeq = afterId(c);
    f.limit = pageLimit(c);
    return f;
}

/// `audit verify [--expect-head HASH]`: the chain, and that it still holds the expected head.
int auditVerify(Context &c, LedgerStore &store)
{
    const std::string expected = c.parser.value(QStringLiteral("expect-head")).toStdString();
    if (c.parser.isSet(QStringLiteral("expect-head")) &&
        (expected.size() != 64 ||
         expected.find_first_not_of("0123456789abcdef") != std::string::npos))
        throw UsageError{"--expect-head takes a record hash as `audit head` prints it (64 hex "
                         "digits), not '" +
                         expected + "'"};
    const AuditVerify::Result result = AuditVerify(store).run(expected);
    c.print(AuditVerify::toJson(result),
            result.ok ? "audit log intact: " + std::to_string(result.records) +
                            " record(s), head " + result.lastHash +
                            (result.anchorSeq
                                 ? "; expected head is record " + std::to_string(*result.anchorSeq)
                                 : "")
            : result.chainIntact ? "audit log does NOT hold the expected head: " + result.problem
                                 : "audit log BROKEN at record " +
                                       std::to_string(*result.firstBad) + ": " + result.problem);
    return result.ok ? ExitOk : ExitRefused;
}

/// `audit head`: the chain's head, printed only for a chain that verifies: an anchor is worth
/// keeping only if it is sound.
int auditHead(Context &c, LedgerStore &store)
{
    const AuditVerify::Result result = AuditVerify(store).run();
    if (!result.ok) {
        c.print(AuditVerify::toJson(result), "audit log BROKEN at record " +
                                                 std::to_string(*result.firstBad) + ": " +
                                                 result.problem + "; no head to keep");
        return ExitRefused;
    }
    const std::int64_t seq = result.head ? result.head->seq : result.records;
    c.print({{"seq", seq}, {"hash", result.lastHash}},
            "audit head: record " + std::to_string(seq) + ", hash " + result.lastHash +
                "\nkeep it outside the ledger; `idempo audit verify --expect-head HASH` checks "
                "the chain still holds it");
    return ExitOk;
}

/// `audit list`: one page of the records the filter options select.
int auditList(Context &c, LedgerStore &store)
{
    const AuditFilter filter = auditFilter(c);
    const int limit = filter.limit;
    const auto records = store.auditRecords(filter);
    nlohmann::json rows = nlohmann::json::array();
    std::string human;
    for (const AuditRecord &r : records) {
        rows.push_back(auditJson(r));
        human += std::to_string(r.seq) + "  " + when(r.atMs) + "  " + escapedText(r.entry.who) +
                 " (" + escapedText(r.entry.role) + ")  " + r.entry.action + "  " +
                 escapedText(r.entry.target) + "  " + escapedText(r.entry.reason);
        if (const std::string change = auditChangeText(r.entry); !change.empty())
            human += "  " + change;
        human += "\n";
    }
    const bool full = static_cast<int>(records.size()) == limit;
    if (full)
        human += "(more: --after " + std::to_string(records.back().seq) + ")\n";
    if (!human.empty())
        human.pop_back();
    c.print({{"records", rows},
             {"next_after", full ? nlohmann::json(records.back().seq) : nlohmann::json()}},
            human.empty() ? "no audit records" : human);
    return ExitOk;
}

/// One record as a line of `audit export --format csv`: csvField escapes text; the JSON-valued
/// columns keep their JSON form.
std::string auditCsvLine(const AuditRecord &r)
{
    const std::vector<std::string> fields = {std::to_string(r.seq),
                                             when(r.atMs),
                                             r.entry.who,
                                             r.entry.role,
                                             r.entry.action,
                                             r.entry.target,
                                             r.entry.reason,
                                             escapedJson(r.entry.beforeState),
                                             escapedJson(r.entry.afterState),
                                             r.entry.approvalId,
                                             escapedJson(r.entry.detail),
                                             r.prevHash,
                                             r.targetPrevHash,
                                             r.hash};
    std::string line;
    for (const std::string &f : fields)
        line += (line.empty() ? "" : ",") + csvField(f);
    return line;
}

/// `audit export --format csv|json`: every record of the chain, in seq order.
int auditExport(Context &c, LedgerStore &store)
{
    const QString format = c.parser.value(QStringLiteral("format"));
    if (format != QLatin1String("csv") && format != QLatin1String("json"))
        throw UsageError{c.parser.isSet(QStringLiteral("format"))
                             ? "--format must be csv or json, not " +
                                   quotedValue(format.toStdString())
                             : std::string("missing --format csv|json")};
    if (c.json && format == QLatin1String("csv"))
        throw UsageError{"--json prints one JSON object: use --format json"};
    const bool json = format == QLatin1String("json");
    nlohmann::json rows = nlohmann::json::array();
    if (!json)
        printOut("seq,at,who,role,action,target,reason,before,after,approval_id,detail,prev_"
                 "hash,target_prev_hash,hash");
    for (std::int64_t after = 0;;) {
        const auto page = store.auditLog(after, 1000);
        for (const AuditRecord &r : page) {
            if (json)
                rows.push_back(auditJson(r));
            else
                printOut(auditCsvLine(r));
        }
        if (page.size() < 1000)
            break;
        after = page.back().seq;
    }
    if (json)
        printJson({{"records", rows}});
    return ExitOk;
}

int cmdAudit(Context &c)
{
    const QString what = c.positional(1, "audit subcommand (list, verify, head or export)");
    LedgerStore &store = c.engine().store();
    if (what == QLatin1String("verify"))
        return auditVerify(c, store);
    if (what == QLatin1String("head"))
        return auditHead(c, store);
    if (what == QLatin1String("list"))
        return auditList(c, store);
    if (what == QLatin1String("export"))
        return auditExport(c, store);
    throw UsageError{"unknown subcommand 'audit " + escapedText(what.toStdString()) +
                     "': expected list, verify, head or export"};
}

int cmdFourEyes(Context &c)
{
    const bool setAbove = c.parser.isSet(QStringLiteral("above"));
    const bool setRates = c.parser.isSet(QStringLiteral("rates"));
    if (!setAbove && !setRates) {
        LedgerStore &store = c.engine().store();
        const auto current = store.guardSetting(FourEyesSetting);
        const auto rates = store.guardSetting(ReferenceRatesSetting);
        const bool on = current && !current->empty();
        const bool rated = rates && !rates->empty();
        std::string text = on ? "two approvers needed above " + *current
                              : std::string("four-eyes approval is off");
        if (on)
            text += rated ? " " + rates->substr(0, 3) + ", other currencies at " + *rates +
                                " (a currency without a rate always needs two)"
                          : ", as written in every currency (no reference rates: set them with "
                            "--rates)";
        c.print({{"four_eyes_above", on ? nlohmann::json(*current) : nlohmann::json()},
                 {"reference_rates", rated ? nlohmann::json(*rates) : nlohmann::json()}},
                text);
        return ExitOk;
    }
    // The values' form is the command line's business (exit 64), judged before the ledger is
    // opened; the ledger's own check (idempo.set_guard_setting on PostgreSQL) stays behind it.
    const auto valueOf = [&c](const char *option) {
        std::string value = c.parser.value(QLatin1String(option)).toStdString();
        // An empty value is most often an unset shell variable: turning a rule off says so.
        if (value.empty())
            throw UsageError{std::string("--") + option +
                             " needs a value, or 'off' to turn it off"};
        return value == "off" ? std::string() : value;
    };
    const std::string rates = setRates ? valueOf("rates") : std::string();
    const std::string above = setAbove ? valueOf("above") : std::string();
    std::string warning;
    if (!rates.empty()) {
        std::string problem;
        const auto parsed = ReferenceRates::parse(rates, &problem);
        if (!parsed)
            throw UsageError{"--rates: " + problem};
        if (parsed->nanoRates.empty())
            warning = "\nnote: no rates besides " + parsed->reference +
                      ": every value in another currency needs two approvers";
    }
    if (!above.empty())
        if (const std::string problem = thresholdProblem(above); !problem.empty())
            throw UsageError{"--above: " + problem};
    LedgerStore &store = c.engine().store();
    const std::string reason = requiredReason(c);
    std::vector<std::unique_ptr<GuardSettingCommand>> commands;
    if (setRates)
        commands.push_back(std::make_unique<GuardSettingCommand>(
            store, store.actor(), ReferenceRatesSetting, rates, reason));
    if (setAbove)
        commands.push_back(std::make_unique<GuardSettingCommand>(store, store.actor(),
                                                                 FourEyesSetting, above, reason));
    // Both are checked before either is stored: a bad value writes nothing.
    for (const auto &command : commands)
        requireValid(command->validate());
    nlohmann::json done = nlohmann::json::array();
    std::string text;
    for (const auto &command : commands) {
        const ActionPreview preview = command->describe();
        done.push_back(command->execute().toJson());
        text += (text.empty() ? "" : "\n") + preview.sentence + ": done";
    }
    c.print(done.size() == 1 ? done.front() : nlohmann::json{{"settings", done}}, text + warning);
    return ExitOk;
}

} // namespace

void addGuardedCommands(std::map<QString, Command> &table)
{
    table.insert({
        {QStringLiteral("approve"),
         {1,
          "approve KEY --decision redispatch|confirm|reject --reason TEXT [--reference REF] "
          "[--approval-id ID] [--dry-run]",
          "Decide an operation in awaiting_approval or confirmation_required: dispatch it again (a "
          "fresh\n"
          "attempt budget), confirm it succeeded with the provider's reference, or reject it. The "
          "same\n"
          "approval id again returns the first decision; above the four-eyes threshold a second "
          "approver\n"
          "applies it; whoever requested or last touched the operation cannot approve it.",
          {opt("decision", "redispatch, confirm or reject.", "D"),
           opt("reason", "Why (required).", "TEXT"),
           opt("reference", "confirm: the external reference that proves the effect.", "REF"),
           opt("approval-id", "Idempotency id of this submission (default: derived from it).",
               "ID"),
           opt("dry-run", "Show what would happen; write nothing.")},
          cmdApprove}},
        {QStringLiteral("reject"),
         {1,
          "reject KEY --reason TEXT [--approval-id ID] [--dry-run]",
          "Reject an operation in awaiting_approval or confirmation_required (to failed_terminal).",
          {opt("reason", "Why (required).", "TEXT"),
           opt("approval-id", "Idempotency id of this submission (default: derived from it).",
               "ID"),
           opt("dry-run", "Show what would happen; write nothing.")},
          cmdReject}},
        {QStringLiteral("reconcile"),
         {1,
          "reconcile KEY|--state S|--key-prefix P|--run R --reason TEXT [--yes] [--dry-run]",
          "Look operations up at their provider by key, record the answer as evidence and move "
          "them:\n"
          "found -> succeeded; not found at the operation's own provider -> received "
          "(unknown_outcome\n"
          "only); pending or no lookup for the operation -> confirmation_required. A filter prints "
          "the\n"
          "count first and acts only with --yes.",
          {opt("state", "Bulk: only this state.", "S"),
           opt("key-prefix", "Bulk: only keys starting with P.", "P"),
           opt("run", "Bulk: only this run.", "R"), opt("reason", "Why (required).", "TEXT"),
           opt("yes", "Bulk: reconcile the counted set."),
           opt("dry-run", "Look up and show; write nothing.")},
          cmdReconcile}},
        {QStringLiteral("audit"),
         {1,
          "audit list|verify|head|export [--after SEQ] [--limit N] [--operation KEY|--target T] "
          "[--actor WHO] [--action KIND] [--since TIME] [--until TIME] [--newest-first] "
          "[--format csv|json] [--expect-head HASH]",
          "The append-only audit log of guarded actions:\n"
          "  list     records, oldest first, a page at a time; filtered in the ledger by target,\n"
          "           namespace (--namespace given), actor, action and time\n"
          "  verify   check the hash chain and the ledger's head; names the first edited, removed "
          "or\n"
          "           reordered record (exit 65); --expect-head: the chain must still hold that "
          "record\n"
          "  head     the newest record's hash, to keep outside the ledger as an anchor\n"
          "  export   every record as CSV or JSON on stdout",
          {opt("after", "list: continue after this seq.", "SEQ"),
           opt("limit", "list: page size (default 50).", "N"),
           opt("operation", "list: records of this operation (in --namespace).", "KEY"),
           opt("target", "list: records of this target (ns/key, queue:NAME, setting:NAME).", "T"),
           opt("actor", "list: records of this identity.", "WHO"),
           opt("action", "list: records of this action (approve, reject, reconcile, …).", "KIND"),
           opt("since", "list: records at or after this ISO 8601 time.", "TIME"),
           opt("until", "list: records before this ISO 8601 time.", "TIME"),
           opt("newest-first", "list: newest first (--after then continues downwards)."),
           opt("format", "export: csv or json.", "F"),
           opt("expect-head",
               "verify: a hash `audit head` printed earlier; the chain must still hold it.",
               "HASH")},
          cmdAudit}},
        {QStringLiteral("four-eyes"),
         {0,
          "four-eyes [--above AMOUNT|off] [--rates 'REF CUR=RATE ...'|off] --reason TEXT",
          "Show or set the ledger's four-eyes threshold: above AMOUNT (major units) a "
          "re-dispatch or\n"
          "confirm needs two different approvers. With reference rates (e.g. 'EUR USD=0.92 "
          "JPY=0.0061':\n"
          "what one unit of each currency is worth in the first) AMOUNT is in the reference "
          "currency,\n"
          "every value is converted, and a currency without a rate always needs two "
          "approvers;\n"
          "without, AMOUNT applies as written in every currency. Admins only.",
          {opt("above", "The threshold, e.g. 1000.00, or off.", "AMOUNT"),
           opt("rates", "Reference rates, e.g. 'EUR USD=0.92 JPY=0.0061', or off.", "RATES"),
           opt("reason", "Why (required).", "TEXT")},
          cmdFourEyes}},
    });
}

} // namespace idempo::cli
