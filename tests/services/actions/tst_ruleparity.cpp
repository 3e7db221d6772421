// SPDX-License-Identifier: Apache-2.0
// One rule, one refusal: every refusal of the guarded actions' rules, from one table of cases,
// on both copies of the rules. On the embedded ledger the case runs the C++ command (the CLI's
// and the console's path); under tests/pg/with-postgres.sh it calls the ledger's SQL function
// directly as a login of the role, with no C++ rule in between. Each case expects the same
// error code and the sentence that names the rule, and that nothing was written.
#include <QUrl>
#include <QtTest>

#include "approvecommand.h"
#include "error.h"
#include "guardedactionhelpers.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"
#include "pgconnection.h"
#include "providerlookup.h"
#include "reconcilecommand.h"
#include "runactioncommand.h"

using namespace idempo;
using namespace idempo::test;

namespace {

bool onPostgres()
{
    return !qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").isEmpty();
}

/// The people of the cases: on PostgreSQL each is a login in the group of its role.
const std::vector<ActorIdentity> kPeople = {
    {"bob", "approver"}, {"carol", "approver"}, {"oliver", "operator"}, {"ada", "admin"}};

const ActorIdentity &person(const std::string &name)
{
    return *std::find_if(kPeople.begin(), kPeople.end(),
                         [&name](const ActorIdentity &p) { return p.name == name; });
}

/// What a case asks of the ledger, by whom.
struct Action
{
    enum class Kind
    {
        Approve,
        Reconcile,
        Setting,
        ResumeRun
    } kind = Kind::Approve;
    std::string who;
    std::string key;
    ApprovalDecision decision = ApprovalDecision::Redispatch;
    std::string reason = "checked with the customer";
    std::string reference;
    std::string approvalId;
    std::int64_t versionsBehind = 0; ///< approve: the version seen, this many before the current
    std::string evidenceStatus = "not_found"; ///< reconcile: what the provider answered
    std::string settingName;
    std::string settingValue;
    std::int64_t addTokens = 0; ///< resume: tokens added to the run's cap
};

struct RuleCase
{
    std::function<void(LedgerFixture &)> setup;
    Action action;
    ErrorCode code;
    std::string sentence; ///< the refusal's words that name the rule (a fragment of its message)
};

/// A provider that answers every lookup the same.
class FixedLookup final : public ProviderLookup
{
public:
    explicit FixedLookup(ProviderEvidence::Status status) : m_status(status) {}
    ProviderEvidence lookup(const Operation &) override
    {
        ProviderEvidence e;
        e.status = m_status;
        e.provider = "core_banking";
        return e;
    }

private:
    ProviderEvidence::Status m_status;
};

ProviderEvidence::Status statusOf(const std::string &name)
{
    if (name == "found")
        return ProviderEvidence::Status::Found;
    if (name == "pending")
        return ProviderEvidence::Status::Pending;
    return ProviderEvidence::Status::NotFound;
}

std::string versionSeen(LedgerFixture &f, const Action &a)
{
    const std::optional<Operation> op = f.store().find(kNs, a.key);
    return op ? std::to_string(op->version - a.versionsBehind) : std::string("1");
}

/// The C++ command the CLI and the console run.
void runCommand(LedgerFixture &f, const Action &a)
{
    const ActorIdentity &actor = person(a.who);
    switch (a.kind) {
    case Action::Kind::Approve: {
        ApproveCommand::Request r;
        r.ns = kNs;
        r.key = a.key;
        r.decision = a.decision;
        r.reason = a.reason;
        r.externalReference = a.reference;
        r.approvalId = a.approvalId;
        if (a.versionsBehind)
            r.version = std::stoll(versionSeen(f, a));
        ApproveCommand(f.store(), actor, r).execute();
        return;
    }
    case Action::Kind::Reconcile: {
        FixedLookup lookup(statusOf(a.evidenceStatus));
        ReconcileCommand::Request r;
        r.ns = kNs;
        r.key = a.key;
        r.reason = a.reason;
        // A single operation that needs no reconciling is skipped with the rule's words.
        const ReconcileOutcome outcome = ReconcileCommand(f.store(), lookup, actor, r).execute();
        if (!outcome.skipped.empty())
            throw Error(ErrorCode::IllegalTransition, outcome.skipped.front().why);
        return;
    }
    case Action::Kind::Setting:
        GuardSettingCommand(f.store(), actor, a.settingName, a.settingValue, a.reason).execute();
        return;
    case Action::Kind::ResumeRun: {
        RunActionCommand::Request r;
        r.ns = kNs;
        r.runId = a.key;
        r.reason = a.reason;
        r.addTokens = a.addTokens;
        RunActionCommand(f.store(), actor, r).execute();
        return;
    }
    }
}

std::string loginUrl(const std::string &login)
{
    QUrl url(qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL"));
    url.setUserName(QString::fromStdString(login));
    url.setPassword(QString::fromStdString(login + "-secret"));
    return url.toString().toStdString();
}

/// The ledger's SQL function, called by the person's own login: the rule as the database holds it.
void callFunction(LedgerFixture &f, const Action &a)
{
    PgConnection c(loginUrl(a.who));
    switch (a.kind) {
    case Action::Kind::Approve:
        c.exec("approve", "SELECT * FROM idempo.approve_seen($1::bigint, $2, $3, $4, $5, $6, $7)",
               PgParams()
                   .text(versionSeen(f, a))
                   .text(kNs)
                   .text(a.key)
                   .text(a.approvalId.empty() ? "ap-" + a.key : a.approvalId)
                   .text(std::string(decisionName(a.decision)))
                   .text(a.reason)
                   .text(a.reference));
        return;
    case Action::Kind::Reconcile:
        c.exec("reconcile", "SELECT * FROM idempo.reconcile($1, $2, $3, $4)",
               PgParams()
                   .text(kNs)
                   .text(a.key)
                   .text(R"({"provider":"core_banking","status":")" + a.evidenceStatus + "\"}")
                   .text(a.reason));
        return;
    case Action::Kind::Setting:
        c.exec("setting", "SELECT idempo.set_guard_setting($1, $2, $3)",
               PgParams().text(a.settingName).text(a.settingValue).text(a.reason));
        return;
    case Action::Kind::ResumeRun:
        c.exec(
            "resume",
            "SELECT * FROM idempo.run_action($1, $2, $3, 'resume', $4, 0, NULL, NULL, $5::bigint)",
            PgParams()
                .text(kNs)
                .text(a.key)
                .text("rq-" + a.key)
                .text(a.reason)
                .integer(a.addTokens));
        return;
    }
}

/// bob requested it: the first event's label is his.
void requestedByBob(LedgerFixture &f)
{
    needingConfirmation(f, "run-1:refund", "bob");
}

/// worker-a requested it; bob, an admin, reconciled it last (the provider had no answer yet).
void lastTouchedByBob(LedgerFixture &f)
{
    const ClaimInput in = refundClaim("run-1:refund", "worker-a");
    f.engine().fail(kNs, in.key, f.engine().claim(in).operation.fencingToken,
                    ErrorClass::UnknownOutcome, "timeout after the provider took it");
    FixedLookup pending(ProviderEvidence::Status::Pending);
    ReconcileCommand::Request r;
    r.ns = kNs;
    r.key = in.key;
    r.reason = "asked the provider";
    ReconcileCommand(f.store(), pending, {"bob", "admin"}, r).execute();
}

void waitingForConfirmation(LedgerFixture &f)
{
    needingConfirmation(f, "run-1:refund");
}

void setting(LedgerFixture &f, const std::string &name, const std::string &value)
{
    GuardSettingCommand(f.store(), person("ada"), name, value, "policy").execute();
}

std::map<std::string, RuleCase> cases()
{
    using K = Action::Kind;
    std::map<std::string, RuleCase> all;
    const std::string key = "run-1:refund";
    all["approve: a reason is required"] = {
        waitingForConfirmation,
        {K::Approve, "bob", key, ApprovalDecision::Redispatch, ""},
        ErrorCode::Refused,
        "a reason is required"};
    all["approve: a confirm names its reference"] = {
        waitingForConfirmation,
        {K::Approve, "bob", key, ApprovalDecision::Confirm},
        ErrorCode::Refused,
        "confirming needs the external reference that proves the effect"};
    all["approve: a reference is for a confirm only"] = {
        waitingForConfirmation,
        {K::Approve, "bob", key, ApprovalDecision::Redispatch, "checked", "RF-1"},
        ErrorCode::Refused,
        "an external reference belongs to a confirm decision only"};
    all["approve: the decision fits the state"] = {
        [](LedgerFixture &f) {
            ClaimInput gated = refundClaim("run-1:refund");
            gated.requiresApproval = true;
            f.engine().claim(gated);
        },
        {K::Approve, "bob", key, ApprovalDecision::Confirm, "checked", "RF-1"},
        ErrorCode::IllegalTransition,
        "an operation in awaiting_approval cannot take the decision confirm"};
    all["approve: no such operation"] = {[](LedgerFixture &) {},
                                         {K::Approve, "bob", "run-1:nothing"},
                                         ErrorCode::NotFound,
                                         "no operation 'run-1:nothing' in namespace"};
    all["approve: the requester cannot approve"] = {
        requestedByBob,
        {K::Approve, "bob", key},
        ErrorCode::Refused,
        "bob requested this operation and cannot approve it"};
    all["approve: the last toucher cannot approve"] = {
        lastTouchedByBob,
        {K::Approve, "bob", key},
        ErrorCode::Refused,
        "bob last touched this operation and cannot approve it"};
    all["approve: four-eyes needs a second approver"] = {
        [](LedgerFixture &f) {
            setting(f, FourEyesSetting, "1000.00");
            waitingForConfirmation(f);
            ApproveCommand::Request r;
            r.ns = kNs;
            r.key = "run-1:refund";
            r.reason = "first";
            r.approvalId = "ap-first";
            ApproveCommand(f.store(), person("bob"), r).execute();
        },
        {K::Approve, "bob", key, ApprovalDecision::Redispatch, "again", "", "ap-again"},
        ErrorCode::Refused,
        "four-eyes: bob already approved this proposal; a second, different approver is needed"};
    all["approve: what was seen has moved"] = {
        lastTouchedByBob,
        {K::Approve, "carol", key, ApprovalDecision::Redispatch, "checked", "", "", 1},
        ErrorCode::IllegalTransition,
        "the operation changed since it was seen"};
    all["approve: an approval id names one decision"] = {
        [](LedgerFixture &f) {
            waitingForConfirmation(f);
            needingConfirmation(f, "run-2:refund");
            ApproveCommand::Request r;
            r.ns = kNs;
            r.key = "run-2:refund";
            r.reason = "other";
            r.approvalId = "ap-shared";
            ApproveCommand(f.store(), person("carol"), r).execute();
        },
        {K::Approve, "bob", key, ApprovalDecision::Redispatch, "checked", "", "ap-shared"},
        ErrorCode::Refused,
        "approval id 'ap-shared' was already used for another decision or operation"};
    all["reconcile: a reason is required"] = {
        [](LedgerFixture &f) { needingConfirmation(f, "run-1:refund"); },
        [&] {
            Action a{K::Reconcile, "oliver", key};
            a.reason.clear();
            return a;
        }(),
        ErrorCode::Refused, "a reason is required"};
    all["reconcile: only what needs it"] = {
        [](LedgerFixture &f) {
            const ClaimInput in = refundClaim("run-1:refund");
            f.engine().complete(kNs, in.key, f.engine().claim(in).operation.fencingToken, "{}",
                                R"({"reference":"RF-1"})");
        },
        {K::Reconcile, "oliver", key},
        ErrorCode::IllegalTransition,
        "an operation in succeeded has nothing to reconcile"};
    all["setting: an unknown name"] = {[](LedgerFixture &) {},
                                       [] {
                                           Action a{K::Setting, "ada"};
                                           a.settingName = "four_eyes";
                                           a.settingValue = "10";
                                           return a;
                                       }(),
                                       ErrorCode::InvalidArgument,
                                       "unknown guard setting 'four_eyes'"};
    all["setting: a reason is required"] = {[](LedgerFixture &) {},
                                            [] {
                                                Action a{K::Setting, "ada"};
                                                a.reason.clear();
                                                a.settingName = FourEyesSetting;
                                                a.settingValue = "1000.00";
                                                return a;
                                            }(),
                                            ErrorCode::Refused, "a reason is required"};
    all["setting: the four-eyes threshold is an amount"] = {
        [](LedgerFixture &) {},
        [] {
            Action a{K::Setting, "ada"};
            a.settingName = FourEyesSetting;
            a.settingValue = "a lot";
            return a;
        }(),
        ErrorCode::InvalidArgument,
        "the four-eyes threshold must be an amount in major units such as 1000.00 (digits, an "
        "optional '.' and up to 2 decimals), not 'a lot'"};
    const auto settingTo = [](std::string name, std::string value) {
        Action a{K::Setting, "ada"};
        a.settingName = std::move(name);
        a.settingValue = std::move(value);
        return a;
    };
    all["setting: the four-eyes threshold has no sign"] = {
        [](LedgerFixture &) {}, settingTo(FourEyesSetting, "-5"), ErrorCode::InvalidArgument,
        "the four-eyes threshold takes no sign: it is an amount of 0 or more such as 1000.00, "
        "not '-5'"};
    all["setting: the four-eyes threshold has two decimals"] = {
        [](LedgerFixture &) {}, settingTo(FourEyesSetting, "10.001"), ErrorCode::InvalidArgument,
        "the four-eyes threshold takes at most 2 decimals, not '10.001'"};
    all["setting: a ',' groups thousands only"] = {
        [](LedgerFixture &) {}, settingTo(FourEyesSetting, "1,5"), ErrorCode::InvalidArgument,
        "the four-eyes threshold writes ',' only between groups of three digits before the '.', "
        "such as 1,000.00, not '1,5'"};
    all["setting: no ',' among the decimals"] = {
        [](LedgerFixture &) {}, settingTo(FourEyesSetting, "1.2,"), ErrorCode::InvalidArgument,
        "the four-eyes threshold writes ',' only between groups of three digits before the '.', "
        "such as 1,000.00, not '1.2,'"};
    all["setting: the run spend cap is an amount"] = {
        [](LedgerFixture &) {}, settingTo("run_spend_cap", "lots"), ErrorCode::InvalidArgument,
        "the run spend cap must be an amount such as 100.00 EUR, not 'lots'"};
    all["setting: a run limit is a positive count"] = {
        [](LedgerFixture &) {}, settingTo("run_token_cap", "0"), ErrorCode::InvalidArgument,
        "run_token_cap must be a positive whole number (or empty for no limit), not '0'"};
    const auto resume = [](std::int64_t addTokens) {
        Action a{K::ResumeRun, "oliver", "run-7"};
        a.addTokens = addTokens;
        return a;
    };
    all["run: only a halted run is resumed"] = {
        [](LedgerFixture &f) {
            ClaimInput in = refundClaim("run-7:refund");
            in.runId = "run-7";
            f.engine().claim(in);
        },
        resume(0), ErrorCode::IllegalTransition,
        "run 'run-7' is active, not halted: only a halted run is resumed"};
    all["run: tokens add to a token cap"] = {
        [](LedgerFixture &f) {
            for (int i = 0; i < 3; ++i) {
                ClaimInput in = refundClaim("run-7:refund-" + std::to_string(i));
                in.runId = "run-7";
                in.maxAttempts = 1;
                f.engine().fail(kNs, in.key, f.engine().claim(in).operation.fencingToken,
                                ErrorClass::Transient, "503");
            }
        },
        resume(100), ErrorCode::Refused, "run 'run-7' has no token cap to add to"};
    all["run: no such run"] = {[](LedgerFixture &) {}, resume(0), ErrorCode::NotFound,
                               "no run 'run-7' in namespace"};
    return all;
}

} // namespace

class TestRuleParity final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        qInfo("the rules of: %s", onPostgres() ? "the SQL functions" : "the C++ commands");
        if (!onPostgres())
            return;
        LedgerFixture f; // creates the idempo_* groups
        PgConnection admin(qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString());
        for (const ActorIdentity &p : kPeople)
            admin.execScript("login", "DROP ROLE IF EXISTS " + p.name + "; CREATE ROLE " + p.name +
                                          " LOGIN PASSWORD '" + p.name +
                                          "-secret' IN ROLE idempo_" + p.role);
    }

    void refusal_data()
    {
        QTest::addColumn<QString>("rule");
        for (const auto &[rule, c] : cases())
            QTest::newRow(rule.c_str()) << QString::fromStdString(rule);
    }

    void refusal()
    {
        QFETCH(QString, rule);
        const RuleCase c = cases().at(rule.toStdString());
        LedgerFixture f;
        c.setup(f);
        const QByteArray before = f.snapshot();
        try {
            if (onPostgres())
                callFunction(f, c.action);
            else
                runCommand(f, c.action);
            QFAIL("nothing refused it");
        } catch (const Error &e) {
            QVERIFY2(std::string(e.what()).find(c.sentence) != std::string::npos, e.what());
            QCOMPARE(errorCodeName(e.code()), errorCodeName(c.code));
        }
        QCOMPARE(f.snapshot(), before);
    }
};

QTEST_GUILESS_MAIN(TestRuleParity)
#include "tst_ruleparity.moc"
