// SPDX-License-Identifier: Apache-2.0
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

#include "guardedactiondialog.h"

using namespace idempo;

/// The confirmation dialog of guarded actions, offscreen: Cancel by default, Enter in a field
/// neither submits nor cancels, no submission without a reason, one submission per dialog however
/// often OK is pressed.
class TestGuardedActionDialog final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void cancelIsTheDefault();
    void enterInAFieldKeepsItEscapeCancels();
    void okNamesTheConsequence();
    void refusesBlankReason_data();
    void refusesBlankReason();
    void referenceAndTypedCountRequired();
    void doubleClickSubmitsOnce();
    void retryAfterFailureIsTheSameSubmission();
    void escapeWaitsForTheOutcome();

private:
    static std::unique_ptr<GuardedActionDialog> approveDialog();
};

std::unique_ptr<GuardedActionDialog> TestGuardedActionDialog::approveDialog()
{
    auto d = std::make_unique<GuardedActionDialog>(
        QStringLiteral("Approve"),
        QStringLiteral("Approve refund of 1,250.00 EUR to account DE44 5001"),
        QStringLiteral("Approve refund of 1,250.00 EUR"));
    d->addDetail(QStringLiteral("Evidence"), QStringLiteral("no receipt"));
    d->show();
    return d;
}

void TestGuardedActionDialog::cancelIsTheDefault()
{
    auto d = approveDialog();
    QVERIFY(d->cancelButton()->isDefault());
    QVERIFY(!d->okButton()->isDefault());
    QVERIFY(!d->okButton()->autoDefault());
    QVERIFY(!d->okButton()->isEnabled());
    d->reasonEdit()->setPlainText(QStringLiteral("customer called"));
    QVERIFY(d->okButton()->isEnabled());
    d->okButton()->setFocus();
    QVERIFY(!d->okButton()->isDefault());
}

void TestGuardedActionDialog::enterInAFieldKeepsItEscapeCancels()
{
    for (const int key : {int(Qt::Key_Return), int(Qt::Key_Enter), int(Qt::Key_Escape)}) {
        auto d = approveDialog();
        QSignalSpy submitted(d.get(), &GuardedActionDialog::submitted);
        QSignalSpy rejected(d.get(), &QDialog::rejected);
        d->requireReference(QStringLiteral("External reference"));
        d->reasonEdit()->setPlainText(QStringLiteral("customer called"));
        d->referenceEdit()->setText(QStringLiteral("RF-1"));
        QVERIFY(d->okButton()->isEnabled());
        // The key goes where an operator types it: in a line edit, which passes it to the dialog.
        QTest::keyClick(d->referenceEdit(), static_cast<Qt::Key>(key));
        QCOMPARE(submitted.count(), 0);
        const bool escape = key == int(Qt::Key_Escape);
        QCOMPARE(rejected.count(), escape ? 1 : 0);
        QCOMPARE(d->isVisible(), !escape);
        QCOMPARE(d->referenceEdit()->text(), QStringLiteral("RF-1"));
    }
}

void TestGuardedActionDialog::okNamesTheConsequence()
{
    auto d = approveDialog();
    QCOMPARE(d->okButton()->text(), QStringLiteral("Approve refund of 1,250.00 EUR"));
}

void TestGuardedActionDialog::refusesBlankReason_data()
{
    QTest::addColumn<QString>("reason");
    QTest::newRow("empty") << QString();
    QTest::newRow("spaces") << QStringLiteral("   ");
    QTest::newRow("newlines and tabs") << QStringLiteral("\n\t \n");
}

void TestGuardedActionDialog::refusesBlankReason()
{
    QFETCH(QString, reason);
    auto d = approveDialog();
    QSignalSpy submitted(d.get(), &GuardedActionDialog::submitted);
    d->reasonEdit()->setPlainText(reason);
    QVERIFY(!d->okButton()->isEnabled());
    QTest::mouseClick(d->okButton(), Qt::LeftButton);
    d->okButton()->click();
    QCOMPARE(submitted.count(), 0);
    QVERIFY(!d->isSubmitting());
}

void TestGuardedActionDialog::referenceAndTypedCountRequired()
{
    auto d = approveDialog();
    d->requireReference(QStringLiteral("External &reference"));
    d->requireTypedCount(13);
    QSignalSpy submitted(d.get(), &GuardedActionDialog::submitted);
    d->reasonEdit()->setPlainText(QStringLiteral("provider confirmed by phone"));
    QVERIFY(!d->okButton()->isEnabled());
    d->referenceEdit()->setText(QStringLiteral("  "));
    QVERIFY(!d->okButton()->isEnabled());
    d->referenceEdit()->setText(QStringLiteral("RF-88121"));
    QVERIFY(!d->okButton()->isEnabled());
    d->countEdit()->setText(QStringLiteral("12"));
    QVERIFY(!d->okButton()->isEnabled());
    d->countEdit()->setText(QStringLiteral("13"));
    QVERIFY(d->okButton()->isEnabled());
    d->okButton()->click();
    QCOMPARE(submitted.count(), 1);
    const auto s = submitted.at(0).at(0).value<GuardedActionDialog::Submission>();
    QCOMPARE(s.reason, QStringLiteral("provider confirmed by phone"));
    QCOMPARE(s.externalReference, QStringLiteral("RF-88121"));
    QCOMPARE(s.typedCount, std::optional<qint64>(13));
}

void TestGuardedActionDialog::doubleClickSubmitsOnce()
{
    auto d = approveDialog();
    QSignalSpy submitted(d.get(), &GuardedActionDialog::submitted);
    d->reasonEdit()->setPlainText(QStringLiteral("customer called"));
    QTest::mouseClick(d->okButton(), Qt::LeftButton);
    QTest::mouseDClick(d->okButton(), Qt::LeftButton);
    d->okButton()->click();
    QCOMPARE(submitted.count(), 1);
    QVERIFY(d->isSubmitting());
    QVERIFY(!d->okButton()->isEnabled());
    d->finish(true, QStringLiteral("applied"));
    QVERIFY(!d->okButton()->isVisible());
    QCOMPARE(d->cancelButton()->text(), QStringLiteral("Close"));
    d->okButton()->click();
    QCOMPARE(submitted.count(), 1);
}

void TestGuardedActionDialog::retryAfterFailureIsTheSameSubmission()
{
    auto d = approveDialog();
    QSignalSpy submitted(d.get(), &GuardedActionDialog::submitted);
    d->reasonEdit()->setPlainText(QStringLiteral("customer called"));
    d->okButton()->click();
    d->finish(false, QStringLiteral("ledger unavailable"));
    QCOMPARE(d->outcomeText(), QStringLiteral("ledger unavailable"));
    QVERIFY(d->okButton()->isEnabled());
    d->okButton()->click();
    QCOMPARE(submitted.count(), 2);
    const auto first = submitted.at(0).at(0).value<GuardedActionDialog::Submission>();
    const auto second = submitted.at(1).at(0).value<GuardedActionDialog::Submission>();
    QVERIFY(!first.submissionId.isEmpty());
    QCOMPARE(second.submissionId, first.submissionId);
    QCOMPARE(first.submissionId, d->submissionId());
    // Two dialogs are two submissions.
    QVERIFY(approveDialog()->submissionId() != d->submissionId());
}

void TestGuardedActionDialog::escapeWaitsForTheOutcome()
{
    auto d = approveDialog();
    QSignalSpy rejected(d.get(), &QDialog::rejected);
    d->reasonEdit()->setPlainText(QStringLiteral("customer called"));
    d->okButton()->click();
    QTest::keyClick(d.get(), Qt::Key_Escape);
    QCOMPARE(rejected.count(), 0);
    QVERIFY(d->isVisible());
    d->finish(true, QStringLiteral("applied"));
    QTest::keyClick(d.get(), Qt::Key_Escape);
    QVERIFY(!d->isVisible());
    QCOMPARE(d->result(), int(QDialog::Accepted));
}

QTEST_MAIN(TestGuardedActionDialog)
#include "tst_guardedactiondialog.moc"
