// SPDX-License-Identifier: Apache-2.0
// The guarded actions' typed outcomes: the JSON scripts read and the sentence the console shows.
#include <QtTest>

#include "actionoutcome.h"

using namespace idempo;

namespace {

Operation refund(OperationState state)
{
    Operation op;
    op.ns = "default";
    op.key = "run-7002:refund";
    op.state = state;
    op.version = 3;
    return op;
}

} // namespace

class TestActionOutcome final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void approvalInWordsAndJson()
    {
        ApprovalOutcome o{
            "ap-1", "applied", "redispatch", 1, "carol", refund(OperationState::Received), 12};
        QCOMPARE(o.text(),
                 std::string(
                     "Applied: run-7002:refund is now received (approval ap-1, audit record 12)."));
        const nlohmann::json j = o.toJson();
        QCOMPARE(j.at("status").get<std::string>(), std::string("applied"));
        QCOMPARE(j.at("operator").get<std::string>(), std::string("carol"));
        QCOMPARE(j.at("operation").at("state").get<std::string>(), std::string("received"));
        QCOMPARE(j.at("audit_seq").get<std::int64_t>(), std::int64_t(12));

        o.status = "pending";
        o.operation = refund(OperationState::ConfirmationRequired);
        QCOMPARE(o.text(), std::string("Recorded, pending a second approver: run-7002:refund stays "
                                       "confirmation_required (approval ap-1)."));
        o.status = "replayed";
        o.auditSeq.reset();
        QCOMPARE(o.text(),
                 std::string(
                     "Already decided: approval ap-1 was submitted before; nothing applied again "
                     "(run-7002:refund is confirmation_required)."));
        QVERIFY(o.toJson().at("audit_seq").is_null());
    }

    void reconcileInWordsAndJson()
    {
        ReconcileOutcome o;
        ProviderEvidence found;
        found.status = ProviderEvidence::Status::Found;
        found.provider = "airline";
        found.reference = "PNR-42";
        o.reconciled.push_back({"run-7003:book_flight", OperationState::UnknownOutcome,
                                OperationState::Succeeded, found, 7});
        o.skipped.push_back(
            {"run-7004:send_invoice", "the operation changed after it was looked up"});
        QCOMPARE(
            o.text(),
            std::string(
                "Reconciled. run-7003:book_flight: unknown_outcome → succeeded; "
                "run-7004:send_invoice skipped: the operation changed after it was looked up"));
        const nlohmann::json j = o.toJson();
        QCOMPARE(j.at("reconciled").at(0).at("evidence").at("status").get<std::string>(),
                 std::string("found"));
        QCOMPARE(j.at("reconciled").at(0).at("evidence").at("reference").get<std::string>(),
                 std::string("PNR-42"));
        QCOMPARE(j.at("reconciled").at(0).at("to").get<std::string>(), std::string("succeeded"));
        QCOMPARE(j.at("skipped").at(0).at("key").get<std::string>(),
                 std::string("run-7004:send_invoice"));
    }

    void replayInWordsAndJson()
    {
        ReplayOutcome o{"rp-1", 3, 1, 2, false, 10, 11};
        QCOMPARE(
            o.text(),
            std::string(
                "Replayed: 3 requeued, 2 not replayed, 1 taken by another replay (replay rp-1)."));
        o.cancelled = true;
        QCOMPARE(
            o.text(),
            std::string(
                "Stopped: 3 requeued, 2 not replayed, 1 taken by another replay (replay rp-1)."));
        const nlohmann::json j = o.toJson();
        QCOMPARE(j.at("taken_by_other_replay").get<std::int64_t>(), std::int64_t(1));
        QCOMPARE(j.at("audit_seq"), nlohmann::json::array({10, 11}));
    }

    void settingInWordsAndJson()
    {
        SettingOutcome on{"four_eyes_above", "1000.00", std::nullopt, 5};
        QCOMPARE(on.text(), std::string("Set four_eyes_above to 1000.00 (audit record 5)."));
        QVERIFY(on.toJson().at("previous").is_null());
        SettingOutcome off{"four_eyes_above", "", std::string("1000.00"), 6};
        QCOMPARE(off.text(), std::string("Turned four_eyes_above off (audit record 6)."));
        QCOMPARE(off.toJson().at("previous").get<std::string>(), std::string("1000.00"));
    }
};

QTEST_GUILESS_MAIN(TestActionOutcome)
#include "tst_actionoutcome.moc"
