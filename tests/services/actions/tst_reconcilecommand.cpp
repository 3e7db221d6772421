// SPDX-License-Identifier: Apache-2.0
// The reconcile action through its command object, on every store: operations of unknown
// outcome moved by the provider's answer, with an audit record each.
#include <map>

#include <QtTest>

#include "auditchain.h"
#include "error.h"
#include "guardedactionhelpers.h"
#include "ledgerfixture.h"
#include "reconcilecommand.h"

using namespace idempo;
using namespace idempo::test;

namespace {

Operation inUnknownOutcome(LedgerFixture &f, const std::string &key)
{
    const ClaimResult r = f.engine().claim(refundClaim(key));
    return f.engine().fail(kNs, key, r.operation.fencingToken, ErrorClass::UnknownOutcome,
                           "timeout");
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

} // namespace

class TestReconcileCommand final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

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
};

QTEST_GUILESS_MAIN(TestReconcileCommand)
#include "tst_reconcilecommand.moc"
