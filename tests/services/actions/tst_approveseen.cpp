// SPDX-License-Identifier: Apache-2.0
// idempo.approve_seen on PostgreSQL: an approval applies to the operation as its approver saw it.
// A decision made on a version the operation has left is refused with nothing written, whatever
// the state now; a replayed approval id still answers. Runs under tests/pg/with-postgres.sh.
#include <QtTest>

#include "approvecommand.h"
#include "error.h"
#include "errorof.h"
#include "ledgercontracthelpers.h"
#include "ledgerfixture.h"
#include "pgconnection.h"

using namespace idempo;
using namespace idempo::test;

namespace {

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

/// approve_seen as the approver ann, through the owner's connection.
PgResult approveSeen(PgConnection &c, std::optional<std::int64_t> seen, const std::string &id)
{
    return c.exec(
        "approve seen",
        "SELECT status FROM idempo.approve_seen($1::bigint, 'default', 'seen:refund', $2, "
        "'redispatch', 'checked the refund', '', 3, 86400000, 'ann', 'approver')",
        PgParams().optionalInteger(seen).text(id));
}

std::int64_t count(PgConnection &c, const char *table)
{
    return c.exec("count", std::string("SELECT count(*) FROM idempo.") + table).integer(0, 0);
}

} // namespace

class TestApproveSeen final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
    }

    void aMovedOperationRefusesTheDecision()
    {
        LedgerFixture f;
        ClaimInput in = claimInput("seen:refund");
        in.requiresApproval = true;
        const Operation seen = f.engine().claim(in).operation;
        QCOMPARE(seen.state, OperationState::AwaitingApproval);
        PgConnection owner(testUrl());
        const std::int64_t audits = count(owner, "audit_log");

        // A decision on another version than the operation's, in the same state: refused.
        QString message;
        try {
            approveSeen(owner, seen.version + 3, "ap-stale");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::IllegalTransition);
            message = QString::fromStdString(e.what());
        }
        QVERIFY2(message.contains(QStringLiteral("changed since it was seen (version %1, now %2, "
                                                 "awaiting_approval)")
                                      .arg(seen.version + 3)
                                      .arg(seen.version)),
                 qPrintable(message));
        QCOMPARE(count(owner, "approvals"), std::int64_t(0));
        QCOMPARE(count(owner, "audit_log"), audits);
        QCOMPARE(f.store().find(kNs, "seen:refund")->version, seen.version);
        QCOMPARE(errorOf([&] { approveSeen(owner, std::nullopt, "ap-null"); }),
                 ErrorCode::InvalidArgument);

        // On the version it saw, it applies; replayed later, it answers as it did.
        QCOMPARE(approveSeen(owner, seen.version, "ap-seen").text(0, 0), std::string("applied"));
        QCOMPARE(f.store().find(kNs, "seen:refund")->state, OperationState::Received);
        QCOMPARE(approveSeen(owner, seen.version, "ap-seen").text(0, 0), std::string("replayed"));
        QCOMPARE(count(owner, "approvals"), std::int64_t(1));
        QCOMPARE(count(owner, "audit_log"), audits + 1);
    }

    /// The store approves through approve_seen with the version its decision read: the command's
    /// answer is the ledger's.
    void theStoreSendsTheVersionItDecidedOn()
    {
        LedgerFixture f;
        ClaimInput in = claimInput("seen:refund");
        in.requiresApproval = true;
        const Operation seen = f.engine().claim(in).operation;
        ApproveCommand::Request r;
        r.ns = kNs;
        r.key = "seen:refund";
        r.approvalId = "ap-cmd";
        r.decision = ApprovalDecision::Redispatch;
        r.reason = "checked";
        r.version = seen.version;
        ApproveCommand command(f.store(), {"ann", "approver"}, r);
        command.execute();
        PgConnection owner(testUrl());
        QCOMPARE(owner
                     .exec("version", "SELECT operation_version FROM idempo.approvals WHERE "
                                      "approval_id = 'ap-cmd'")
                     .integer(0, 0),
                 seen.version);
        QCOMPARE(f.store().find(kNs, "seen:refund")->state, OperationState::Received);
    }
};

QTEST_GUILESS_MAIN(TestApproveSeen)
#include "tst_approveseen.moc"
