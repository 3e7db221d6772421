// SPDX-License-Identifier: Apache-2.0
// The four-eyes worklist (LedgerStore::pendingApprovals): first approvals that wait for a second
// approver, on every store: SQLite by default, PostgreSQL under tests/pg/with-postgres.sh.
#include <QtTest>

#include "approvecommand.h"
#include "guardedactionhelpers.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kOwner{"root-admin", "owner"};
const ActorIdentity kBob{"bob", "approver"};
const ActorIdentity kCarol{"carol", "approver"};
const ActorIdentity kDave{"dave", "approver"};

std::string approve(LedgerStore &store, const ActorIdentity &actor, const std::string &key,
                    ApprovalDecision decision, const std::string &reference = {})
{
    ApproveCommand::Request r;
    r.ns = kNs;
    r.key = key;
    r.decision = decision;
    r.reason = "checked with the customer";
    r.externalReference = reference;
    ApproveCommand command(store, actor, r);
    return command.execute().status;
}

std::vector<std::string> waitingKeys(LedgerStore &store, int limit = 100)
{
    std::vector<std::string> keys;
    for (const PendingApproval &p : store.pendingApprovals(limit))
        keys.push_back(p.operation.key + " by " + p.approval.operatorName);
    return keys;
}

} // namespace

class TestFourEyesWorklist : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void listsFirstApprovalsUntilTheOperationMovesOn()
    {
        LedgerFixture f;
        GuardSettingCommand threshold(f.store(), kOwner, FourEyesSetting, "1000",
                                      "policy: two approvers for large refunds");
        threshold.execute();
        for (const char *key : {"w:a", "w:b", "w:d"})
            needingConfirmation(f, key);
        ClaimInput small =
            refundClaim("w:small", "worker-a", R"({"amount":"10","currency":"EUR"})");
        small.maxAttempts = 1;
        f.engine().fail(kNs, small.key, f.engine().claim(small).operation.fencingToken,
                        ErrorClass::Transient, "503");
        QVERIFY(f.store().pendingApprovals(100).empty());

        QCOMPARE(approve(f.store(), kBob, "w:a", ApprovalDecision::Redispatch), "pending");
        f.advanceMs(1000);
        QCOMPARE(approve(f.store(), kCarol, "w:b", ApprovalDecision::Redispatch), "pending");
        f.advanceMs(1000);
        QCOMPARE(approve(f.store(), kBob, "w:small", ApprovalDecision::Redispatch), "applied");
        QCOMPARE(approve(f.store(), kBob, "w:d", ApprovalDecision::Redispatch), "pending");
        f.advanceMs(1000);
        // A changed proposal is a new revision: only the latest one waits.
        QCOMPARE(approve(f.store(), kCarol, "w:d", ApprovalDecision::Confirm, "RF-1"), "pending");
        QCOMPARE(waitingKeys(f.store()),
                 (std::vector<std::string>{"w:a by bob", "w:b by carol", "w:d by carol"}));
        QCOMPARE(waitingKeys(f.store(), 2),
                 (std::vector<std::string>{"w:a by bob", "w:b by carol"}));

        const PendingApproval first = f.store().pendingApprovals(1).front();
        QCOMPARE(first.approval.status, std::string("pending"));
        QCOMPARE(first.approval.reason, std::string("checked with the customer"));
        QCOMPARE(first.operation.state, OperationState::ConfirmationRequired);
        QCOMPARE(first.operation.version, first.approval.operationVersion);
        QCOMPARE(first.requestedBy, f.store().history(kNs, "w:a").back().actor);
        QVERIFY(!first.requestedBy.empty());

        // Seconded: it leaves the list. Rejected (one approver suffices): so does the other.
        QCOMPARE(approve(f.store(), kCarol, "w:a", ApprovalDecision::Redispatch), "applied");
        QCOMPARE(approve(f.store(), kDave, "w:b", ApprovalDecision::Reject), "applied");
        QCOMPARE(waitingKeys(f.store()), (std::vector<std::string>{"w:d by carol"}));
        QCOMPARE(approve(f.store(), kDave, "w:d", ApprovalDecision::Confirm, "RF-1"), "applied");
        QVERIFY(f.store().pendingApprovals(100).empty());
    }
};

QTEST_GUILESS_MAIN(TestFourEyesWorklist)
#include "tst_foureyesworklist.moc"
