// SPDX-License-Identifier: Apache-2.0
// Guarded actions (approve / reject, reconcile, DLQ replay, the audit chain) through their
// command objects, on every store: SQLite by default, PostgreSQL under tests/pg/with-postgres.sh.
#include <barrier>
#include <map>
#include <mutex>
#include <thread>

#include <QSqlError>
#include <QtTest>

#include "approvecommand.h"
#include "auditchain.h"
#include "auditverify.h"
#include "dlqreplaycommand.h"
#include "error.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"
#include "pgconnection.h"
#include "queueenvelope.h"
#include "reconcilecommand.h"
#include "sqliteledgerstore.h"
#include "sqlitesupport.h"

using namespace idempo;
using idempo::test::LedgerFixture;

namespace {

const std::string kNs = "default";
const ActorIdentity kOwner{"root-admin", "owner"};
const ActorIdentity kBob{"bob", "approver"};
const ActorIdentity kCarol{"carol", "approver"};
const ActorIdentity kDave{"dave", "approver"};
const ActorIdentity kOliver{"oliver", "operator"};

ErrorCode errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.code();
    }
    return ErrorCode::Internal;
}

ClaimInput refundClaim(const std::string &key, const std::string &owner = "worker-a",
                       const std::string &payload = R"({"amount":1250.00,"currency":"EUR"})")
{
    ClaimInput in;
    in.ns = kNs;
    in.key = key;
    in.payloadJson = payload;
    in.owner = owner;
    in.stepId = "refund";
    in.target = "account DE44-5001";
    return in;
}

/// An operation in confirmation_required (one attempt, failed transiently).
Operation needingConfirmation(LedgerFixture &f, const std::string &key,
                              const std::string &owner = "worker-a")
{
    ClaimInput in = refundClaim(key, owner);
    in.maxAttempts = 1;
    const ClaimResult r = f.engine().claim(in);
    return f.engine().fail(kNs, key, r.operation.fencingToken, ErrorClass::Transient,
                           "503 from provider");
}

Operation inUnknownOutcome(LedgerFixture &f, const std::string &key)
{
    const ClaimResult r = f.engine().claim(refundClaim(key));
    return f.engine().fail(kNs, key, r.operation.fencingToken, ErrorClass::UnknownOutcome,
                           "timeout");
}

ApproveCommand::Request approval(const std::string &key, ApprovalDecision decision,
                                 const std::string &id = {}, const std::string &reference = {})
{
    ApproveCommand::Request r;
    r.ns = kNs;
    r.key = key;
    r.decision = decision;
    r.reason = "checked with the customer";
    r.approvalId = id;
    r.externalReference = reference;
    return r;
}

nlohmann::json approve(LedgerStore &store, const ActorIdentity &actor,
                       const ApproveCommand::Request &request)
{
    ApproveCommand command(store, actor, request);
    return command.execute().toJson();
}

void setFourEyes(LedgerStore &store, const std::string &above)
{
    GuardSettingCommand command(store, kOwner, FourEyesSetting, above,
                                "policy: two approvers for large refunds");
    QVERIFY(command.validate().empty());
    command.execute();
}

/// A provider answer chosen by the test, per key.
class ScriptedLookup final : public ProviderLookup
{
public:
    std::map<std::string, ProviderEvidence> answers;
    int calls = 0;
    ProviderEvidence lookup(const Operation &op) override
    {
        ++calls;
        const auto it = answers.find(op.key);
        if (it != answers.end())
            return it->second;
        ProviderEvidence none;
        none.status = ProviderEvidence::Status::NotFound;
        none.provider = "bank";
        return none;
    }
};

ProviderEvidence found(const std::string &reference)
{
    ProviderEvidence e;
    e.status = ProviderEvidence::Status::Found;
    e.provider = "bank";
    e.reference = reference;
    e.raw = {{"refund_id", reference}};
    return e;
}

/// Runs `statements` on the ledger's own connection, past the append-only guard (the owner
/// disabling its trigger on PostgreSQL, dropping it on SQLite): what an attacker with file or
/// owner access could do.
void tamper(LedgerFixture &f, const std::string &statement)
{
    if (auto *sqlite = dynamic_cast<SqliteLedgerStore *>(&f.store())) {
        QSqlQuery q(sqlite->connection().db);
        QVERIFY(q.exec(QStringLiteral("DROP TRIGGER IF EXISTS audit_log_no_update")));
        QVERIFY(q.exec(QStringLiteral("DROP TRIGGER IF EXISTS audit_log_no_delete")));
        QVERIFY2(q.exec(QString::fromStdString(statement)), qPrintable(q.lastError().text()));
        return;
    }
    PgConnection admin(qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString());
    admin.execScript("tamper", "ALTER TABLE audit_log DISABLE TRIGGER USER; " + statement +
                                   "; ALTER TABLE audit_log ENABLE TRIGGER USER");
}

std::string envelope(const std::string &key, std::int64_t producedAtMs)
{
    QueueEnvelope e;
    e.runId = key.substr(0, key.find(':'));
    e.stepId = "refund";
    e.sourceAgent = "planner";
    e.targetAgent = "payments";
    e.payload = {{"amount", 10}, {"currency", "EUR"}, {"key", key}};
    e.producedAtMs = producedAtMs;
    e.idempotencyKey = key;
    return e.toJson().dump();
}

} // namespace

class TestGuardedActions final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void doubleSubmittedApprovalAppliesOnce()
    {
        LedgerFixture f;
        const Operation before = needingConfirmation(f, "run-1:refund");
        const auto request = approval(before.key, ApprovalDecision::Redispatch, "ap-double-click");
        const nlohmann::json first = approve(f.store(), kBob, request);
        QCOMPARE(first.at("status").get<std::string>(), std::string("applied"));
        const QByteArray afterFirst = f.snapshot();

        ApproveCommand resubmitted(f.store(), kBob, request);
        QVERIFY(resubmitted.validate()
                    .empty()); // bob touched it last, but this is his first decision again
        const nlohmann::json second = resubmitted.execute().toJson();
        QCOMPARE(second.at("status").get<std::string>(), std::string("replayed"));
        QCOMPARE(second.at("decision").get<std::string>(), std::string("redispatch"));
        QCOMPARE(f.snapshot(), afterFirst);

        const Operation after = *f.store().find(kNs, before.key);
        QCOMPARE(after.state, OperationState::Received);
        QCOMPARE(after.maxAttempts, before.attempt + 3);
        QCOMPARE(f.store().approvals(kNs, before.key).size(), std::size_t(1));
        const auto audit = f.store().auditLog(0, 100);
        QCOMPARE(audit.size(), std::size_t(1));
        QCOMPARE(audit[0].entry.who, std::string("bob"));
        QCOMPARE(audit[0].entry.action, std::string("approve"));
        QCOMPARE(audit[0].entry.approvalId, std::string("ap-double-click"));
        QVERIFY(audit[0].entry.beforeState.find("confirmation_required") != std::string::npos);
        QVERIFY(audit[0].entry.afterState.find("received") != std::string::npos);
        // The same id for another decision is refused, not applied.
        QCOMPARE(errorOf([&] {
                     approve(f.store(), kBob,
                             approval(before.key, ApprovalDecision::Reject, "ap-double-click"));
                 }),
                 ErrorCode::Refused);
        QCOMPARE(f.snapshot(), afterFirst);
    }

    void concurrentApprovalsFromTwoConnectionsApplyOnce()
    {
        LedgerFixture f;
        for (const bool sameId : {true, false}) {
            const std::string key = sameId ? "run-2:same-id" : "run-2:other-id";
            needingConfirmation(f, key);
            const auto eventsBefore = f.store().history(kNs, key).size();
            std::shared_ptr<LedgerStore> stores[] = {f.openAnother(), f.openAnother()};
            std::barrier start(2);
            std::mutex mutex;
            std::vector<std::string> outcomes;
            std::vector<std::thread> threads;
            for (int i = 0; i < 2; ++i) {
                threads.emplace_back([&, i] {
                    const auto request =
                        approval(key, ApprovalDecision::Redispatch,
                                 sameId ? "ap-shared" : "ap-console-" + std::to_string(i));
                    start.arrive_and_wait();
                    std::string outcome;
                    try {
                        outcome = approve(*stores[i], i == 0 ? kBob : kCarol, request)
                                      .at("status")
                                      .get<std::string>();
                    } catch (const Error &e) {
                        outcome = errorCodeName(e.code());
                    }
                    std::lock_guard lock(mutex);
                    outcomes.push_back(outcome);
                });
            }
            for (auto &t : threads)
                t.join();
            std::sort(outcomes.begin(), outcomes.end());
            const std::vector<std::string> expected =
                sameId ? std::vector<std::string>{"applied", "replayed"}
                       : std::vector<std::string>{"applied", "illegal_transition"};
            QCOMPARE(outcomes, expected);
            QCOMPARE(f.store().history(kNs, key).size(), eventsBefore + 1);
            QCOMPARE(f.store().approvals(kNs, key).size(), std::size_t(1));
            QCOMPARE(f.store().find(kNs, key)->state, OperationState::Received);
        }
        QCOMPARE(f.store().auditLog(0, 100).size(), std::size_t(2));
        QVERIFY(AuditVerify(f.store()).run().ok);
    }

    void decisionsDependOnTheState()
    {
        LedgerFixture f;
        ClaimInput gated = refundClaim("run-3:gated");
        gated.requiresApproval = true;
        f.engine().claim(gated);
        ApproveCommand confirmGated(f.store(), kBob,
                                    approval("run-3:gated", ApprovalDecision::Confirm, {}, "RF-1"));
        QCOMPARE(confirmGated.validate().size(), std::size_t(1));
        QCOMPARE(errorOf([&] { confirmGated.execute(); }), ErrorCode::IllegalTransition);
        QCOMPARE(approve(f.store(), kBob, approval("run-3:gated", ApprovalDecision::Redispatch))
                     .at("status")
                     .get<std::string>(),
                 std::string("applied"));
        QCOMPARE(f.store().find(kNs, "run-3:gated")->state, OperationState::Received);

        needingConfirmation(f, "run-3:confirm");
        ApproveCommand noReference(f.store(), kBob,
                                   approval("run-3:confirm", ApprovalDecision::Confirm));
        QVERIFY(!noReference.validate().empty());
        QCOMPARE(errorOf([&] { noReference.execute(); }), ErrorCode::Refused);
        approve(f.store(), kBob, approval("run-3:confirm", ApprovalDecision::Confirm, {}, "RF-77"));
        const Operation confirmed = *f.store().find(kNs, "run-3:confirm");
        QCOMPARE(confirmed.state, OperationState::Succeeded);
        QVERIFY(confirmed.receipt.find("RF-77") != std::string::npos);

        needingConfirmation(f, "run-3:reject");
        ApproveCommand noReason(f.store(), kBob, [] {
            auto r = approval("run-3:reject", ApprovalDecision::Reject);
            r.reason.clear();
            return r;
        }());
        QCOMPARE(errorOf([&] { noReason.execute(); }), ErrorCode::Refused);
        approve(f.store(), kBob, approval("run-3:reject", ApprovalDecision::Reject));
        const Operation rejected = *f.store().find(kNs, "run-3:reject");
        QCOMPARE(rejected.state, OperationState::FailedTerminal);
        QCOMPARE(rejected.errorClass, std::optional(ErrorClass::PolicyDenied));
        // A final operation takes no decision.
        QCOMPARE(errorOf([&] {
                     approve(f.store(), kCarol,
                             approval("run-3:reject", ApprovalDecision::Redispatch));
                 }),
                 ErrorCode::IllegalTransition);
        QCOMPARE(f.store().auditLog(0, 100).size(), std::size_t(3));
    }

    void requesterAndLastToucherCannotApprove()
    {
        LedgerFixture f;
        needingConfirmation(f, "run-4:refund", "bob");
        const QByteArray before = f.snapshot();
        ApproveCommand own(f.store(), kBob, approval("run-4:refund", ApprovalDecision::Redispatch));
        QVERIFY(!own.validate().empty());
        QCOMPARE(errorOf([&] { own.execute(); }), ErrorCode::Refused);
        QCOMPARE(f.snapshot(), before);
        QCOMPARE(approve(f.store(), kCarol, approval("run-4:refund", ApprovalDecision::Redispatch))
                     .at("status")
                     .get<std::string>(),
                 std::string("applied"));
    }

    void validateAndExecuteApplyTheSameRules()
    {
        LedgerFixture f;
        needingConfirmation(f, "run-4:same", "bob");
        const QByteArray before = f.snapshot();
        // The requester: execute() refuses with the very sentence validate() gives.
        ApproveCommand own(f.store(), kBob, approval("run-4:same", ApprovalDecision::Redispatch));
        const std::vector<std::string> problems = own.validate();
        QCOMPARE(problems,
                 std::vector<std::string>{"bob requested this operation and cannot approve it"});
        try {
            own.execute();
            QFAIL("the requester's approval was applied");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::Refused);
            QCOMPARE(std::string(e.what()), problems.front());
        }
        // A reference belongs to a confirm only: execute() no longer applies what validate()
        // refuses.
        ApproveCommand withReference(
            f.store(), kCarol, approval("run-4:same", ApprovalDecision::Redispatch, {}, "RF-9"));
        QCOMPARE(
            withReference.validate(),
            std::vector<std::string>{"an external reference belongs to a confirm decision only"});
        QCOMPARE(errorOf([&] { withReference.execute(); }), ErrorCode::Refused);
        QCOMPARE(f.snapshot(), before);
    }

    void fourEyesAboveTheThreshold()
    {
        LedgerFixture f;
        setFourEyes(f.store(), "1000.00");
        needingConfirmation(f, "run-5:refund");
        ApproveCommand first(f.store(), kBob,
                             approval("run-5:refund", ApprovalDecision::Redispatch, "ap-bob"));
        QVERIFY(first.validate().empty());
        const ActionPreview preview = first.describe();
        QVERIFY2(preview.sentence.find("1,250.00 EUR") != std::string::npos,
                 preview.sentence.c_str());
        QVERIFY(preview.details.at("four_eyes").get<bool>());
        QCOMPARE(first.execute().status, std::string("pending"));
        QCOMPARE(f.store().find(kNs, "run-5:refund")->state, OperationState::ConfirmationRequired);

        // The same operator again, under a new approval id: refused.
        const QByteArray pending = f.snapshot();
        QCOMPARE(errorOf([&] {
                     approve(f.store(), kBob,
                             approval("run-5:refund", ApprovalDecision::Redispatch, "ap-bob-2"));
                 }),
                 ErrorCode::Refused);
        QCOMPARE(f.snapshot(), pending);

        const nlohmann::json second = approve(
            f.store(), kCarol, approval("run-5:refund", ApprovalDecision::Redispatch, "ap-carol"));
        QCOMPARE(second.at("status").get<std::string>(), std::string("applied"));
        QCOMPARE(second.at("revision").get<int>(), 1);
        QCOMPARE(f.store().find(kNs, "run-5:refund")->state, OperationState::Received);
        const auto rows = f.store().approvals(kNs, "run-5:refund");
        QCOMPARE(rows.size(), std::size_t(2));
        QCOMPARE(rows[0].status, std::string("seconded"));
        QCOMPARE(rows[1].status, std::string("applied"));

        // Below the threshold one approver is enough.
        ClaimInput small =
            refundClaim("run-5:small", "worker-a", R"({"amount":"999.99","currency":"EUR"})");
        small.maxAttempts = 1;
        f.engine().fail(kNs, small.key, f.engine().claim(small).operation.fencingToken,
                        ErrorClass::Transient, "503");
        QCOMPARE(approve(f.store(), kBob, approval("run-5:small", ApprovalDecision::Redispatch))
                     .at("status")
                     .get<std::string>(),
                 std::string("applied"));
    }

    void fourEyesReadsTheDeclaredValue()
    {
        LedgerFixture f;
        setFourEyes(f.store(), "1000");
        ClaimInput in = refundClaim("run-12:payout", "worker-a", R"({"customer":"c-981"})");
        in.value = Amount{150'000, "EUR"};
        in.maxAttempts = 1;
        f.engine().fail(kNs, in.key, f.engine().claim(in).operation.fencingToken,
                        ErrorClass::Transient, "503");
        ApproveCommand command(f.store(), kBob,
                               approval(in.key, ApprovalDecision::Confirm, {}, "PO-1"));
        QVERIFY(command.validate().empty());
        const ActionPreview preview = command.describe();
        QVERIFY2(preview.sentence.find("1,500.00 EUR") != std::string::npos,
                 preview.sentence.c_str());
        QCOMPARE(command.execute().status, std::string("pending"));
        QCOMPARE(f.store().find(kNs, in.key)->state, OperationState::ConfirmationRequired);
    }

    void changedProposalIsANewRevision()
    {
        LedgerFixture f;
        setFourEyes(f.store(), "100");
        needingConfirmation(f, "run-6:refund");
        QCOMPARE(
            approve(f.store(), kBob, approval("run-6:refund", ApprovalDecision::Redispatch, "ap-1"))
                .at("revision")
                .get<int>(),
            1);
        const nlohmann::json changed = approve(
            f.store(), kCarol, approval("run-6:refund", ApprovalDecision::Confirm, "ap-2", "RF-9"));
        QCOMPARE(changed.at("status").get<std::string>(), std::string("pending"));
        QCOMPARE(changed.at("revision").get<int>(), 2);
        const nlohmann::json applied = approve(
            f.store(), kDave, approval("run-6:refund", ApprovalDecision::Confirm, "ap-3", "RF-9"));
        QCOMPARE(applied.at("status").get<std::string>(), std::string("applied"));
        QCOMPARE(applied.at("revision").get<int>(), 2);
        QCOMPARE(f.store().find(kNs, "run-6:refund")->state, OperationState::Succeeded);
    }

    void reconcileMovesByTheProvidersAnswer()
    {
        LedgerFixture f;
        inUnknownOutcome(f, "run-7:found");
        inUnknownOutcome(f, "run-7:absent");
        inUnknownOutcome(f, "run-7:pending");
        needingConfirmation(f, "run-7:confirm");
        ScriptedLookup lookup;
        lookup.answers["run-7:found"] = found("RF-100");
        lookup.answers["run-7:confirm"] = found("RF-200");
        ProviderEvidence pending;
        pending.status = ProviderEvidence::Status::Pending;
        lookup.answers["run-7:pending"] = pending;

        ReconcileCommand::Request bulk;
        bulk.keyPrefix = "run-7:";
        bulk.reason = "provider outage on Tuesday";
        ReconcileCommand command(f.store(), lookup, kOliver, bulk);
        QVERIFY(command.validate().empty());
        const ActionPreview preview = command.describe();
        QCOMPARE(preview.details.at("count").get<int>(), 4);
        QCOMPARE(lookup.calls, 0); // the count comes first, before any lookup
        const nlohmann::json done = command.execute().toJson();
        QCOMPARE(done.at("reconciled").size(), std::size_t(4));
        QCOMPARE(f.store().find(kNs, "run-7:found")->state, OperationState::Succeeded);
        QVERIFY(f.store().find(kNs, "run-7:found")->receipt.find("RF-100") != std::string::npos);
        QCOMPARE(f.store().find(kNs, "run-7:absent")->state, OperationState::Received);
        QCOMPARE(f.store().find(kNs, "run-7:pending")->state, OperationState::ConfirmationRequired);
        QCOMPARE(f.store().find(kNs, "run-7:confirm")->state, OperationState::Succeeded);
        const auto audit = f.store().auditLog(0, 100);
        QCOMPARE(audit.size(), std::size_t(4));
        for (const AuditRecord &r : audit) {
            QCOMPARE(r.entry.action, std::string("reconcile"));
            QVERIFY(r.entry.detail.find("evidence") != std::string::npos);
        }

        // A viewer may not; a reason is required.
        inUnknownOutcome(f, "run-8:x");
        ReconcileCommand::Request one;
        one.key = "run-8:x";
        ReconcileCommand noReason(f.store(), lookup, kOliver, one);
        QVERIFY(!noReason.validate().empty());
        QCOMPARE(errorOf([&] { noReason.execute(); }), ErrorCode::Refused);
        one.reason = "r";
        ReconcileCommand viewer(f.store(), lookup, {"vera", "viewer"}, one);
        QCOMPARE(errorOf([&] { viewer.execute(); }), ErrorCode::Refused);
        QCOMPARE(f.store().find(kNs, "run-8:x")->state, OperationState::UnknownOutcome);
    }

    void reconcileSettlesALapsedProtectedWrite()
    {
        LedgerFixture f;
        ClaimInput in = refundClaim("run-9:lapsed");
        in.leaseMs = 1000;
        f.engine().claim(in);
        ScriptedLookup lookup;
        ReconcileCommand::Request one;
        one.key = "run-9:lapsed";
        one.reason = "worker died";
        ReconcileCommand early(f.store(), lookup, kOliver, one);
        QVERIFY(!early.validate().empty()); // the lease is live: nothing to reconcile yet
        f.advanceMs(2000);
        ReconcileCommand command(f.store(), lookup, kOliver, one);
        QVERIFY(command.validate().empty());
        QVERIFY(command.describe().sentence.find("not_found") != std::string::npos);
        command.execute();
        const auto history = f.store().history(kNs, "run-9:lapsed");
        QCOMPARE(history.back().toState, OperationState::Received);
        QCOMPARE(history[history.size() - 2].toState, OperationState::UnknownOutcome);
        QCOMPARE(f.store().auditLog(0, 10).size(), std::size_t(1));
    }

    void tamperedAuditRowIsDetected()
    {
        LedgerFixture f;
        for (const char *key : {"run-10:a", "run-10:b", "run-10:c"}) {
            needingConfirmation(f, key);
            approve(f.store(), kBob, approval(key, ApprovalDecision::Reject));
        }
        AuditVerify::Result clean = AuditVerify(f.store()).run();
        QVERIFY(clean.ok);
        QCOMPARE(clean.records, std::int64_t(3));

        // The guard itself: no update through the ledger's connection.
        if (auto *sqlite = dynamic_cast<SqliteLedgerStore *>(&f.store())) {
            QSqlQuery q(sqlite->connection().db);
            QVERIFY(!q.exec(QStringLiteral("UPDATE audit_log SET reason = 'x' WHERE seq = 1")));
            QVERIFY(!q.exec(QStringLiteral("DELETE FROM audit_log WHERE seq = 1")));
        } else {
            PgConnection admin(qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString());
            QCOMPARE(errorOf([&] {
                         admin.exec("edit", "UPDATE audit_log SET reason = 'x' WHERE seq = 1");
                     }),
                     ErrorCode::LedgerUnavailable);
            QCOMPARE(errorOf([&] { admin.exec("truncate", "TRUNCATE audit_log"); }),
                     ErrorCode::LedgerUnavailable);
        }
        QVERIFY(AuditVerify(f.store()).run().ok);

        tamper(f, "UPDATE audit_log SET reason = 'nothing to see' WHERE seq = 2");
        const AuditVerify::Result edited = AuditVerify(f.store()).run();
        QVERIFY(!edited.ok);
        QCOMPARE(edited.firstBad, std::optional<std::int64_t>(2));
        QVERIFY(edited.problem.find("edited") != std::string::npos);

        tamper(f, "DELETE FROM audit_log WHERE seq = 1");
        const AuditVerify::Result removed = AuditVerify(f.store()).run();
        QCOMPARE(removed.firstBad, std::optional<std::int64_t>(2));
        QVERIFY(removed.problem.find("missing") != std::string::npos);
    }

    void viewerCannotApproveThroughTheCommand()
    {
        LedgerFixture f;
        needingConfirmation(f, "run-11:refund");
        const QByteArray before = f.snapshot();
        ApproveCommand command(f.store(), {"vera", "viewer"},
                               approval("run-11:refund", ApprovalDecision::Redispatch));
        QVERIFY(!command.validate().empty());
        QCOMPARE(errorOf([&] { command.execute(); }), ErrorCode::Refused);
        ApproveCommand asOperator(f.store(), kOliver,
                                  approval("run-11:refund", ApprovalDecision::Redispatch));
        QCOMPARE(errorOf([&] { asOperator.execute(); }), ErrorCode::Refused);
        QCOMPARE(f.snapshot(), before);
    }

    /// 1,000 dead letters of which 900 are already completed: the replay requeues them with
    /// their keys, the consumer's claims execute exactly 100 and suppress 900, and no provider
    /// effect happens twice. Two replays of the same set run at once.
    void replayOfAThousandDeadLettersExecutesOnlyTheMissingHundred()
    {
        LedgerFixture f;
        auto queue = LedgerFixture::openQueue(f.sharedStore());
        const std::string q = "refunds_" + std::string(LedgerFixture::storeName());
        queue->createQueue(q, {.maxReads = 1});
        const std::int64_t now = f.store().nowMs();
        std::map<std::string, int> effects; // the provider's journal: effects per key
        for (int i = 0; i < 1000; ++i) {
            const std::string key = "run-r" + std::to_string(i) + ":refund";
            if (i < 900) {
                ClaimInput in;
                in.ns = kNs;
                in.key = key;
                in.payloadJson = QueueEnvelope::fromJson(nlohmann::json::parse(envelope(key, now)))
                                     .payload.dump();
                in.owner = "worker-a";
                const ClaimResult r = f.engine().claim(in);
                ++effects[key];
                f.engine().complete(kNs, key, r.operation.fencingToken, R"({"ok":true})", "");
            }
            queue->send(q, envelope(key, now), "", 0);
        }
        // Delivered once, then moved to the dead-letter queue by the read after.
        for (int round = 0; round < 2; ++round)
            for (std::vector<QueueMessage> got; !(got = queue->read(q, 0, 1000)).empty();) {
            }
        const std::vector<std::int64_t> ids = DlqReplayCommand::resolveFilter(*queue, q, "all");
        QCOMPARE(ids.size(), std::size_t(1000));

        std::vector<std::chrono::milliseconds> sleeps;
        std::mutex sleepsMutex;
        const auto request = [&] {
            DlqReplayCommand::Request r;
            r.ns = kNs;
            r.queue = q;
            r.ids = ids;
            r.reason = "provider outage fixed";
            r.ratePerSecond = 500;
            r.confirmCount = 1000;
            return r;
        };
        DlqReplayCommand::Options options;
        options.sleep = [&](std::chrono::milliseconds ms) {
            std::lock_guard lock(sleepsMutex);
            sleeps.push_back(ms);
        };
        DlqReplayCommand dry(f.store(), *queue, kOliver, request(), options);
        QVERIFY(dry.validate().empty());
        const ActionPreview preview = dry.describe();
        QCOMPARE(preview.details.at("by_class").at("already_completed").get<int>(), 900);
        QCOMPARE(preview.details.at("by_class").at("will_execute").get<int>(), 100);
        QCOMPARE(preview.details.at("count").get<int>(), 1000);
        auto wrongCount = request();
        wrongCount.confirmCount = 999;
        QCOMPARE(errorOf([&] {
                     DlqReplayCommand(f.store(), *queue, kOliver, wrongCount, options).execute();
                 }),
                 ErrorCode::Refused);
        QCOMPARE(queue->metrics(q).length, std::int64_t(0));

        std::shared_ptr<LedgerStore> stores[] = {f.openAnother(), f.openAnother()};
        std::shared_ptr<MessageQueue> queues[] = {LedgerFixture::openQueue(stores[0]),
                                                  LedgerFixture::openQueue(stores[1])};
        std::barrier start(2);
        std::int64_t requeued[2] = {0, 0};
        std::vector<std::thread> replays;
        for (int i = 0; i < 2; ++i)
            replays.emplace_back([&, i] {
                DlqReplayCommand replay(*stores[i], *queues[i],
                                        i == 0 ? kOliver : ActorIdentity{"otto", "operator"},
                                        request(), options);
                replay.describe();
                start.arrive_and_wait();
                requeued[i] = replay.execute().requeued;
            });
        for (auto &t : replays)
            t.join();
        QCOMPARE(requeued[0] + requeued[1], std::int64_t(1000));
        QCOMPARE(queue->metrics(q).length, std::int64_t(1000));
        QVERIFY(queue->deadLetters(q, 0, 10).empty());
        for (const auto &gap : sleeps)
            QCOMPARE(gap.count(), std::int64_t(2)); // 500 messages per second

        // The consumer: claim by the envelope's key, act only on claimed.
        int executed = 0;
        for (std::vector<QueueMessage> batch; !(batch = queue->read(q, 30'000, 500)).empty();) {
            for (const QueueMessage &m : batch) {
                const QueueEnvelope e = QueueEnvelope::fromJson(nlohmann::json::parse(m.message));
                const nlohmann::json headers = nlohmann::json::parse(m.headers);
                QCOMPARE(headers.at("replay").at("generation").get<int>(), 1);
                ClaimInput in;
                in.ns = kNs;
                in.key = e.idempotencyKey;
                in.payloadJson = e.payload.dump();
                in.owner = "worker-b";
                const ClaimResult r = f.engine().claim(in);
                if (r.outcome == ClaimOutcome::Claimed) {
                    ++effects[e.idempotencyKey];
                    ++executed;
                    f.engine().complete(kNs, in.key, r.operation.fencingToken, R"({"ok":true})",
                                        "");
                } else {
                    QCOMPARE(r.outcome, ClaimOutcome::Replayed);
                }
                queue->deleteMessage(q, m.msgId);
            }
        }
        QCOMPARE(executed, 100);
        QCOMPARE(effects.size(), std::size_t(1000));
        for (const auto &[key, count] : effects)
            QCOMPARE(count, 1);
        std::int64_t replayed = 0;
        for (const auto &[outcome, count] : f.store().metrics(kNs).suppressionsByOutcome)
            if (outcome == ClaimOutcome::Replayed)
                replayed += count;
        QCOMPARE(replayed, std::int64_t(900));
        const auto audit = f.store().auditLog(0, 100);
        QCOMPARE(audit.size(), std::size_t(4)); // start and finish of each replay
        QVERIFY(AuditVerify(f.store()).run().ok);
    }

    void replayKeepsGenerationsApartAndCanBeCancelled()
    {
        LedgerFixture f;
        auto queue = LedgerFixture::openQueue(f.sharedStore());
        const std::string q = "mails_" + std::string(LedgerFixture::storeName());
        queue->createQueue(q, {.maxReads = 1});
        const std::int64_t now = f.store().nowMs();
        for (int i = 0; i < 4; ++i)
            queue->send(q, envelope("run-g" + std::to_string(i) + ":mail", now), "", 0);
        queue->send(q, R"({"not":"an envelope"})", "", 0);
        queue->send(q, envelope("run-old:mail", now - 25 * 3600'000), "", 0);
        for (int round = 0; round < 2; ++round)
            queue->read(q, 0, 100);
        const std::vector<std::int64_t> ids = DlqReplayCommand::resolveFilter(*queue, q, "all");
        QCOMPARE(ids.size(), std::size_t(6));

        DlqReplayCommand::Request request;
        request.ns = kNs;
        request.queue = q;
        request.ids = ids;
        request.reason = "retry after fix";
        request.confirmCount = 4;
        int progressCalls = 0;
        DlqReplayCommand::Options options;
        options.sleep = [](std::chrono::milliseconds) {};
        options.progress = [&](std::int64_t, std::int64_t total) {
            ++progressCalls;
            QCOMPARE(total, std::int64_t(4));
        };
        options.cancelled = [&] { return progressCalls == 2; };
        DlqReplayCommand replay(f.store(), *queue, kOliver, request, options);
        const nlohmann::json byClass = replay.describe().details.at("by_class");
        QCOMPARE(byClass.at("will_execute").get<int>(), 4);
        QCOMPARE(byClass.at("unreadable").get<int>(), 1);
        QCOMPARE(byClass.at("expired_by_retention").get<int>(), 1);
        const nlohmann::json done = replay.execute().toJson();
        QCOMPARE(done.at("requeued").get<int>(), 2);
        QVERIFY(done.at("cancelled").get<bool>());
        QCOMPARE(done.at("not_replayed").get<int>(), 2);
        QCOMPARE(queue->deadLetters(q, 0, 10).size(), std::size_t(4));

        // The two requeued fail again: a new generation, outside the frozen set.
        queue->read(q, 0, 10);
        queue->read(q, 0, 10);
        const auto letters = queue->deadLetters(q, 0, 10);
        QCOMPARE(letters.size(), std::size_t(6));
        int secondGeneration = 0;
        for (const DeadLetter &d : letters) {
            const nlohmann::json h = nlohmann::json::parse(d.message.headers);
            if (h.contains("replay")) {
                ++secondGeneration;
                QCOMPARE(h.at("replay").at("generation").get<int>(), 1);
                QVERIFY(std::find(ids.begin(), ids.end(), d.message.msgId) == ids.end());
            }
        }
        QCOMPARE(secondGeneration, 2);
        // The same replay again picks up only what is left of its own set.
        request.confirmCount = 2;
        options.cancelled = {};
        options.progress = {};
        const nlohmann::json rest =
            DlqReplayCommand(f.store(), *queue, kOliver, request, options).execute().toJson();
        QCOMPARE(rest.at("requeued").get<int>(), 2);
        QCOMPARE(queue->deadLetters(q, 0, 10).size(), std::size_t(4));
    }
};

QTEST_GUILESS_MAIN(TestGuardedActions)
#include "tst_guardedactions.moc"
