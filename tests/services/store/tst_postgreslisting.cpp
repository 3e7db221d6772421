// SPDX-License-Identifier: Apache-2.0
// The shared ledger's listing (schema 23): listings read idempo.operation_listing, which
// idempo.refresh_listing() fills from the change feed after the writes committed. A write is
// listed once it committed, however it was made (here: the SQL functions on a connection of
// their own, as any client's); a record claimed again under a new id, or purged, leaves it.
// Runs under tests/pg/with-postgres.sh.
#include <QElapsedTimer>
#include <QtTest>

#include "migrations.h"
#include "oldschemaledger.h"
#include "operationkeys.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgrestesthelpers.h"

using namespace idempo;
using test::keysOf;
using test::pg::testUrl;

namespace {

ListFilter inState(OperationState state)
{
    ListFilter f;
    f.state = state;
    return f;
}

ListFilter forCustomer(const std::string &customer)
{
    ListFilter f;
    f.customer = customer;
    return f;
}

/// idempo.claim of `key` for `customer` by another client; its fencing token.
std::int64_t claimBySql(PgConnection &c, const std::string &key, const std::string &customer)
{
    const std::string payload = R"({"customer":")" + customer + R"("})";
    return c
        .exec("claim",
              "SELECT fencing_token FROM idempo.claim('default', $1, $2, idempo.sha256_hex($2), "
              "'worker')",
              PgParams().text(key).text(payload))
        .integer(0, 0);
}

void completeBySql(PgConnection &c, const std::string &key, std::int64_t token,
                   std::int64_t retentionMs = 86400000)
{
    c.exec("complete",
           "SELECT state FROM idempo.transition('default', $1, 'dispatching', $2::bigint, "
           "'succeeded', 'worker', 'done', '{}', NULL, NULL, NULL, NULL, NULL, NULL, $3::bigint)",
           PgParams().text(key).integer(token).integer(retentionMs));
}

std::int64_t count(PgConnection &c, const std::string &sql)
{
    return c.exec("count", sql).integer(0, 0);
}

} // namespace

class TestPostgresListing final : public QObject
{
    Q_OBJECT

private:
    std::string m_ledger;
    int m_databases = 0;

private Q_SLOTS:
    void init()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        // A database of each test's own: dropping one ends the connections opened on it.
        m_ledger = test::freshPostgresDatabase("idempo_listing_" + std::to_string(++m_databases));
    }

    void aLedgerOfSchema22IsListedAfterTheMigration()
    {
        {
            PgConnection c(m_ledger);
            test::migratePostgresTo(c, 22);
            completeBySql(c, "old-done", claimBySql(c, "old-done", "acme"));
            claimBySql(c, "old-open", "globex");
        }
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        QCOMPARE(store.schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        QCOMPARE(keysOf(store.list(inState(OperationState::Succeeded))),
                 std::vector<std::string>{"old-done"});
        QCOMPARE(keysOf(store.list(inState(OperationState::Dispatching))),
                 std::vector<std::string>{"old-open"});
        QCOMPARE(keysOf(store.list(forCustomer("acme"))), std::vector<std::string>{"old-done"});
        // Listed by the migration, not again by the first refresh.
        PgConnection c(m_ledger);
        QCOMPARE(count(c, "SELECT idempo.refresh_listing()"), std::int64_t(0));
    }

    void aWriteIsListedOnceItCommitted()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection writer(m_ledger);
        writer.exec("begin", "BEGIN");
        const std::int64_t token = claimBySql(writer, "late", "initech");
        // A refresh while the claim is open does not list it, and does not pass it by either.
        QVERIFY(store.list({}).empty());
        writer.exec("commit", "COMMIT");
        QCOMPARE(keysOf(store.list(inState(OperationState::Dispatching))),
                 std::vector<std::string>{"late"});
        QCOMPARE(keysOf(store.list(forCustomer("initech"))), std::vector<std::string>{"late"});

        completeBySql(writer, "late", token);
        QVERIFY(store.list(inState(OperationState::Dispatching)).empty());
        const std::vector<Operation> done = store.list(inState(OperationState::Succeeded));
        QCOMPARE(keysOf(done), std::vector<std::string>{"late"});
        QCOMPARE(done.front().state, OperationState::Succeeded);
        QCOMPARE(store.metrics("default").leasesLive, std::int64_t(0));
        // The payload's leaves were written once, when the record was first listed.
        QCOMPARE(count(writer, "SELECT count(*) FROM idempo.payload_fields WHERE pointer = "
                               "'#customer'"),
                 std::int64_t(1));
    }

    void aReadOnlyTransactionRefreshesNothing()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection c(m_ledger);
        claimBySql(c, "seen-later", "acme");
        PgConnection reader(m_ledger);
        reader.exec("begin", "BEGIN READ ONLY");
        QVERIFY(reader.exec("refresh", "SELECT idempo.refresh_listing()").isNull(0, 0));
        reader.exec("commit", "COMMIT");
        QCOMPARE(keysOf(store.list({})), std::vector<std::string>{"seen-later"});
    }

    void aRefreshInsideAWritingTransactionTakesUpItsLaterWrites()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection mine(m_ledger);
        PgConnection other(m_ledger);
        mine.exec("begin", "BEGIN");
        claimBySql(mine, "before", "acme");
        claimBySql(other, "meanwhile", "acme"); // a later transaction id, committed first
        mine.exec("refresh", "SELECT idempo.refresh_listing()");
        claimBySql(mine, "after", "acme");
        mine.exec("commit", "COMMIT");
        QCOMPARE(keysOf(store.list({})),
                 (std::vector<std::string>{"before", "meanwhile", "after"}));

        // A transaction whose first write is the refresh's own.
        mine.exec("begin", "BEGIN");
        mine.exec("refresh", "SELECT idempo.refresh_listing()");
        claimBySql(other, "pending", "acme");
        mine.exec("refresh", "SELECT idempo.refresh_listing()");
        claimBySql(mine, "last", "acme");
        mine.exec("commit", "COMMIT");
        QCOMPARE(keysOf(store.list(forCustomer("acme"))),
                 (std::vector<std::string>{"before", "meanwhile", "after", "pending", "last"}));
    }

    void aListingRowWithoutItsOperationDoesNotShortenAPage()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection c(m_ledger);
        claimBySql(c, "live", "acme");
        store.list({});
        // What a refresh racing a delete may leave: a row for an id no operation has.
        c.exec("orphan",
               "INSERT INTO idempo.operation_listing (id, namespace, operation_key, run_id, "
               "state, updated_at_ms) VALUES (1000000, 'default', 'gone', '', "
               "'dispatching', 0)");
        c.exec("orphan leaf", "INSERT INTO idempo.payload_fields VALUES ('#customer', 'acme', "
                              "1000000)");
        ListFilter one;
        one.limit = 1;
        one.order = ListOrder::IdDescending;
        QCOMPARE(keysOf(store.list(one)), std::vector<std::string>{"live"});
        ListFilter oneDispatching = one;
        oneDispatching.state = OperationState::Dispatching;
        QCOMPARE(keysOf(store.list(oneDispatching)), std::vector<std::string>{"live"});
        ListFilter oneForAcme = forCustomer("acme");
        oneForAcme.limit = 1;
        oneForAcme.afterId = 1; // past "live": only the row without an operation is left
        QVERIFY(store.list(oneForAcme).empty());
    }

    void aRefreshHeldOpenBlocksNeitherListsNorWriters()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection c(m_ledger);
        completeBySql(c, "renewed", claimBySql(c, "renewed", "acme"), 0);
        // A session that refreshes and keeps its transaction (and the locks) open.
        PgConnection holder(m_ledger);
        holder.exec("begin", "BEGIN");
        QCOMPARE(count(holder, "SELECT idempo.refresh_listing()"), std::int64_t(1));

        claimBySql(c, "waiting", "globex");
        QElapsedTimer waited;
        waited.start();
        QCOMPARE(keysOf(store.list({})), std::vector<std::string>{}); // served as it stands
        QVERIFY2(waited.elapsed() < 5000, qPrintable(QString::number(waited.elapsed())));
        // A claim of the expired key again renews the record the holder's listing row names.
        PgConnection writer(m_ledger);
        writer.exec("timeout", "SET statement_timeout = '5s'");
        claimBySql(writer, "renewed", "initech");

        holder.exec("commit", "COMMIT");
        QCOMPARE(keysOf(store.list({})), (std::vector<std::string>{"waiting", "renewed"}));
        QVERIFY(store.list(forCustomer("acme")).empty());
        QCOMPARE(keysOf(store.list(forCustomer("initech"))), std::vector<std::string>{"renewed"});
    }

    void aRepeatableReadSnapshotOlderThanTheLastRefreshRefreshesNothing()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection reader(m_ledger);
        PgConnection c(m_ledger);
        claimBySql(c, "first", "acme");
        reader.exec("begin", "BEGIN ISOLATION LEVEL REPEATABLE READ");
        reader.exec("snapshot", "SELECT 1"); // sees "first" not yet taken up
        QCOMPARE(keysOf(store.list({})), std::vector<std::string>{"first"});
        claimBySql(c, "second", "acme");
        QVERIFY(reader.exec("refresh", "SELECT idempo.refresh_listing()").isNull(0, 0));
        reader.exec("commit", "COMMIT");
        QCOMPARE(keysOf(store.list({})), (std::vector<std::string>{"first", "second"}));
    }

    void aListerDoesNotWaitForAWriterThatHoldsAListingRow()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection c(m_ledger);
        const std::int64_t token = claimBySql(c, "renewed", "acme");
        QCOMPARE(keysOf(store.list({})), std::vector<std::string>{"renewed"});
        completeBySql(c, "renewed", token, 0);
        // A worker claims the expired key again and keeps its transaction open: its trigger
        // holds the listing row of the old id, which the next refresh takes up.
        PgConnection worker(m_ledger);
        worker.exec("begin", "BEGIN");
        claimBySql(worker, "renewed", "globex");
        QElapsedTimer waited;
        waited.start();
        store.list({});
        QVERIFY2(waited.elapsed() < 5000, qPrintable(QString::number(waited.elapsed())));
        // The worker refreshing in its own transaction meets no lock cycle.
        worker.exec("refresh", "SELECT idempo.refresh_listing()");
        worker.exec("commit", "COMMIT");
        QCOMPARE(keysOf(store.list(forCustomer("globex"))), std::vector<std::string>{"renewed"});
        QVERIFY(store.list(forCustomer("acme")).empty());
    }

    void aRecordClaimedAgainUnderANewIdIsListedOnceWithItsNewPayload()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection c(m_ledger);
        // Retention 0: the key is free again at once (the owner may set it so short).
        completeBySql(c, "reused", claimBySql(c, "reused", "acme"), 0);
        QCOMPARE(keysOf(store.list(forCustomer("acme"))), std::vector<std::string>{"reused"});
        claimBySql(c, "reused", "globex");
        QVERIFY(store.list(forCustomer("acme")).empty());
        QCOMPARE(keysOf(store.list(forCustomer("globex"))), std::vector<std::string>{"reused"});
        QCOMPARE(keysOf(store.list({})), std::vector<std::string>{"reused"});
        QCOMPARE(count(c, "SELECT count(*) FROM idempo.operation_listing"), std::int64_t(1));
    }

    void aPurgedRecordLeavesTheListing()
    {
        PostgresLedgerStore store(m_ledger);
        store.migrate();
        PgConnection c(m_ledger);
        completeBySql(c, "expired", claimBySql(c, "expired", "acme"), 0);
        completeBySql(c, "kept", claimBySql(c, "kept", "acme"));
        QCOMPARE(store.purgeExpired("default"), std::int64_t(1));
        QCOMPARE(keysOf(store.list(forCustomer("acme"))), std::vector<std::string>{"kept"});
        QCOMPARE(count(c, "SELECT count(*) FROM idempo.operation_listing"), std::int64_t(1));
        QCOMPARE(count(c, "SELECT count(*) FROM idempo.payload_fields WHERE value = 'acme'"),
                 std::int64_t(2)); // kept's /customer and #customer
    }
};

QTEST_GUILESS_MAIN(TestPostgresListing)
#include "tst_postgreslisting.moc"
