// SPDX-License-Identifier: Apache-2.0
#include "audittablemodel.h"

#include <QAbstractItemModelTester>
#include <QTest>

#include <nlohmann/json.hpp>

using namespace idempo;

namespace {

AuditRecord record(std::int64_t seq, const std::string &who, const std::string &action,
                   const std::string &target, const std::string &reason)
{
    AuditRecord r;
    r.seq = seq;
    r.atMs = 1'780'000'000'000 + seq * 1000;
    r.entry.who = who;
    r.entry.role = "approver";
    r.entry.action = action;
    r.entry.target = target;
    r.entry.reason = reason;
    r.entry.beforeState = R"({"state":"confirmation_required"})";
    r.entry.afterState = R"({"state":"received"})";
    r.entry.detail = R"({"decision":"redispatch"})";
    r.hash = std::string(64, 'a' + static_cast<char>(seq));
    return r;
}

std::vector<AuditRecord> records()
{
    return {record(1, "bob", "approve", "default/run-1:refund", "checked"),
            record(2, "oliver", "reconcile", "default/run-2:book", "provider says found"),
            record(3, "Bobby", "reject", "payments/run-3:pay", "line one\rline two")};
}

} // namespace

/// The Audit view's model: newest first, local filters, CSV and JSON of what is shown.
class TestAuditTableModel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void showsNewestFirstAndFilters();
    void exportsWhatIsShown();
};

void TestAuditTableModel::showsNewestFirstAndFilters()
{
    AuditTableModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);
    m.setRecords(records());
    QCOMPARE(m.rowCount(), 3);
    QCOMPARE(m.columnCount(), int(AuditTableModel::ColumnCount));
    QCOMPARE(m.index(0, AuditTableModel::Seq).data().toLongLong(), 3);
    QCOMPARE(m.index(2, AuditTableModel::Who).data().toString(), QStringLiteral("bob"));
    QCOMPARE(m.index(2, AuditTableModel::Change).data().toString(),
             QStringLiteral("confirmation_required → received"));
    QCOMPARE(m.actions(), (QStringList{QStringLiteral("approve"), QStringLiteral("reconcile"),
                                       QStringLiteral("reject")}));

    m.setFilter({}, QStringLiteral("bob"), {}); // actor: a substring, any case
    QCOMPARE(m.rowCount(), 2);
    m.setFilter(QStringLiteral("approve"), {}, {});
    QCOMPARE(m.rowCount(), 1);
    QCOMPARE(m.recordAt(0).seq, std::int64_t(1));
    m.setFilter({}, {}, QStringLiteral("default/"));
    QCOMPARE(m.rowCount(), 2);
    m.setFilter({}, {}, {});
    QCOMPARE(m.rowCount(), 3);
    m.setRecords({});
    QCOMPARE(m.rowCount(), 0);
}

void TestAuditTableModel::exportsWhatIsShown()
{
    AuditTableModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    m.setRecords(records());
    m.setFilter(QStringLiteral("reject"), {}, {});
    const QString csv = m.csv();
    QVERIFY(csv.startsWith(
        QLatin1String("seq,at,who,role,action,target,reason,before,after,approval_id,detail\n")));
    // A carriage return inside a field stays inside its quotes: the record is one CSV record.
    QVERIFY2(csv.contains(QLatin1String(",\"line one\rline two\",")), qPrintable(csv));
    QVERIFY(csv.contains(QLatin1String("\"{\"\"state\"\":\"\"received\"\"}\"")));
    QCOMPARE(csv.count(QLatin1Char('\n')), 2);

    const nlohmann::json j = nlohmann::json::parse(m.json().toStdString());
    QCOMPARE(j.size(), std::size_t(1));
    QCOMPARE(j[0].at("seq").get<std::int64_t>(), std::int64_t(3));
    QCOMPARE(j[0].at("after").at("state").get<std::string>(), std::string("received"));
}

QTEST_MAIN(TestAuditTableModel)
#include "tst_audittablemodel.moc"
