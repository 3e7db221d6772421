// SPDX-License-Identifier: Apache-2.0
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "consolefixture.h"
#include "consolewindow.h"
#include "guardsettingcommand.h"
#include "mainwindow.h"
#include "money.h"
#include "notifier.h"
#include "overviewmodel.h"
#include "overviewview.h"

using namespace idempo;

/// Notifications of new confirmations above a value, offscreen, on the prepared ledger with
/// reference rates (EUR, JPY=0.0061): a new 1,000,000 JPY (6,100 EUR) and a new 10,000 EUR are
/// told once each, a new 900 EUR is not, and what waited before the ledger opened is not.
class TestNotifyAbove final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void toldOnlyAboveTheFloorInTheReferenceCurrency();
};

void TestNotifyAbove::toldOnlyAboveTheFloorInTheReferenceCurrency()
{
    test::ConsoleFixture fixture;
    fixture.populate();
    GuardSettingCommand rates(fixture.store(), {"olga", "owner"}, ReferenceRatesSetting,
                              "EUR JPY=0.0061", "treasury rates of the day");
    rates.execute();
    auto window = test::openConsole(fixture.url());
    QVERIFY(window);
    auto *notifier = window->findChild<Notifier *>();
    QVERIFY(notifier);
    notifier->setEnabled(Notifier::Kind::Confirmation, true);
    notifier->setConfirmationFloor(QStringLiteral("5000"));
    QCOMPARE(notifier->confirmationFloor(), QStringLiteral("5000"));
    QSignalSpy told(notifier, &Notifier::notified);
    OverviewModel *overview = nullptr;
    for (LedgerView *v : window->views())
        if (auto *o = qobject_cast<OverviewView *>(v))
            overview = o->model();
    QVERIFY(overview);
    QTRY_VERIFY(overview->hasSnapshot());
    // The 8,400 EUR invoice already waited: the baseline, not news.
    QCOMPARE(told.count(), 0);

    int n = 0;
    for (const char *payload :
         {R"({"amount":1000000,"currency":"JPY"})", R"({"amount":"900","currency":"EUR"})",
          R"({"amount":"10000","currency":"EUR"})"}) {
        ClaimInput in;
        in.key = "run-7030:pay-" + std::to_string(n++);
        in.payloadJson = payload;
        in.owner = "worker-a";
        in.maxAttempts = 1;
        const ClaimResult c = fixture.engine().claim(in);
        QCOMPARE(c.outcome, ClaimOutcome::Claimed);
        fixture.engine().fail("default", in.key, c.operation.fencingToken, ErrorClass::Transient,
                              "503");
        QCOMPARE(fixture.store().find("default", in.key)->state,
                 OperationState::ConfirmationRequired);
    }
    window->connection()->pollNow();
    const auto toldOf = [&told](const char *key) {
        return std::count_if(told.begin(), told.end(), [key](const QList<QVariant> &args) {
            return args.at(0).value<Notifier::Kind>() == Notifier::Kind::Confirmation &&
                   args.at(2).toString().contains(QLatin1String(key));
        });
    };
    QTRY_COMPARE(toldOf("run-7030:pay-0"), 1);
    QCOMPARE(toldOf("run-7030:pay-2"), 1);
    QCOMPARE(toldOf("run-7030:pay-1"), 0);
    QCOMPARE(toldOf("run-7004"), 0);
    QVERIFY(told.at(0).at(1).toString().contains(QLatin1String("5000")));
    // The next snapshot holds the same operations: nothing is told again.
    const qsizetype before = told.count();
    QSignalSpy updated(overview, &OverviewModel::updated);
    overview->refresh();
    QVERIFY(updated.wait());
    QCOMPARE(told.count(), before);
}

QTEST_MAIN(TestNotifyAbove)
#include "tst_notifyabove.moc"
