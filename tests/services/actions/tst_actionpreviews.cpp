// SPDX-License-Identifier: Apache-2.0
// The typed previews (actionpreviews.h) read from what each guarded action's describe() answers,
// on every store: the fields a confirmation dialog shows are the ones the command wrote.
#include <QtTest>

#include "actionpreviews.h"
#include "approvecommand.h"
#include "bulkcommand.h"
#include "dlqreplaycommand.h"
#include "guardedactionhelpers.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"
#include "money.h"
#include "queueenvelope.h"
#include "reconcilecommand.h"
#include "runactioncommand.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kOwner{"olga", "owner"};

void setting(LedgerStore &store, const char *name, const std::string &value)
{
    GuardSettingCommand(store, kOwner, name, value, "policy").execute();
}

/// A provider that answers every lookup with one payment it found.
class FoundLookup final : public ProviderLookup
{
public:
    ProviderEvidence lookup(const Operation &) override
    {
        ProviderEvidence e;
        e.status = ProviderEvidence::Status::Found;
        e.provider = "bank";
        e.reference = "RF-100";
        e.raw = {{"refund_id", "RF-100"}};
        return e;
    }
};

} // namespace

class TestActionPreviews final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void approvalNamesStatesEvidenceHistoryAndPayload()
    {
        LedgerFixture f;
        const Operation op = needingConfirmation(f, "run-1:refund");
        ApproveCommand::Request r;
        r.key = op.key;
        r.decision = ApprovalDecision::Redispatch;
        const ActionPreview raw = ApproveCommand(f.store(), kOliver, r).describe();
        const ApprovalPreview p = ApprovalPreview::read(raw);
        QCOMPARE(p.sentence, raw.sentence);
        QCOMPARE(p.from, std::string("confirmation_required"));
        QCOMPARE(p.to, std::string("received"));
        QVERIFY(!p.fourEyes);
        QVERIFY(!p.referenceRates);
        QCOMPARE(p.evidence, std::string("503 from provider"));
        QVERIFY(p.payload);
        QCOMPARE(p.payload->value("currency", ""), std::string("EUR"));
        const std::vector<OperationEvent> history = f.store().history(kNs, op.key);
        QCOMPARE(p.history.size(), history.size());
        QCOMPARE(p.history.front().from, std::string()); // the claim that recorded it
        QCOMPARE(p.history.front().to, std::string("dispatching"));
        QCOMPARE(p.history.front().actor, history.front().actor);
        QCOMPARE(p.history.back().from, std::string("dispatching"));
        QCOMPARE(p.history.back().to, std::string("confirmation_required"));
        QCOMPARE(p.history.back().errorClass, std::string("transient"));
        QCOMPARE(p.history.back().attempt, history.back().attempt);
        QVERIFY(p.history.back().at.ends_with("Z"));

        // Above the threshold, at the ledger's rates: a second approver, and the rates named.
        setting(f.store(), FourEyesSetting, "1000");
        setting(f.store(), ReferenceRatesSetting, "EUR USD=0.92");
        const ApprovalPreview gated =
            ApprovalPreview::read(ApproveCommand(f.store(), kOliver, r).describe());
        QVERIFY(gated.fourEyes);
        QCOMPARE(gated.referenceRates, std::optional<std::string>("EUR USD=0.92"));
    }

    void reconcileNamesTheProvidersAnswerAndTheMove()
    {
        LedgerFixture f;
        const ClaimResult claimed = f.engine().claim(refundClaim("run-2:refund"));
        f.engine().fail(kNs, "run-2:refund", claimed.operation.fencingToken,
                        ErrorClass::UnknownOutcome, "timeout");
        FoundLookup lookup;
        ReconcileCommand::Request r;
        r.key = "run-2:refund";
        const ReconcilePreview p =
            ReconcilePreview::read(ReconcileCommand(f.store(), lookup, kOliver, r).describe());
        QCOMPARE(p.count, std::int64_t(1));
        QCOMPARE(p.operations.size(), std::size_t(1));
        QCOMPARE(p.operations[0].key, std::string("run-2:refund"));
        QCOMPARE(p.operations[0].state, std::string("unknown_outcome"));
        QCOMPARE(p.operations[0].to, std::optional<std::string>("succeeded"));
        QCOMPARE(p.operations[0].evidence.value("reference", ""), std::string("RF-100"));
        QCOMPARE(p.operations[0].evidence.value("status", ""), std::string("found"));
    }

    void replayCountsTheDryRunByClass()
    {
        LedgerFixture f;
        auto queue = LedgerFixture::openQueue(f.sharedStore());
        queue->createQueue("payments", {.maxReads = 1});
        QueueEnvelope e;
        e.runId = "run-3";
        e.stepId = "capture";
        e.payload = {{"amount", 10}};
        e.producedAtMs = f.store().nowMs();
        e.idempotencyKey = "run-3:capture";
        queue->send("payments", e.toJson().dump(), "", 0);
        for (int round = 0; round < 2; ++round)
            queue->read("payments", 0, 10);
        const auto ids = DlqReplayCommand::resolveFilter(*queue, "payments", "all");
        QCOMPARE(ids.size(), std::size_t(1));
        DlqReplayCommand::Request r;
        r.queue = "payments";
        r.ids = {ids.front(), ids.front() + 1000};
        const ReplayPreview p =
            ReplayPreview::read(DlqReplayCommand(f.store(), *queue, kOliver, r, {}).describe());
        QCOMPARE(p.queue, std::string("payments"));
        QVERIFY(!p.replayId.empty());
        QCOMPARE(p.set, std::int64_t(2));
        QCOMPARE(p.count, std::int64_t(1));
        QCOMPARE(p.unknownIds, std::vector<std::int64_t>{ids.front() + 1000});
        QCOMPARE(p.byClass.size(), std::size_t(6));
        QCOMPARE(p.byClass.at("will_execute"), std::int64_t(1));
        QCOMPARE(p.byClass.at("already_completed"), std::int64_t(0));
        QCOMPARE(p.items.size(), std::size_t(1));
        QCOMPARE(p.items[0].msgId, ids.front());
        QCOMPARE(p.items[0].key, std::string("run-3:capture"));
        QCOMPARE(p.items[0].ns, std::string("default"));
        QCOMPARE(p.items[0].replayClass, std::string("will_execute"));
        QVERIFY(!p.items[0].detail.empty());
    }

    void resumeShowsTheRunBeforeAndAfter()
    {
        LedgerFixture f;
        for (const std::string step : {"a", "b", "c"}) {
            ClaimInput in = refundClaim("run-4:" + step);
            in.runId = "run-4";
            const ClaimResult r = f.engine().claim(in);
            f.engine().fail(kNs, in.key, r.operation.fencingToken, ErrorClass::Transient, "503");
        }
        QCOMPARE(f.store().findRun(kNs, "run-4")->state, RunState::Halted);
        RunActionCommand::Request r;
        r.runId = "run-4";
        r.addFailed = 3;
        r.reason = "provider back up";
        const RunActionPreview p =
            RunActionPreview::read(RunActionCommand(f.store(), kOliver, r).describe());
        QCOMPARE(p.action, std::string("resume"));
        QCOMPARE(p.run.value("run_id", ""), std::string("run-4"));
        QCOMPARE(p.run.value("state", ""), std::string("halted"));
        QCOMPARE(p.after.value("state", ""), std::string("active"));
        QVERIFY(!p.fourEyes);
    }

    void bulkListsTheSetAsTheRunWillFindIt()
    {
        LedgerFixture f;
        const Operation first = needingConfirmation(f, "run-5:refund");
        const ClaimResult other = f.engine().claim(refundClaim("run-6:refund"));
        BulkCommand::Request r;
        r.action = BulkAction::Reject;
        r.targets = {{kNs, first.key, first.version}, {kNs, other.operation.key, 1}};
        const BulkPreview p = BulkPreview::read(BulkCommand(f.store(), kOliver, r, {}).describe());
        QCOMPARE(p.action, std::string("reject"));
        QCOMPARE(p.count, std::int64_t(2));
        QCOMPARE(p.notTaken, std::int64_t(1));
        QCOMPARE(p.targets.size(), std::size_t(2));
        QCOMPARE(p.targets[0].ns, kNs);
        QCOMPARE(p.targets[0].key, first.key);
        QCOMPARE(p.targets[0].version, first.version);
        QCOMPARE(p.targets[0].state, std::string("confirmation_required"));
        QVERIFY(p.targets[0].taken);
        QCOMPARE(p.targets[1].state, std::string("dispatching"));
        QVERIFY(!p.targets[1].taken);
    }

    void missingDetailsKeepTheDefaults()
    {
        const ApprovalPreview p = ApprovalPreview::read({"a sentence", nlohmann::json::object()});
        QCOMPARE(p.sentence, std::string("a sentence"));
        QVERIFY(p.from.empty() && p.history.empty() && p.evidence.empty());
        QVERIFY(!p.payload && !p.referenceRates && !p.fourEyes);
        QVERIFY(ReplayPreview::read({"", nlohmann::json::object()}).items.empty());
        QVERIFY(BulkPreview::read({"", nlohmann::json::object()}).targets.empty());
    }
};

QTEST_GUILESS_MAIN(TestActionPreviews)
#include "tst_actionpreviews.moc"
