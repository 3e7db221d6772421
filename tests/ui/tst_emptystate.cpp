// SPDX-License-Identifier: Apache-2.0
// The console's first start, offscreen: on an empty embedded ledger the Overview shows the
// first steps instead of six zeros and empty charts, and every list says what it would hold and
// what to do next; the links go where they say; once an operation exists both give way to the
// figures and the rows, and a list emptied by its filters says so.
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTest>

#include "auditview.h"
#include "consolefixture.h"
#include "consolewindow.h"
#include "emptystate.h"
#include "filterbar.h"
#include "firststepspanel.h"
#include "leasesview.h"
#include "ledgertableview.h"
#include "ledgerview.h"
#include "mainwindow.h"
#include "overviewmodel.h"
#include "overviewview.h"
#include "runsview.h"
#include "sandboxpanel.h"
#include "stattile.h"
#include "suppressionsview.h"

using namespace idempo;

class TestEmptyState final : public QObject
{
    Q_OBJECT

private:
    template <typename View> View *view() const
    {
        for (LedgerView *v : m_window->views())
            if (auto *found = qobject_cast<View *>(v))
                return found;
        return nullptr;
    }

    OverviewView *overview() const { return view<OverviewView>(); }

    std::unique_ptr<test::ConsoleFixture> m_fixture;
    std::unique_ptr<MainWindow> m_window;

private Q_SLOTS:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void init()
    {
        m_fixture = std::make_unique<test::ConsoleFixture>(); // migrated, nothing written
        m_window = test::openConsole(m_fixture->url(), QSize(1024, 700));
        QVERIFY(m_window);
        QTRY_VERIFY(overview()->model()->hasSnapshot());
    }

    void cleanup()
    {
        m_window.reset();
        m_fixture.reset();
    }

    void emptyLedgerShowsFirstSteps()
    {
        FirstStepsPanel *steps = overview()->firstSteps();
        QVERIFY(steps->isVisible());
        QVERIFY(!overview()->tile(QStringLiteral("leases"))->isVisible());
        QVERIFY(steps->sandboxButton()->isVisible());
        QCOMPARE(steps->connectButton()->text(), QStringLiteral("Open a PostgreSQL ledger…"));

        // Every list says what it would hold and what to do first.
        const QList<LedgerView *> lists{view<LeasesView>(), view<SuppressionsView>(),
                                        view<RunsView>(), view<AuditView>()};
        for (LedgerView *list : lists) {
            m_window->tabs()->setCurrentWidget(list);
            EmptyState *empty = list->emptyState();
            QTRY_VERIFY2(empty->isVisible(), list->metaObject()->className());
            QVERIFY2(empty->text().contains(QLatin1String(FirstStepsPanel::SandboxLink)),
                     qPrintable(empty->text()));
            QVERIFY(empty->text().contains(QLatin1String(FirstStepsPanel::ConnectLink)));
        }
        QVERIFY(view<LeasesView>()->emptyState()->text().contains(
            QLatin1String("No leases in flight")));

        // The button and the lists' link both go to the Sandbox tab.
        m_window->tabs()->setCurrentIndex(0);
        QTest::mouseClick(steps->sandboxButton(), Qt::LeftButton);
        QCOMPARE(m_window->tabs()->currentWidget(), view<SandboxPanel>());
        m_window->tabs()->setCurrentWidget(view<RunsView>());
        Q_EMIT view<RunsView>()->emptyState()->linkActivated(
            QLatin1String(FirstStepsPanel::SandboxLink));
        QCOMPARE(m_window->tabs()->currentWidget(), view<SandboxPanel>());
    }

    void firstOperationReplacesTheEmptyState()
    {
        m_fixture->claimNew("run-1:provision_account", "run-1");
        m_window->tabs()->setCurrentIndex(0);
        QTRY_VERIFY_WITH_TIMEOUT(!overview()->firstSteps()->isVisible(), 10'000);
        QVERIFY(overview()->tile(QStringLiteral("leases"))->isVisible());
        QCOMPARE(overview()->tile(QStringLiteral("leases"))->value(), QStringLiteral("1"));

        auto *leases = view<LeasesView>();
        m_window->tabs()->setCurrentWidget(leases);
        QTRY_COMPARE(leases->table()->model()->rowCount(), 1);
        QTRY_VERIFY(!leases->emptyState()->isVisible());

        // A list still empty says what it would hold, without the first steps.
        auto *suppressions = view<SuppressionsView>();
        m_window->tabs()->setCurrentWidget(suppressions);
        QTRY_VERIFY(suppressions->emptyState()->isVisible());
        QVERIFY(suppressions->emptyState()->text().contains(
            QLatin1String("No duplicate suppressed yet")));
        QVERIFY(!suppressions->emptyState()->text().contains(
            QLatin1String(FirstStepsPanel::SandboxLink)));

        // Filters that hide every row say so, and the link clears them.
        m_window->tabs()->setCurrentWidget(leases);
        leases->filters()->setKeyPrefix(QStringLiteral("no-such-key"));
        QTRY_VERIFY(leases->emptyState()->isVisible());
        QVERIFY(
            leases->emptyState()->text().contains(QLatin1String("Nothing matches these filters")));
        Q_EMIT leases->emptyState()->linkActivated(QLatin1String(EmptyState::ClearFiltersLink));
        QVERIFY(!leases->filters()->isActive());
        QTRY_COMPARE(leases->table()->model()->rowCount(), 1);
        QVERIFY(!leases->emptyState()->isVisible());
    }
};

QTEST_MAIN(TestEmptyState)
#include "tst_emptystate.moc"
