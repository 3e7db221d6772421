// SPDX-License-Identifier: Apache-2.0
// How the outcome of a crashed protected write is settled by people and their tools, on the
// store the suite runs against (SQLite, or PostgreSQL under tests/pg/with-postgres.sh):
// - `reconcile` asks the sandbox journal only about operations it covers (a step of a sandbox
//   run whose provider can be asked by key); for any other operation the answer is "no lookup
//   for this operation" and an unknown outcome goes to a person, never back to received;
// - the invariant checker accepts the receipts those resolutions write (reconcile's and an
//   approver's confirm) when their reference names the effect, and names them when it does not.
#include <map>

#include <QCryptographicHash>
#include <QUrl>
#include <QtTest>

#include "approvecommand.h"
#include "invariantchecker.h"
#include "journallookup.h"
#include "ledgerfixture.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "reconcilecommand.h"
#include "sandboxjournal.h"
#include "scenario.h"

using namespace idempo;
using namespace idempo::sandbox;
using idempo::test::LedgerFixture;

namespace {

const ActorIdentity kOliver{"oliver", "operator"};
const ActorIdentity kBob{"bob", "approver"};

/// A namespace of its own per test and data row: PostgreSQL ledgers keep the sandbox tables
/// between tests.
std::string freshNamespace()
{
    const QByteArray name =
        QByteArray(QTest::currentTestFunction()) + '/' + QTest::currentDataTag();
    return "res-" + QByteArray(QTest::currentTestFunction()).left(40).toStdString() + "-" +
           QCryptographicHash::hash(name, QCryptographicHash::Sha256).toHex().left(8).toStdString();
}

/// Claims `runId:stepId` in `ns` as worker w0 would.
ClaimResult claimStep(LedgerFixture &f, const std::string &ns, const std::string &runId,
                      const std::string &stepId, ToolKind kind)
{
    ClaimInput in;
    in.ns = ns;
    in.key = runId + ":" + stepId;
    in.payloadJson = R"({"step":")" + stepId + R"("})";
    in.kind = kind;
    in.owner = "w0";
    in.runId = runId;
    in.stepId = stepId;
    return f.engine().claim(in);
}

/// The provider performs the effect for `key` (as the journal of a real provider would).
std::string performEffect(LedgerFixture &f, SandboxJournal &journal, const std::string &ns,
                          const std::string &provider, const std::string &key, std::int64_t token,
                          std::int64_t confirmDelayMs = 0)
{
    Effect e;
    e.ns = ns;
    e.provider = provider;
    e.operationKey = key;
    e.receivedKey = key;
    e.fencingToken = token;
    e.atMs = f.store().nowMs();
    e.confirmedAtMs = e.atMs + confirmDelayMs;
    return journal.perform(e, false).effect.effectId;
}

/// A run of `scenario` whose read step succeeded and whose write was claimed by a worker that
/// then crashed after the provider performed the effect (when `effect`), before any record.
/// Returns the write's key; its lease has lapsed when this returns.
std::string crashedAfterEffect(LedgerFixture &f, SandboxJournal &journal, const std::string &ns,
                               const std::string &scenario, const std::string &runId, bool effect,
                               std::string *effectId)
{
    journal.addRuns({{ns, runId, scenario, false}});
    const Scenario &s = *Scenario::find(scenario);
    const WorkflowStep &read = s.steps().front();
    const WorkflowStep &write = s.steps().back();
    const ClaimResult r = claimStep(f, ns, runId, read.stepId, ToolKind::Read);
    f.engine().complete(ns, r.operation.key, r.operation.fencingToken, R"({"read":true})", {});
    const ClaimResult w = claimStep(f, ns, runId, write.stepId, ToolKind::ProtectedWrite);
    if (effect) {
        const std::string id = performEffect(f, journal, ns, write.provider, w.operation.key,
                                             w.operation.fencingToken);
        if (effectId)
            *effectId = id;
    }
    f.advanceMs(f.engine().settings().leaseMs + 1);
    return w.operation.key;
}

nlohmann::json reconcile(LedgerFixture &f, ProviderLookup &lookup, const std::string &ns,
                         const std::string &key)
{
    ReconcileCommand::Request request;
    request.ns = ns;
    request.key = key;
    request.reason = "after the outage";
    ReconcileCommand command(f.store(), lookup, kOliver, request);
    const std::vector<std::string> problems = command.validate();
    if (!problems.empty())
        qWarning("reconcile refused: %s", problems.front().c_str());
    return command.execute().toJson();
}

nlohmann::json confirm(LedgerFixture &f, const std::string &ns, const std::string &key,
                       const std::string &reference)
{
    ApproveCommand::Request request;
    request.ns = ns;
    request.key = key;
    request.decision = ApprovalDecision::Confirm;
    request.reason = "seen in the provider's portal";
    request.externalReference = reference;
    ApproveCommand command(f.store(), kBob, request);
    const std::vector<std::string> problems = command.validate();
    if (!problems.empty())
        qWarning("confirm refused: %s", problems.front().c_str());
    return command.execute().toJson();
}

/// Violations per invariant name.
std::map<std::string, std::size_t> violations(LedgerFixture &f, SandboxJournal &journal,
                                              const std::string &ns)
{
    std::map<std::string, std::size_t> found;
    for (const InvariantResult &r : InvariantChecker(f.store(), journal).check(ns))
        found[r.name] = r.violations.size();
    return found;
}

std::size_t allViolations(const std::map<std::string, std::size_t> &v)
{
    std::size_t n = 0;
    for (const auto &[name, count] : v)
        n += count;
    return n;
}

/// A lookup that finds whatever reference the test wants, for any operation.
class FoundLookup final : public ProviderLookup
{
public:
    explicit FoundLookup(std::string reference) : m_reference(std::move(reference)) {}
    ProviderEvidence lookup(const Operation &) override
    {
        ProviderEvidence e;
        e.status = ProviderEvidence::Status::Found;
        e.provider = "travel-booking";
        e.reference = m_reference;
        return e;
    }

private:
    std::string m_reference;
};

} // namespace

class TestSandboxResolution final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    /// An unknown outcome whose provider the journal does not cover goes to a person, with the
    /// evidence "no lookup for this operation"; the next claim does not dispatch it.
    void withoutALookupForItAnUnknownOutcomeGoesToAPerson_data()
    {
        QTest::addColumn<QString>("scenario"); // the sandbox run's; empty: none
        QTest::addColumn<bool>("naive");
        QTest::addColumn<QString>("runId");
        QTest::addColumn<QString>("stepId");
        QTest::addColumn<QString>(
            "provider"); // the provider whose journal holds an effect; empty: none
        QTest::newRow("not a sandbox run") << QString() << false << QStringLiteral("run-9")
                                           << QStringLiteral("refund") << QString();
        QTest::newRow("not a sandbox run, same key in a journal")
            << QString() << false << QStringLiteral("travel-1-000001")
            << QStringLiteral("book_slot") << QStringLiteral("travel-booking");
        QTest::newRow("naive run")
            << QStringLiteral("travel-booking") << true << QStringLiteral("travel-1-000002")
            << QStringLiteral("book_slot") << QString();
        QTest::newRow("provider without lookup")
            << QStringLiteral("invoice-email") << false << QStringLiteral("invoice-1-000003")
            << QStringLiteral("send_email") << QStringLiteral("mailer");
        QTest::newRow("not a step of the scenario")
            << QStringLiteral("travel-booking") << false << QStringLiteral("travel-1-000004")
            << QStringLiteral("cancel_slot") << QString();
    }
    void withoutALookupForItAnUnknownOutcomeGoesToAPerson()
    {
        QFETCH(QString, scenario);
        QFETCH(bool, naive);
        QFETCH(QString, runId);
        QFETCH(QString, stepId);
        QFETCH(QString, provider);
        LedgerFixture f;
        const std::string ns = freshNamespace();
        const auto journal = SandboxJournal::open(f.store());
        journal->createTables();
        if (!scenario.isEmpty())
            journal->addRuns({{ns, runId.toStdString(), scenario.toStdString(), naive}});
        const ClaimResult claimed =
            claimStep(f, ns, runId.toStdString(), stepId.toStdString(), ToolKind::ProtectedWrite);
        const std::string key = claimed.operation.key;
        if (!provider.isEmpty())
            performEffect(f, *journal, ns, provider.toStdString(), key,
                          claimed.operation.fencingToken);
        f.engine().fail(ns, key, claimed.operation.fencingToken, ErrorClass::UnknownOutcome,
                        "timeout");

        const auto lookup = openProviderLookup(f.store());
        const nlohmann::json done = reconcile(f, *lookup, ns, key);
        QCOMPARE(done.at("reconciled").size(), std::size_t(1));
        const nlohmann::json &row = done.at("reconciled").at(0);
        QCOMPARE(row.at("evidence").at("status").get<std::string>(), std::string("unsupported"));
        QVERIFY2(row.at("evidence").at("answer").dump().find("no lookup for this operation") !=
                     std::string::npos,
                 row.dump().c_str());
        QCOMPARE(row.at("to").get<std::string>(), std::string("confirmation_required"));
        QCOMPARE(f.store().find(ns, key)->state, OperationState::ConfirmationRequired);
        // Nothing dispatches it again: the next delivery is told a person is deciding.
        QCOMPARE(
            claimStep(f, ns, runId.toStdString(), stepId.toStdString(), ToolKind::ProtectedWrite)
                .outcome,
            ClaimOutcome::InProgress);
    }

    /// Where the journal covers the operation, its word moves it: no effect → received, an
    /// effect → succeeded, an effect not confirmed yet → a person.
    void aCoveredOperationMovesByTheJournalsWord_data()
    {
        QTest::addColumn<int>("effect"); // 0 none, 1 confirmed, 2 confirmation not due yet
        QTest::addColumn<QString>("status");
        QTest::addColumn<QString>("to");
        QTest::newRow("no effect")
            << 0 << QStringLiteral("not_found") << QStringLiteral("received");
        QTest::newRow("effect") << 1 << QStringLiteral("found") << QStringLiteral("succeeded");
        QTest::newRow("late confirmation")
            << 2 << QStringLiteral("pending") << QStringLiteral("confirmation_required");
    }
    void aCoveredOperationMovesByTheJournalsWord()
    {
        QFETCH(int, effect);
        QFETCH(QString, status);
        QFETCH(QString, to);
        LedgerFixture f;
        const std::string ns = freshNamespace();
        const auto journal = SandboxJournal::open(f.store());
        journal->createTables();
        journal->addRuns({{ns, "travel-1-000005", "travel-booking", false}});
        const ClaimResult claimed =
            claimStep(f, ns, "travel-1-000005", "book_slot", ToolKind::ProtectedWrite);
        const std::string key = claimed.operation.key;
        std::string effectId;
        if (effect > 0)
            effectId = performEffect(f, *journal, ns, "travel-booking", key,
                                     claimed.operation.fencingToken, effect == 2 ? 60'000 : 0);
        f.engine().fail(ns, key, claimed.operation.fencingToken, ErrorClass::UnknownOutcome,
                        "timeout");

        const auto lookup = openProviderLookup(f.store());
        const nlohmann::json row = reconcile(f, *lookup, ns, key).at("reconciled").at(0);
        QCOMPARE(QString::fromStdString(row.at("evidence").at("status").get<std::string>()),
                 status);
        QCOMPARE(QString::fromStdString(row.at("evidence").at("provider").get<std::string>()),
                 QStringLiteral("travel-booking"));
        QCOMPARE(QString::fromStdString(std::string(stateName(f.store().find(ns, key)->state))),
                 to);
        if (effect == 1)
            QCOMPARE(row.at("evidence").at("reference").get<std::string>(), effectId);
    }

    /// On PostgreSQL the lookup reads the sandbox's journal as the reconciling login: every role
    /// that may reconcile does, on a ledger where the sandbox ran (its tables made by the owner).
    void everyRoleThatMayReconcileReadsTheJournal_data()
    {
        QTest::addColumn<QString>("role");
        QTest::newRow("operator") << QStringLiteral("operator");
        QTest::newRow("admin") << QStringLiteral("admin");
    }
    void everyRoleThatMayReconcileReadsTheJournal()
    {
        QFETCH(QString, role);
        const QString admin = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
        if (admin.isEmpty())
            QSKIP("the embedded ledger has one identity; its logins are PostgreSQL's");
        LedgerFixture f;
        const std::string ns = freshNamespace();
        const auto journal = SandboxJournal::open(f.store());
        journal->createTables();
        journal->addRuns({{ns, "travel-1-000009", "travel-booking", false}});
        const ClaimResult claimed =
            claimStep(f, ns, "travel-1-000009", "book_slot", ToolKind::ProtectedWrite);
        const std::string key = claimed.operation.key;
        const std::string effectId =
            performEffect(f, *journal, ns, "travel-booking", key, claimed.operation.fencingToken);
        f.engine().fail(ns, key, claimed.operation.fencingToken, ErrorClass::UnknownOutcome,
                        "timeout");

        const std::string login = "res_" + role.toStdString();
        // The journal's tables are where the owner's search path put them (here the schema
        // named after the test cluster's owner); the login looks there too.
        PgConnection owner(admin.toStdString());
        const std::string schema =
            owner
                .exec("journal schema", "SELECT relnamespace::regnamespace::text FROM pg_class "
                                        "WHERE oid = to_regclass('sandbox_runs')")
                .text(0, 0);
        owner.execScript("login", "DROP ROLE IF EXISTS " + login + "; CREATE ROLE " + login +
                                      " LOGIN PASSWORD 'res-secret' IN ROLE idempo_" +
                                      role.toStdString() + "; ALTER ROLE " + login +
                                      " SET search_path = " + schema + ", public");
        QUrl url(admin);
        url.setUserName(QString::fromStdString(login));
        url.setPassword(QStringLiteral("res-secret"));
        PostgresLedgerStore store(url.toString().toStdString());
        const auto lookup = openProviderLookup(store);
        ReconcileCommand::Request r;
        r.ns = ns;
        r.key = key;
        r.reason = "asked the provider";
        const ReconcileOutcome done = ReconcileCommand(store, *lookup, store.actor(), r).execute();
        QCOMPARE(done.reconciled.size(), std::size_t(1));
        QVERIFY2(done.reconciled.front().evidence.status == ProviderEvidence::Status::Found,
                 done.toJson().dump().c_str());
        QCOMPARE(store.find(ns, key)->state, OperationState::Succeeded);
        QCOMPARE(done.reconciled.front().evidence.reference, effectId);
    }

    /// A crash after the effect, settled by `reconcile`: its receipt
    /// {external_reference, provider, reconciled_by} names the effect, and every invariant holds.
    void reconcilesReceiptMatchesTheEffect()
    {
        LedgerFixture f;
        const std::string ns = freshNamespace();
        const auto journal = SandboxJournal::open(f.store());
        journal->createTables();
        std::string effectId;
        const std::string key = crashedAfterEffect(f, *journal, ns, "travel-booking",
                                                   "travel-1-000006", true, &effectId);
        const auto lookup = openProviderLookup(f.store());
        QCOMPARE(reconcile(f, *lookup, ns, key).at("reconciled").at(0).at("to").get<std::string>(),
                 std::string("succeeded"));
        const nlohmann::json receipt = nlohmann::json::parse(f.store().find(ns, key)->receipt);
        QCOMPARE(receipt.at("external_reference").get<std::string>(), effectId);
        QVERIFY(receipt.contains("reconciled_by"));
        QVERIFY(!receipt.contains("effect_id"));
        const auto v = violations(f, *journal, ns);
        QVERIFY2(allViolations(v) == 0,
                 InvariantChecker::toText(InvariantChecker(f.store(), *journal).check(ns)).c_str());
    }

    /// The same receipt shape naming an effect the provider never performed is named by both
    /// receipt_matches_effect and effect_recorded.
    void reconcilesReceiptNamingAnotherEffectIsAViolation()
    {
        LedgerFixture f;
        const std::string ns = freshNamespace();
        const auto journal = SandboxJournal::open(f.store());
        journal->createTables();
        const std::string key =
            crashedAfterEffect(f, *journal, ns, "travel-booking", "travel-1-000007", true, nullptr);
        FoundLookup wrong("travel-booking/travel-1-000099:book_slot/1");
        QCOMPARE(reconcile(f, wrong, ns, key).at("reconciled").at(0).at("to").get<std::string>(),
                 std::string("succeeded"));
        const auto v = violations(f, *journal, ns);
        QCOMPARE(v.at("receipt_matches_effect"), std::size_t(1));
        QCOMPARE(v.at("effect_recorded"), std::size_t(1));
        QCOMPARE(allViolations(v), std::size_t(2));
    }

    /// A crash after the effect at a provider without lookup: reconcile hands it to a person,
    /// who confirms it with the provider's reference. The receipt
    /// {approval_id, confirmed_by, external_reference} names the effect: every invariant holds.
    /// A confirm whose reference matches no effect is a violation of both receipt invariants.
    void approversConfirmIsJudgedByItsReference_data()
    {
        QTest::addColumn<bool>("matching");
        QTest::newRow("reference of the effect") << true;
        QTest::newRow("reference of no effect") << false;
    }
    void approversConfirmIsJudgedByItsReference()
    {
        QFETCH(bool, matching);
        LedgerFixture f;
        const std::string ns = freshNamespace();
        const auto journal = SandboxJournal::open(f.store());
        journal->createTables();
        std::string effectId;
        const std::string key = crashedAfterEffect(f, *journal, ns, "invoice-email",
                                                   "invoice-1-000008", true, &effectId);
        const auto lookup = openProviderLookup(f.store());
        QCOMPARE(reconcile(f, *lookup, ns, key).at("reconciled").at(0).at("to").get<std::string>(),
                 std::string("confirmation_required"));
        QCOMPARE(violations(f, *journal, ns).at("effect_recorded"),
                 std::size_t(0)); // waiting for a person is fine

        const std::string reference =
            matching ? effectId : std::string("mailer/invoice-1-000008:send_email/7");
        QCOMPARE(confirm(f, ns, key, reference).at("status").get<std::string>(),
                 std::string("applied"));
        const nlohmann::json receipt = nlohmann::json::parse(f.store().find(ns, key)->receipt);
        QCOMPARE(receipt.at("external_reference").get<std::string>(), reference);
        QVERIFY(receipt.contains("approval_id"));
        const auto v = violations(f, *journal, ns);
        QCOMPARE(v.at("receipt_matches_effect"), std::size_t(matching ? 0 : 1));
        QCOMPARE(v.at("effect_recorded"), std::size_t(matching ? 0 : 1));
        QCOMPARE(allViolations(v), std::size_t(matching ? 0 : 2));
    }

    /// A confirm without any effect behind it (the provider never performed it) is a violation
    /// too: the receipt names an effect no provider performed.
    void confirmingAnEffectThatNeverHappenedIsAViolation()
    {
        LedgerFixture f;
        const std::string ns = freshNamespace();
        const auto journal = SandboxJournal::open(f.store());
        journal->createTables();
        const std::string key = crashedAfterEffect(f, *journal, ns, "invoice-email",
                                                   "invoice-1-000009", false, nullptr);
        const auto lookup = openProviderLookup(f.store());
        reconcile(f, *lookup, ns, key);
        QCOMPARE(confirm(f, ns, key, "mailer/invoice-1-000009:send_email/1")
                     .at("status")
                     .get<std::string>(),
                 std::string("applied"));
        const auto v = violations(f, *journal, ns);
        QCOMPARE(v.at("receipt_matches_effect"), std::size_t(1));
        QCOMPARE(allViolations(v), std::size_t(1));
    }
};

QTEST_GUILESS_MAIN(TestSandboxResolution)
#include "tst_sandboxresolution.moc"
