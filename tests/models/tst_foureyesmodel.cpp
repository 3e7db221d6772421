// SPDX-License-Identifier: Apache-2.0
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "approvecommand.h"
#include "consolefixture.h"
#include "foureyesmodel.h"
#include "ledgerconnection.h"

using namespace idempo;

/// The four-eyes worklist model under QAbstractItemModelTester, on the prepared ledger with
/// four-eyes above 1,000: rows come when a first approval is recorded, go when a second approver
/// applies it, and change with who sits at the console and what the person asks to see.
class TestFourEyesModel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void followsTheApprovalsUnderTheTester();
};

namespace {

/// `who`'s first approval to re-dispatch (or confirm) `key` with `reason`.
std::string approveFirst(test::ConsoleFixture &f, const ActorIdentity &who, const std::string &key,
                         const std::string &reason)
{
    ApproveCommand::Request r;
    r.key = key;
    r.decision = ApprovalDecision::Redispatch;
    r.reason = reason;
    return ApproveCommand(f.store(), who, r).execute().status;
}

/// Reads the worklist again and waits for the answer.
bool refreshed(FourEyesModel &m)
{
    QSignalSpy loaded(&m, &FourEyesModel::loaded);
    m.refresh();
    return loaded.wait();
}

QStringList keys(const FourEyesModel &m)
{
    QStringList out;
    for (int r = 0; r < m.rowCount(); ++r)
        out << m.index(r, FourEyesModel::Key).data().toString();
    return out;
}

} // namespace

void TestFourEyesModel::followsTheApprovalsUnderTheTester()
{
    test::ConsoleFixture f;
    f.populate();
    QCOMPARE(f.approveRefundOnce(), std::string("pending")); // carol, on run-7002:refund
    LedgerConnection c;
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(f.url());
    QVERIFY(opened.wait());
    FourEyesModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    QCOMPARE(m.columnCount(), int(FourEyesModel::ColumnCount));

    QSignalSpy loaded(&m, &FourEyesModel::loaded);
    m.reload();
    QVERIFY(loaded.wait());
    QCOMPARE(keys(m), QStringList{QStringLiteral("run-7002:refund")});
    QCOMPARE(m.index(0, FourEyesModel::FirstApprover).data().toString(),
             QStringLiteral("carol (approver)"));
    QCOMPARE(m.index(0, FourEyesModel::Decision).data().toString(),
             QStringLiteral("dispatch again"));
    QCOMPARE(m.index(0, FourEyesModel::Value).data(FourEyesModel::KeyRole).toString(),
             QStringLiteral("run-7002:refund"));
    QVERIFY(!m.index(0, 0).data(FourEyesModel::MineRole).toBool());
    QCOMPARE(m.waitingForMe(), 1);

    // A second first approval, by dave on the 8,400.00 EUR invoice: a row comes.
    QCOMPARE(approveFirst(f, {"dave", "approver"}, "run-7004:send_invoice", "mail server fixed"),
             std::string("pending"));
    QVERIFY(refreshed(m));
    QCOMPARE(m.rowCount(), 2);
    QVERIFY(keys(m).contains(QStringLiteral("run-7004:send_invoice")));

    // The same worklist read again leaves the rows alone.
    QSignalSpy resets(&m, &QAbstractItemModel::modelReset);
    QVERIFY(refreshed(m));
    QCOMPARE(resets.count(), 0);

    // carol at the console: her own first approval is not hers to second, so its row goes...
    m.setActorName(QStringLiteral("carol"));
    QCOMPARE(keys(m), QStringList{QStringLiteral("run-7004:send_invoice")});
    QCOMPARE(m.waitingForMe(), 1);
    QCOMPARE(m.mineWaiting(), 1);
    // ...unless she asks to see it, marked as waiting for someone else.
    m.setIncludeMine(true);
    QCOMPARE(m.rowCount(), 2);
    int mine = -1;
    for (int r = 0; r < m.rowCount(); ++r)
        if (m.index(r, 0).data(FourEyesModel::MineRole).toBool())
            mine = r;
    QVERIFY(mine >= 0);
    QCOMPARE(m.pendingAt(mine).operation.key, std::string("run-7002:refund"));
    QVERIFY(m.index(mine, FourEyesModel::FirstApprover)
                .data()
                .toString()
                .endsWith(QStringLiteral("— you")));
    QVERIFY(!m.index(mine, 0).data(Qt::ToolTipRole).toString().isEmpty());
    m.setIncludeMine(false);
    QCOMPARE(m.rowCount(), 1);

    // erin seconds dave's approval: it applies and its row goes.
    QCOMPARE(approveFirst(f, {"erin", "approver"}, "run-7004:send_invoice", "agreed"),
             std::string("applied"));
    QVERIFY(refreshed(m));
    QCOMPARE(m.rowCount(), 0);
    QCOMPARE(m.mineWaiting(), 1);
    m.setIncludeMine(true);
    QCOMPARE(keys(m), QStringList{QStringLiteral("run-7002:refund")});

    // Another person at the console: carol's row is theirs to second again.
    m.setIncludeMine(false);
    m.setActorName(QStringLiteral("alice"));
    QCOMPARE(keys(m), QStringList{QStringLiteral("run-7002:refund")});
    QVERIFY(!m.index(0, 0).data(FourEyesModel::MineRole).toBool());
    QVERIFY(!m.hasMore());

    // reload() forgets the rows at once and reads them again.
    m.reload();
    QCOMPARE(m.rowCount(), 0);
    QVERIFY(loaded.wait());
    QCOMPARE(m.rowCount(), 1);
}

QTEST_MAIN(TestFourEyesModel)
#include "tst_foureyesmodel.moc"
