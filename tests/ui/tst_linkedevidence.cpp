// SPDX-License-Identifier: Apache-2.0
// Linked evidence in the console, offscreen on a prepared ledger: an audit row opens its
// operation in the Find tab, an operation opens its audit records, a timeline bar opens its
// operation, and "Export evidence pack…" writes a pack that verifies.
#include <QAction>
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QMenuBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QtTest>

#include "approvecommand.h"
#include "audittablemodel.h"
#include "auditview.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "evidencepack.h"
#include "filterbar.h"
#include "guardsettingcommand.h"
#include "ledgertableview.h"
#include "operationdetailpane.h"
#include "operationsview.h"
#include "operationtablemodel.h"
#include "runsview.h"
#include "runtablemodel.h"
#include "timelinewidget.h"

using namespace idempo;

class TestLinkedEvidence final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void auditRowOpensItsOperation();
    void operationOpensItsAuditRecords();
    void timelineBarOpensItsOperation();
    void evidencePackFromTheConsole();
    void cleanupTestCase() { m_window.reset(); }

private:
    template <typename View> View *view() const
    {
        for (LedgerView *v : m_window->views())
            if (auto *found = qobject_cast<View *>(v))
                return found;
        return nullptr;
    }
    QAction *menuAction(const QString &text) const
    {
        for (QAction *a : m_window->menuBar()->findChildren<QAction *>())
            if (a->text() == text)
                return a;
        return nullptr;
    }
    /// The operation the Find tab has selected and its detail pane shows.
    QString selectedInFind() const
    {
        const auto *find = view<OperationsView>();
        const QModelIndex current = find->table()->currentIndex();
        if (!current.isValid() || !find->detail()->operation())
            return {};
        return QString::fromStdString(find->detail()->operation()->key);
    }

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
};

void TestLinkedEvidence::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    LedgerStore &store = m_fixture->store();
    GuardSettingCommand(store, store.actor(), "four_eyes_above", "", "policy").execute();
    ApproveCommand::Request reject;
    reject.key = "run-7004:send_invoice";
    reject.decision = ApprovalDecision::Reject;
    reject.reason = "invoice sent by hand";
    ApproveCommand(store, store.actor(), reject).execute();
    m_window = test::openConsole(m_fixture->url(), QSize(1024, 700));
    QVERIFY(m_window);
}

void TestLinkedEvidence::auditRowOpensItsOperation()
{
    auto *audit = view<AuditView>();
    QSignalSpy loaded(audit, &AuditView::loaded);
    m_window->tabs()->setCurrentWidget(audit);
    audit->reload();
    QTRY_COMPARE(audit->model()->rowCount(), 2);
    // Newest first: the rejection, then the setting (which names no operation).
    QCOMPARE(audit->model()->recordAt(0).entry.target,
             std::string("default/run-7004:send_invoice"));
    LedgerTableView *table = audit->table();
    const QModelIndex setting = audit->model()->index(1, AuditTableModel::Target);
    table->setCurrentIndex(setting);
    Q_EMIT table->doubleClicked(setting);
    QCOMPARE(m_window->tabs()->currentWidget(), static_cast<QWidget *>(audit)); // nothing to open

    const QModelIndex row = audit->model()->index(0, AuditTableModel::Target);
    table->setCurrentIndex(row);
    Q_EMIT table->doubleClicked(row);
    QCOMPARE(m_window->tabs()->currentWidget(), static_cast<QWidget *>(view<OperationsView>()));
    QTRY_COMPARE(selectedInFind(), QStringLiteral("run-7004:send_invoice"));
    QCOMPARE(view<OperationsView>()->filters()->ns(), QStringLiteral("default"));
}

void TestLinkedEvidence::operationOpensItsAuditRecords()
{
    QTRY_COMPARE(selectedInFind(), QStringLiteral("run-7004:send_invoice"));
    QAction *records = menuAction(QStringLiteral("&Audit records of this operation"));
    QVERIFY(records);
    records->trigger();
    auto *audit = view<AuditView>();
    QCOMPARE(m_window->tabs()->currentWidget(), static_cast<QWidget *>(audit));
    QCOMPARE(audit->targetFilter()->text(), QStringLiteral("default/run-7004:send_invoice"));
    QVERIFY(audit->wholeTarget()->isChecked());
    QTRY_COMPARE(audit->model()->filter().target, std::string("default/run-7004:send_invoice"));
    QTRY_COMPARE(audit->model()->rowCount(), 1);
    QCOMPARE(audit->model()->recordAt(0).entry.action, std::string("reject"));

    if (const QString dir = qEnvironmentVariable("IDEMPO_SCREENSHOT_DIR"); !dir.isEmpty()) {
        QDir().mkpath(dir);
        audit->table()->setCurrentIndex(audit->model()->index(0, 0));
        QVERIFY(m_window->grab().save(QDir(dir).filePath(QStringLiteral("08-audit-filtered.png"))));
    }
}

void TestLinkedEvidence::timelineBarOpensItsOperation()
{
    auto *runs = view<RunsView>();
    m_window->tabs()->setCurrentWidget(runs);
    runs->filters()->setRunId(QStringLiteral("run-7001"));
    QTRY_COMPARE(runs->model()->rowCount(), 1);
    QSignalSpy loaded(runs, &RunsView::timelineLoaded);
    runs->table()->setCurrentIndex(runs->model()->index(0, 0));
    QVERIFY(loaded.wait());
    TimelineWidget *timeline = runs->timeline();
    QVERIFY(timeline->timeline().lanes.size() >= 2);
    const QString key = QString::fromStdString(timeline->timeline().lanes[1].key);
    QCOMPARE(timeline->keyAt(timeline->barCentre(1)), key);
    QTest::mouseDClick(timeline, Qt::LeftButton, {}, timeline->barCentre(1));
    QCOMPARE(m_window->tabs()->currentWidget(), static_cast<QWidget *>(view<OperationsView>()));
    QTRY_COMPARE(selectedInFind(), key);
}

void TestLinkedEvidence::evidencePackFromTheConsole()
{
    QVERIFY(menuAction(QStringLiteral("Export &evidence pack…")));
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("pack.json"));
    QSignalSpy exported(m_window.get(), &MainWindow::evidenceExported);
    m_window->exportEvidence(QStringLiteral("default"), QStringLiteral("run-7004:send_invoice"),
                             path);
    QVERIFY(exported.wait());
    QVERIFY2(exported.at(0).at(0).toBool(), qPrintable(exported.at(0).at(1).toString()));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const auto pack = nlohmann::json::parse(file.readAll().toStdString());
    QCOMPARE(pack["audit_records"].size(), std::size_t{1});
    QCOMPARE(pack["approvals"].size(), std::size_t{1});
    const EvidencePack::Verdict verdict = EvidencePack::verify(pack);
    QVERIFY2(verdict.ok, verdict.problem.c_str());
    QCOMPARE(verdict.records, std::int64_t{1});
    // The status line names the pack's figures.
    QCOMPARE(exported.at(0).at(1).toString(),
             QStringLiteral("Evidence pack written to %1: 1 audit record(s), chain head record %2")
                 .arg(path, QString::number(pack["chain"]["head"]["seq"].get<qint64>())));
}

QTEST_MAIN(TestLinkedEvidence)
#include "tst_linkedevidence.moc"
