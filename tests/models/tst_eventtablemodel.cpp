// SPDX-License-Identifier: Apache-2.0
#include <QAbstractItemModelTester>
#include <QTest>

#include "eventtablemodel.h"

using namespace idempo;

/// One operation's history in the detail pane.
class TestEventTableModel final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void showsTheHistoryOldestFirst();
};

void TestEventTableModel::showsTheHistoryOldestFirst()
{
    EventTableModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m.rowCount(), 0);

    OperationEvent created;
    created.id = 1;
    created.atMs = 1'780'000'000'000;
    created.toState = OperationState::Dispatching;
    created.fencingToken = 7;
    created.attempt = 1;
    created.actor = "worker-a";
    created.detail = "created";
    OperationEvent failed = created;
    failed.id = 2;
    failed.atMs += 1500;
    failed.fromState = OperationState::Dispatching;
    failed.toState = OperationState::FailedRetryable;
    failed.errorClass = ErrorClass::Transient;
    failed.detail = "503 from provider";
    m.setEvents({created, failed});

    QCOMPARE(m.rowCount(), 2);
    QCOMPARE(m.columnCount(), int(EventTableModel::ColumnCount));
    QCOMPARE(m.events().size(), std::size_t(2));
    QCOMPARE(m.index(0, EventTableModel::Transition).data().toString(),
             QStringLiteral("created → dispatching"));
    QCOMPARE(m.index(1, EventTableModel::Transition).data().toString(),
             QStringLiteral("dispatching → failed_retryable"));
    QCOMPARE(m.index(0, EventTableModel::Token).data().toLongLong(), 7);
    QCOMPARE(m.index(1, EventTableModel::Attempt).data().toInt(), 1);
    QCOMPARE(m.index(1, EventTableModel::Actor).data().toString(), QStringLiteral("worker-a"));
    QCOMPARE(m.index(1, EventTableModel::Error).data().toString(), QStringLiteral("transient"));
    QCOMPARE(m.index(1, EventTableModel::Detail).data().toString(),
             QStringLiteral("503 from provider"));
    QVERIFY(m.index(1, EventTableModel::Transition).data(Qt::DecorationRole).isValid());
    QCOMPARE(m.headerData(EventTableModel::Detail, Qt::Horizontal).toString(),
             QStringLiteral("Detail"));

    m.setEvents({});
    QCOMPARE(m.rowCount(), 0);
}

QTEST_MAIN(TestEventTableModel)
#include "tst_eventtablemodel.moc"
