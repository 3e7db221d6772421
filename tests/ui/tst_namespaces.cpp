// SPDX-License-Identifier: Apache-2.0
#include <QCheckBox>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "confirmationsview.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "filterbar.h"
#include "ledgertableview.h"
#include "mainwindow.h"
#include "operationdetailpane.h"
#include "operationsview.h"
#include "operationtablemodel.h"
#include "runsview.h"
#include "runtablemodel.h"

using namespace idempo;

/// Namespaces in the views, offscreen: a column and a filter; the same run id in two namespaces
/// is two runs; sandbox namespaces stay out of the review views unless asked for; an operation
/// without a run id is found and shown.
class TestNamespaces final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }
    void init();
    void cleanup();
    void reviewViewsHideSandboxUnlessAsked();
    void runsAreKeyedByNamespaceAndRun();
    void operationWithoutRunIsFound();

private:
    template <typename View> View *show();

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;
};

void TestNamespaces::init()
{
    m_fixture = std::make_unique<test::ConsoleFixture>();
    m_fixture->populate();
    const auto gated = [this](const std::string &ns, const std::string &key,
                              const std::string &runId) {
        ClaimInput in;
        in.ns = ns;
        in.key = key;
        in.runId = runId;
        in.stepId = runId.empty() ? std::string() : "refund";
        in.payloadJson = R"({"customer":"c-77","amount":900})";
        in.owner = "worker-n";
        in.requiresApproval = true;
        m_fixture->engine().claim(in);
    };
    gated("tenant-b", "run-7002:refund", "run-7002");
    gated("sandbox-x", "run-9:refund", "run-9");
    gated("default", "loose-key-1", "");
    m_window = test::openConsole(m_fixture->url());
    QVERIFY(m_window);
}

void TestNamespaces::cleanup()
{
    m_window.reset();
    m_fixture.reset();
}

template <typename View> View *TestNamespaces::show()
{
    for (LedgerView *v : m_window->views())
        if (auto *view = qobject_cast<View *>(v)) {
            m_window->tabs()->setCurrentWidget(view);
            return view;
        }
    return nullptr;
}

void TestNamespaces::reviewViewsHideSandboxUnlessAsked()
{
    auto *view = show<ConfirmationsView>();
    // The prepared three, tenant-b's refund and the one without a run; not the sandbox's.
    QTRY_COMPARE(view->model()->rowCount(), test::ConsoleFixture::NeedsPerson + 1 + 2);
    QStringList namespaces;
    for (int r = 0; r < view->model()->rowCount(); ++r)
        namespaces << view->model()->index(r, OperationTableModel::Namespace).data().toString();
    QVERIFY(namespaces.contains(QStringLiteral("tenant-b")));
    QVERIFY(!namespaces.contains(QStringLiteral("sandbox-x")));
    QCOMPARE(view->model()->headerData(OperationTableModel::Namespace, Qt::Horizontal).toString(),
             QStringLiteral("Namespace"));

    auto *hide = view->filters()->findChild<QCheckBox *>();
    QVERIFY(hide);
    QVERIFY(hide->isChecked());
    hide->setChecked(false);
    QTRY_COMPARE(view->model()->rowCount(), test::ConsoleFixture::NeedsPerson + 1 + 3);

    view->filters()->setNamespace(QStringLiteral("tenant-b"));
    QTRY_COMPARE(view->model()->rowCount(), 1);
    QCOMPARE(view->model()->operationAt(view->model()->index(0, 0)).ns, std::string("tenant-b"));
    view->filters()->setNamespace(QStringLiteral("sandbox-x"));
    QTRY_COMPARE(view->model()->rowCount(), 1);
    view->filters()->clear();
    QVERIFY(hide->isChecked());
    QTRY_COMPARE(view->model()->rowCount(), test::ConsoleFixture::NeedsPerson + 1 + 2);
}

void TestNamespaces::runsAreKeyedByNamespaceAndRun()
{
    auto *view = show<RunsView>();
    QTRY_VERIFY(view->model()->rowCount() > 0);
    QTRY_VERIFY(!view->model()->canFetchMore({}));
    QStringList seen;
    for (int r = 0; r < view->model()->rowCount(); ++r)
        if (view->model()->runAt(r).runId == "run-7002")
            seen << view->model()->index(r, RunTableModel::Namespace).data().toString();
    seen.sort();
    QCOMPARE(seen, QStringList({QStringLiteral("default"), QStringLiteral("tenant-b")}));
    view->filters()->setNamespace(QStringLiteral("tenant-b"));
    QTRY_COMPARE(view->model()->rowCount(), 1);
    QCOMPARE(view->model()->runAt(0).steps(), 1);
}

void TestNamespaces::operationWithoutRunIsFound()
{
    auto *view = show<OperationsView>();
    view->filters()->setKeyPrefix(QStringLiteral("loose-key"));
    QTRY_COMPARE(view->model()->rowCount(), 1);
    QCOMPARE(view->model()->index(0, OperationTableModel::Run).data().toString(), QString());
    QSignalSpy history(view->detail(), &OperationDetailPane::historyLoaded);
    view->table()->setCurrentIndex(view->model()->index(0, 0));
    QVERIFY(history.wait());
    QCOMPARE(view->detail()->operation()->key, std::string("loose-key-1"));
    QVERIFY(view->detail()->factsText().contains(QLatin1String("run (none)")));
    QTRY_VERIFY(view->detail()->actionButton(OperationAction::Redispatch)->isEnabled());
}

QTEST_MAIN(TestNamespaces)
#include "tst_namespaces.moc"
