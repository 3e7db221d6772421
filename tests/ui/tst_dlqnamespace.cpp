// SPDX-License-Identifier: Apache-2.0
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>

#include "actioncontroller.h"
#include "consolefixture.h"
#include "deadlettertablemodel.h"
#include "dlqview.h"
#include "guardedactiondialog.h"
#include "mainwindow.h"
#include "queueenvelope.h"

using namespace idempo;

/// A DLQ replay from the console over a queue that carries messages of a namespace other than
/// `default`: the dry run judges each message in the namespace that records its key, and the
/// replay requeues only what that judgement allows.
class TestDlqNamespace final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void dryRunAndReplayUseEachMessagesNamespace();
};

namespace {

std::string envelope(const std::string &key, const std::string &payload, std::int64_t atMs)
{
    const std::string run = key.substr(0, key.find(':'));
    const std::string step = key.substr(key.find(':') + 1);
    return R"({"run_id":")" + run + R"(","step_id":")" + step +
           R"(","source_agent":"planner","target_agent":"orders","payload":)" + payload +
           R"(,"produced_at":)" + std::to_string(atMs) + R"(,"idempotency_key":")" + key + "\"}";
}

} // namespace

void TestDlqNamespace::dryRunAndReplayUseEachMessagesNamespace()
{
    test::ConsoleFixture fixture;
    Engine &e = fixture.engine();
    const auto claim = [&](const std::string &ns, const std::string &key) {
        ClaimInput in;
        in.ns = ns;
        in.key = key;
        in.runId = key.substr(0, key.find(':'));
        in.stepId = key.substr(key.find(':') + 1);
        in.payloadJson = R"({"order":1})";
        in.owner = "worker-t";
        return e.claim(in);
    };
    const ClaimResult done = claim("tenant-b", "run-1:charge");
    e.complete("tenant-b", done.operation.key, done.operation.fencingToken, R"({"ok":true})",
               R"({"ref":"R-1"})");
    claim("tenant-b", "run-1:ship");
    claim("tenant-b", "run-1:mail");

    SqliteMessageQueue &q = fixture.queues();
    q.createQueue("orders", QueueOptions{1});
    const std::int64_t now = fixture.clock().nowMs();
    // The completed one with its own payload; the other two with a changed payload; one key no
    // namespace records yet.
    for (const std::string &m : {envelope("run-1:charge", R"({"order":1})", now),
                                 envelope("run-1:ship", R"({"order":2})", now),
                                 envelope("run-1:mail", R"({"order":2})", now),
                                 envelope("run-2:new", R"({"order":3})", now)})
        q.send("orders", m, "", 0);
    for (const QueueMessage &m : q.read("orders", 30'000, 10))
        q.nack("orders", m.msgId, ErrorClass::Transient, "orders API 503", 0);
    q.read("orders", 30'000, 10);
    QCOMPARE(q.deadLetters("orders", 0, 10).size(), std::size_t{4});

    MainWindow window;
    window.setInteractive(false);
    QSignalSpy opened(&window, &MainWindow::ledgerOpened);
    window.show();
    window.openLedger(fixture.url());
    QVERIFY(opened.wait());
    auto *dlq = qobject_cast<DlqView *>(window.views().at(5));
    QVERIFY(dlq);
    window.tabs()->setCurrentWidget(dlq);
    QTRY_COMPARE(dlq->model()->rowCount(), 4);
    QTRY_VERIFY(dlq->replayButton()->isEnabled());
    window.actions()->setReplayRate(1000);
    QSignalSpy dialogs(window.actions(), &ActionController::dialogOpened);
    dlq->replayButton()->click();
    QVERIFY(dialogs.wait());
    GuardedActionDialog *dialog = window.actions()->dialog();
    auto *table = dialog->findChild<QTableWidget *>();
    QVERIFY(table);
    QCOMPARE(table->rowCount(), 4);
    QMap<QString, QString> classOf;
    QMap<QString, QString> nsOf;
    for (int r = 0; r < table->rowCount(); ++r) {
        classOf[table->item(r, 2)->text()] = table->item(r, 3)->text();
        nsOf[table->item(r, 2)->text()] = table->item(r, 1)->text();
    }
    QCOMPARE(classOf.value(QStringLiteral("run-1:charge")), QStringLiteral("already_completed"));
    QCOMPARE(classOf.value(QStringLiteral("run-1:ship")), QStringLiteral("payload_mismatch"));
    QCOMPARE(classOf.value(QStringLiteral("run-1:mail")), QStringLiteral("payload_mismatch"));
    QCOMPARE(classOf.value(QStringLiteral("run-2:new")), QStringLiteral("will_execute"));
    QCOMPARE(nsOf.value(QStringLiteral("run-1:ship")), QStringLiteral("tenant-b"));
    QCOMPARE(nsOf.value(QStringLiteral("run-2:new")), QStringLiteral("default"));

    // Two will be requeued (one suppressed as a replay, one new); the mismatches stay.
    dialog->reasonEdit()->setPlainText(QStringLiteral("orders API back up"));
    dialog->countEdit()->setText(QStringLiteral("4"));
    QVERIFY(!dialog->okButton()->isEnabled());
    dialog->countEdit()->setText(QStringLiteral("2"));
    QVERIFY(dialog->okButton()->isEnabled());
    QSignalSpy executed(window.actions(), &ActionController::executed);
    dialog->okButton()->click();
    QVERIFY(executed.wait(10'000));
    QVERIFY2(executed.at(0).at(0).toBool(), qPrintable(executed.at(0).at(1).toString()));
    QStringList left;
    for (const DeadLetter &d : q.deadLetters("orders", 0, 10))
        left << QString::fromStdString(
            QueueEnvelope::fromJson(nlohmann::json::parse(d.message.message)).idempotencyKey);
    left.sort();
    QCOMPARE(left, QStringList({QStringLiteral("run-1:mail"), QStringLiteral("run-1:ship")}));
}

QTEST_MAIN(TestDlqNamespace)
#include "tst_dlqnamespace.moc"
