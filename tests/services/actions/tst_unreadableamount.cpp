// SPDX-License-Identifier: Apache-2.0
// Four-eyes on every store: a payload whose /amount cannot be read (a sign, too large, finer
// than its currency, not a number) is worth an unknown amount, so one approver never applies it.
#include <QtTest>

#include "approvecommand.h"
#include "guardsettingcommand.h"
#include "ledgercontracthelpers.h"
#include "ledgerfixture.h"
#include "money.h"

using namespace idempo;
using namespace idempo::test;

class TestUnreadableAmount final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void oneApproverNeverAppliesIt_data()
    {
        QTest::addColumn<QString>("payload");
        QTest::addColumn<bool>("gated");
        QTest::newRow("readable, below") << R"({"amount":100,"currency":"EUR"})" << false;
        QTest::newRow("readable, above") << R"({"amount":9000,"currency":"EUR"})" << true;
        QTest::newRow("negative") << R"({"amount":-5,"currency":"EUR"})" << true;
        QTest::newRow("10^15") << R"({"amount":1e15,"currency":"EUR"})" << true;
        QTest::newRow("1e300") << R"({"amount":1e300,"currency":"EUR"})" << true;
        QTest::newRow("finer than cents")
            << R"({"amount":"5000.0000001","currency":"EUR"})" << true;
        QTest::newRow("a boolean") << R"({"amount":true,"currency":"EUR"})" << true;
        QTest::newRow("words") << R"({"amount":"a lot","currency":"EUR"})" << true;
        QTest::newRow("a ',' that groups no thousands")
            << R"({"amount":"90,00","currency":"EUR"})" << true;
        QTest::newRow("no amount") << R"({"currency":"EUR"})" << false;
    }

    void oneApproverNeverAppliesIt()
    {
        QFETCH(QString, payload);
        QFETCH(bool, gated);
        QCOMPARE(payloadAmountUnreadable(payload.toStdString()),
                 gated && !payload.contains(QStringLiteral("9000")));
        LedgerFixture f;
        GuardSettingCommand threshold(f.store(), {"olga", "owner"}, FourEyesSetting, "5000.00",
                                      "policy");
        threshold.execute();
        ClaimInput in = claimInput("odd:refund", payload.toStdString());
        in.requiresApproval = true;
        QCOMPARE(f.engine().claim(in).operation.state, OperationState::AwaitingApproval);
        ApproveCommand::Request r;
        r.key = "odd:refund";
        r.reason = "looked at it";
        ApproveCommand first(f.store(), {"ann", "approver"}, r);
        QCOMPARE(first.describe().sentence.find("cannot be read") != std::string::npos,
                 payloadAmountUnreadable(payload.toStdString()));
        first.execute();
        const Operation after = *f.store().find(kNs, "odd:refund");
        QCOMPARE(after.state, gated ? OperationState::AwaitingApproval : OperationState::Received);
        const std::vector<ApprovalRecord> approvals = f.store().approvals(kNs, "odd:refund");
        QCOMPARE(approvals.size(), std::size_t(1));
        QCOMPARE(approvals.front().status, std::string(gated ? "pending" : "applied"));
        if (!gated)
            return;
        // A second, different approver applies it.
        r.approvalId.clear();
        ApproveCommand second(f.store(), {"bob", "approver"}, r);
        second.execute();
        QCOMPARE(f.store().find(kNs, "odd:refund")->state, OperationState::Received);
    }

    /// A declared value that differs from the payload's amount: the approver is shown both, and
    /// the larger gates.
    void theApproverSeesBothValues()
    {
        LedgerFixture f;
        GuardSettingCommand threshold(f.store(), {"olga", "owner"}, FourEyesSetting, "5000.00",
                                      "policy");
        threshold.execute();
        ClaimInput in = claimInput("big:refund", R"({"amount":5000000,"currency":"EUR"})");
        in.value = Amount{100, "EUR"};
        in.requiresApproval = true;
        f.engine().claim(in);
        ApproveCommand::Request r;
        r.key = "big:refund";
        r.reason = "looked at it";
        ApproveCommand approve(f.store(), {"ann", "approver"}, r);
        QCOMPARE(approve.describe().sentence,
                 std::string("Approve big:refund of 1.00 EUR (the payload says 5,000,000.00 EUR): "
                             "dispatch it again (needs a second approver)"));
    }
};

QTEST_GUILESS_MAIN(TestUnreadableAmount)
#include "tst_unreadableamount.moc"
