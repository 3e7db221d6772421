// SPDX-License-Identifier: Apache-2.0
// Live updates from a PostgreSQL ledger: run through tests/pg/with-postgres.sh, which exports
// IDEMPO_TEST_POSTGRES_URL; skipped without it.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTest>

#include "engine.h"
#include "ledgerconnection.h"
#include "operationtablemodel.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"

using namespace idempo;

/// Changes written by another connection reach the console's models as notifications.
class TestLedgerConnection final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void notificationReachesModelWithoutPolling();
    void reconnectsAfterTheListenerDrops();
    void aLongQuerySaysWhyUpdatesAreStale();

private:
    QString m_url;
};

namespace {

/// A dispatching operation of run `runId`, written through a store of its own (another worker).
void claimElsewhere(const QString &url, const std::string &runId, const std::string &step)
{
    Engine engine(std::make_shared<PostgresLedgerStore>(url.toStdString()));
    ClaimInput in;
    in.key = runId + ":" + step;
    in.runId = runId;
    in.stepId = step;
    in.payloadJson = R"({"amount":1})";
    in.owner = "other-worker";
    QCOMPARE(engine.claim(in).outcome, ClaimOutcome::Claimed);
}

OperationQuery runQuery(const std::string &runId)
{
    OperationQuery q;
    q.runId = runId;
    return q;
}

/// Opens `c` on `url`, polling every 200 ms, and waits until its live updates run.
bool openLive(LedgerConnection &c, const QString &url)
{
    c.setPollInterval(200);
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(url);
    if (!opened.wait(10'000))
        return false;
    return QTest::qWaitFor([&c] { return c.isLive(); }, 5000);
}

} // namespace

void TestLedgerConnection::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    m_url = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
    if (m_url.isEmpty())
        QSKIP("IDEMPO_TEST_POSTGRES_URL is not set (run through tests/pg/with-postgres.sh)");
    PostgresLedgerStore(m_url.toStdString()).migrate();
}

void TestLedgerConnection::notificationReachesModelWithoutPolling()
{
    LedgerConnection c;
    c.setPollInterval(3'600'000); // no tick during the test: only a notification can refresh
    QSignalSpy opened(&c, &LedgerConnection::opened);
    c.open(m_url);
    QVERIFY(opened.wait(10'000));
    OperationTableModel m(&c);
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QObject::connect(&c, &LedgerConnection::changed, &m, [&m] { m.refresh(); }); // as the views do
    QSignalSpy loaded(&m, &OperationTableModel::pageLoaded);
    m.setQuery(runQuery("notify-1"));
    QVERIFY(loaded.wait(5000));
    QCOMPARE(m.rowCount(), 0);

    claimElsewhere(m_url, "notify-1", "reserve");
    QTRY_COMPARE_WITH_TIMEOUT(m.rowCount(), 1, 5000);
    QCOMPARE(m.index(0, OperationTableModel::Key).data().toString(),
             QStringLiteral("notify-1:reserve"));
    QCOMPARE(m.index(0, OperationTableModel::State).data().toString(),
             QStringLiteral("dispatching"));
}

void TestLedgerConnection::reconnectsAfterTheListenerDrops()
{
    LedgerConnection c;
    QVERIFY(openLive(c, m_url));
    OperationTableModel m(&c);
    QObject::connect(&c, &LedgerConnection::changed, &m, [&m] { m.refresh(); });
    QSignalSpy loaded(&m, &OperationTableModel::pageLoaded);
    m.setQuery(runQuery("notify-2"));
    QVERIFY(loaded.wait(5000));
    QCOMPARE(m.rowCount(), 0);

    QSignalSpy live(&c, &LedgerConnection::liveChanged);
    // The feed's session is the one waiting in idempo.wait_for_changes().
    PgConnection admin(m_url.toStdString());
    // A feed closed by the previous test ends its last wait (at most PgChangeFeed::WaitMs) first.
    QTRY_COMPARE_WITH_TIMEOUT(
        admin
            .exec("count feeds",
                  "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                  "AND pid <> pg_backend_pid() AND query LIKE '%idempo.wait_for_changes%'")
            .integer(0, 0),
        std::int64_t(1), 5000);
    const PgResult killed =
        admin.exec("terminate listener",
                   "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = "
                   "current_database() "
                   "AND pid <> pg_backend_pid() AND query LIKE '%idempo.wait_for_changes%'");
    QCOMPARE(killed.integer(0, 0), std::int64_t(1));
    QTRY_VERIFY_WITH_TIMEOUT(!live.isEmpty() && !live.first().first().toBool(), 5000);
    QVERIFY(c.lastError().contains(QLatin1String("live updates")));
    QTRY_VERIFY_WITH_TIMEOUT(c.isLive(), 5000);

    claimElsewhere(m_url, "notify-2", "book");
    QTRY_COMPARE_WITH_TIMEOUT(m.rowCount(), 1, 5000);
}

void TestLedgerConnection::aLongQuerySaysWhyUpdatesAreStale()
{
    LedgerConnection c;
    QVERIFY(openLive(c, m_url));
    // A query that keeps the worker (and so its polls) busy past the stale limit.
    c.query(
        &c,
        [](LedgerStore &store, MessageQueue *) {
            dynamic_cast<PostgresLedgerStore &>(store).connection().exec("long query",
                                                                         "SELECT pg_sleep(4.5)");
            return 0;
        },
        [](int) {});
    QTRY_VERIFY_WITH_TIMEOUT(!c.isLive(), 5000);
    QVERIFY2(c.lastError().contains(QLatin1String("no answer from the ledger for")),
             qPrintable(c.lastError()));
    QTRY_VERIFY_WITH_TIMEOUT(c.isLive(), 5000);
}

QTEST_MAIN(TestLedgerConnection)
#include "tst_ledgerconnection.moc"
