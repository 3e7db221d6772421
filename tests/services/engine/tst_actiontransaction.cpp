// SPDX-License-Identifier: Apache-2.0
// LedgerStore::applyAction() on the embedded store: one orchestration (runAction()) over its
// primitives that writes every part of a plan or nothing. (PostgreSQL's guarded actions are
// functions of the ledger that take no plan; see tests/services/CMakeLists.txt.)
#include <QtTest>

#include "error.h"
#include "ledgerfixture.h"

using namespace idempo;
using idempo::test::LedgerFixture;

namespace {

const std::string kNs = "default";
const std::string kKey = "run-1:refund";

/// An operation gated for approval: awaiting_approval, fencing token 0.
Operation gated(LedgerFixture &f)
{
    ClaimInput in;
    in.ns = kNs;
    in.key = kKey;
    in.payloadJson = R"({"amount":100})";
    in.owner = "planner";
    in.requiresApproval = true;
    return f.engine().claim(in).operation;
}

TransitionRequest step(const Operation &op, OperationState from, OperationState to)
{
    TransitionRequest t;
    t.ns = op.ns;
    t.key = op.key;
    t.from = from;
    t.fencingToken = op.fencingToken;
    t.to = to;
    t.actor = "carol";
    t.detail = "step to " + std::string(stateName(to));
    t.retentionMs = 24 * 3600'000;
    return t;
}

/// A plan with one of everything: two transitions, an approval, a setting and an audit entry
/// whose before / after state the store fills in.
ActionPlan fullPlan(const Operation &op, OperationState secondTo)
{
    ActionPlan plan;
    plan.transitions = {step(op, OperationState::AwaitingApproval, OperationState::Received),
                        step(op, OperationState::Received, secondTo)};
    ApprovalRecord a;
    a.approvalId = "ap-1";
    a.ns = op.ns;
    a.key = op.key;
    a.decision = "reject";
    a.reason = "not wanted";
    a.operatorName = "carol";
    a.role = "owner";
    a.proposal = "p";
    a.status = "applied";
    a.operationVersion = op.version;
    plan.approval = a;
    plan.setting = std::make_pair(std::string("four_eyes_above"), std::string("5.00"));
    AuditEntry audit;
    audit.who = "carol";
    audit.role = "owner";
    audit.action = "reject";
    audit.target = op.ns + "/" + op.key;
    audit.reason = "not wanted";
    audit.approvalId = "ap-1";
    plan.audit = audit;
    return plan;
}

ErrorCode errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.code();
    }
    return ErrorCode::Internal;
}

} // namespace

class TestActionTransaction final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void writesEveryPartOfThePlan()
    {
        LedgerFixture f;
        const Operation op = gated(f);
        std::int64_t seenNow = 0;
        const ActionResult result =
            f.store().applyAction({kNs, kKey, "ap-1"}, [&](const ActionState &state) {
                [&] {
                    QVERIFY(state.operation);
                    QCOMPARE(state.operation->state, OperationState::AwaitingApproval);
                    QVERIFY(!state.byApprovalId);
                    QCOMPARE(state.history.size(), std::size_t(1));
                }();
                seenNow = state.nowMs;
                return fullPlan(op, OperationState::FailedTerminal);
            });
        // The second step was planned on the record the first leaves (received), not on the
        // locked one.
        QVERIFY(result.operation);
        QCOMPARE(result.operation->state, OperationState::FailedTerminal);
        QCOMPARE(result.operation->version, op.version + 2);
        const Operation stored = *f.store().find(kNs, kKey);
        QCOMPARE(stored.state, OperationState::FailedTerminal);
        QCOMPARE(stored.version, op.version + 2);
        const std::vector<OperationEvent> history = f.store().history(kNs, kKey);
        QCOMPARE(history.size(), std::size_t(3));
        QCOMPARE(history[1].fromState, std::optional(OperationState::AwaitingApproval));
        QCOMPARE(history[1].toState, OperationState::Received);
        QCOMPARE(history[2].fromState, std::optional(OperationState::Received));
        QCOMPARE(history[2].toState, OperationState::FailedTerminal);
        QCOMPARE(history[2].detail, std::string("step to failed_terminal"));

        const std::vector<ApprovalRecord> approvals = f.store().approvals(kNs, kKey);
        QCOMPARE(approvals.size(), std::size_t(1));
        QCOMPARE(approvals[0].approvalId, std::string("ap-1"));
        QCOMPARE(approvals[0].createdAtMs, seenNow);
        QCOMPARE(f.store().guardSetting("four_eyes_above"), std::optional<std::string>("5.00"));

        const std::vector<AuditRecord> audit = f.store().auditLog(0, 10);
        QCOMPARE(audit.size(), std::size_t(1));
        QVERIFY(result.audit);
        QCOMPARE(result.audit->hash, audit[0].hash);
        QCOMPARE(audit[0].atMs, seenNow);
        // Before is the locked record, after the last step's.
        QVERIFY(audit[0].entry.beforeState.find("\"awaiting_approval\"") != std::string::npos);
        QVERIFY(audit[0].entry.afterState.find("\"failed_terminal\"") != std::string::npos);
    }

    void aRefusedStepWritesNothing()
    {
        LedgerFixture f;
        const Operation op = gated(f);
        const QByteArray before = f.snapshot();
        // received → succeeded is not in the transition table: refused after the approval,
        // the setting and the audit entry were planned, and none of them is written.
        QCOMPARE(errorOf([&] {
                     f.store().applyAction({kNs, kKey, "ap-1"}, [&](const ActionState &) {
                         return fullPlan(op, OperationState::Succeeded);
                     });
                 }),
                 ErrorCode::IllegalTransition);
        QCOMPARE(f.snapshot(), before);
        QCOMPARE(f.store().guardSetting("four_eyes_above"), std::optional<std::string>());
    }

    void anAnswerWritesNothing()
    {
        LedgerFixture f;
        const Operation op = gated(f);
        const QByteArray before = f.snapshot();
        const ActionResult result =
            f.store().applyAction({kNs, kKey, "ap-1"}, [&](const ActionState &) {
                ActionPlan plan = fullPlan(op, OperationState::FailedTerminal);
                plan.answer = *plan.approval;
                return plan;
            });
        QVERIFY(!result.audit);
        QCOMPARE(result.operation->state, OperationState::AwaitingApproval);
        QCOMPARE(f.snapshot(), before);
    }

    void anActionWithoutAnOperationReadsTheClock()
    {
        LedgerFixture f;
        std::int64_t seenNow = 0;
        const ActionResult result = f.store().applyAction({}, [&](const ActionState &state) {
            seenNow = state.nowMs;
            ActionPlan plan;
            plan.setting = std::make_pair(std::string("four_eyes_above"), std::string(""));
            AuditEntry audit;
            audit.who = "carol";
            audit.role = "owner";
            audit.action = "setting";
            audit.target = "setting:four_eyes_above";
            audit.reason = "off";
            plan.audit = audit;
            return plan;
        });
        QVERIFY(seenNow > 0);
        QVERIFY(!result.operation);
        QCOMPARE(result.audit->atMs, seenNow);
        QCOMPARE(f.store().guardSetting("four_eyes_above"), std::optional<std::string>(""));
    }
};

QTEST_GUILESS_MAIN(TestActionTransaction)
#include "tst_actiontransaction.moc"
