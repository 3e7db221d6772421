// SPDX-License-Identifier: Apache-2.0
#include <QApplication>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include "guardedactiondialog.h"

using namespace idempo;

/// How the keyboard meets the confirmation dialog: typing lands in the reason (a space never
/// presses Cancel), Enter there starts a new line, and only Ctrl+Enter or a click submits.
class TestApproveDialogKeys final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void typingGoesToTheReason();
    void ctrlEnterSubmitsOnlyWhenComplete();
    void subjectNamesTheOperation();
};

namespace {

std::unique_ptr<GuardedActionDialog> shownDialog()
{
    auto d = std::make_unique<GuardedActionDialog>(
        QStringLiteral("Approve"), QStringLiteral("Approve refund of 1,250.00 EUR"),
        QStringLiteral("Approve refund of 1,250.00 EUR"));
    d->show();
    QApplication::setActiveWindow(d.get());
    return d;
}

} // namespace

void TestApproveDialogKeys::typingGoesToTheReason()
{
    auto d = shownDialog();
    QVERIFY(QTest::qWaitForWindowActive(d.get()));
    QCOMPARE(QApplication::focusWidget(), static_cast<QWidget *>(d->reasonEdit()));
    QSignalSpy rejected(d.get(), &QDialog::rejected);
    QSignalSpy submitted(d.get(), &GuardedActionDialog::submitted);
    QTest::keyClicks(QApplication::focusWidget(), QStringLiteral(" refund agreed"));
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_Return);
    QTest::keyClicks(QApplication::focusWidget(), QStringLiteral("by phone"));
    QCOMPARE(rejected.count(), 0);
    QCOMPARE(submitted.count(), 0);
    QVERIFY(d->isVisible());
    QCOMPARE(d->reasonEdit()->toPlainText(), QStringLiteral(" refund agreed\nby phone"));
}

void TestApproveDialogKeys::ctrlEnterSubmitsOnlyWhenComplete()
{
    auto d = shownDialog();
    QVERIFY(QTest::qWaitForWindowActive(d.get()));
    QSignalSpy submitted(d.get(), &GuardedActionDialog::submitted);
    QTest::keyClick(d->reasonEdit(), Qt::Key_Return, Qt::ControlModifier);
    QCOMPARE(submitted.count(), 0);
    QTest::keyClicks(d->reasonEdit(), QStringLiteral("customer called"));
    QTest::keyClick(d->reasonEdit(), Qt::Key_Return, Qt::ControlModifier);
    QCOMPARE(submitted.count(), 1);
    QCOMPARE(submitted.at(0).at(0).value<GuardedActionDialog::Submission>().reason,
             QStringLiteral("customer called"));
}

void TestApproveDialogKeys::subjectNamesTheOperation()
{
    auto d = shownDialog();
    d->setSubject(QStringLiteral("run-7002:refund · namespace default · customer c-981"));
    QVERIFY(d->subjectText().contains(QLatin1String("run-7002:refund")));
}

QTEST_MAIN(TestApproveDialogKeys)
#include "tst_approvedialogkeys.moc"
