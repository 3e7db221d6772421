// SPDX-License-Identifier: Apache-2.0
// Guarded actions (approve / reject, four-eyes, the audit chain) through their command objects,
// on every store: SQLite by default, PostgreSQL under tests/pg/with-postgres.sh. Reconcile and
// DLQ replay are in tst_reconcilecommand.cpp and tst_dlqreplaycommand.cpp.
#include <algorithm>
#include <barrier>
#include <mutex>
#include <thread>

#include <QSqlError>
#include <QtTest>

#include "approvecommand.h"
#include "auditchain.h"
#include "auditverify.h"
#include "error.h"
#include "guardedactionhelpers.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"
#include "pgconnection.h"
#include "sqliteledgerstore.h"
#include "sqlitesupport.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kOwner{"root-admin", "owner"};
const ActorIdentity kBob{"bob", "approver"};
const ActorIdentity kCarol{"carol", "approver"};
const ActorIdentity kDave{"dave", "approver"};

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

    void sentenceQuotesTheKeyAsStored()
    {
        LedgerFixture f;
        ClaimInput bare = refundClaim("acct_9_x:send_invoice");
        bare.stepId.clear();
        bare.target.clear();
        bare.requiresApproval = true;
        f.engine().claim(bare);
        ApproveCommand reject(f.store(), kBob,
                              approval("acct_9_x:send_invoice", ApprovalDecision::Reject));
        QCOMPARE(reject.describe().sentence,
                 std::string("Reject acct_9_x:send_invoice of 1,250.00 EUR: it will not be "
                             "executed"));
        ClaimInput stepped = refundClaim("acct_9_y:x");
        stepped.stepId = "send_invoice";
        stepped.target.clear();
        stepped.requiresApproval = true;
        f.engine().claim(stepped);
        ApproveCommand approve(f.store(), kBob,
                               approval("acct_9_y:x", ApprovalDecision::Redispatch));
        QCOMPARE(approve.describe().sentence,
                 std::string("Approve send invoice of 1,250.00 EUR: dispatch it again"));
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
};

QTEST_GUILESS_MAIN(TestGuardedActions)
#include "tst_guardedactions.moc"
