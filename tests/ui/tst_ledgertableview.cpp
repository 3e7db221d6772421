// SPDX-License-Identifier: Apache-2.0
#include <QStandardItemModel>
#include <QTest>

#include "ledgertableview.h"

using namespace idempo;

/// The CSV export every list offers.
class TestLedgerTableView final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void exportsVisibleColumnsAsCsv();
};

void TestLedgerTableView::exportsVisibleColumnsAsCsv()
{
    QStandardItemModel model(2, 3);
    model.setHorizontalHeaderLabels(
        {QStringLiteral("Operation key"), QStringLiteral("Hidden"), QStringLiteral("Detail")});
    model.setItem(0, 0, new QStandardItem(QStringLiteral("run-1:refund")));
    model.setItem(0, 1, new QStandardItem(QStringLiteral("not exported")));
    model.setItem(0, 2, new QStandardItem(QStringLiteral("one\rtwo")));
    model.setItem(1, 0, new QStandardItem(QStringLiteral("run-2:book")));
    model.setItem(1, 2, new QStandardItem(QStringLiteral("a \"quote\", a comma")));
    LedgerTableView view;
    view.setModel(&model);
    view.setColumnHidden(1, true);
    // A carriage return inside a field is escaped (textescape.h): it cannot end the record early.
    QCOMPARE(view.csv(), QStringLiteral("Operation key,Detail\r\n"
                                        "run-1:refund,one\\rtwo\r\n"
                                        "run-2:book,\"a \"\"quote\"\", a comma\"\r\n"));
}

QTEST_MAIN(TestLedgerTableView)
#include "tst_ledgertableview.moc"
