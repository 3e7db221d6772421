// SPDX-License-Identifier: Apache-2.0
// How each store names a storage failure: a full or locked SQLite ledger, a PostgreSQL
// connection an administrator terminated, a lock timeout. Never Error(Internal); nothing is
// half-written; the next call after the cause is gone works. The SQLite cases run on the
// embedded ledger, the PostgreSQL ones under tests/pg/with-postgres.sh.
#include <functional>

#include <QSqlQuery>
#include <QtTest>

#include "engine.h"
#include "error.h"
#include "ledgerfixture.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "sqliteledgerstore.h"

using namespace idempo;
using idempo::test::LedgerFixture;

namespace {

constexpr const char *kNs = "failures";

ClaimInput claimInput(const std::string &key, const std::string &payload = R"({"amount":100})")
{
    ClaimInput in;
    in.ns = kNs;
    in.key = key;
    in.payloadJson = payload;
    in.kind = ToolKind::ProtectedWrite;
    in.owner = "worker-a";
    return in;
}

Error errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorCode::Internal, "no error was thrown");
}

bool onPostgres()
{
    return !qEnvironmentVariableIsEmpty("IDEMPO_TEST_POSTGRES_URL");
}

/// A payload of about `bytes` bytes: more pages than a nearly full ledger has left.
std::string bigPayload(int bytes)
{
    return R"({"blob":")" + std::string(static_cast<std::size_t>(bytes), 'x') + R"("})";
}

} // namespace

class TestLedgerFailures final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    /// SQLITE_FULL, simulated with max_page_count on the store's own connection (a tiny
    /// filesystem is not available in CI): the ledger is unavailable, the message says the disk
    /// is full and that nothing was kept, and the ledger holds exactly what it held before.
    void fullSqliteLedgerIsUnavailableAndKeepsNothing()
    {
        if (onPostgres())
            QSKIP("SQLite only");
        LedgerFixture f;
        QCOMPARE(f.engine().claim(claimInput("run-1:first")).outcome, ClaimOutcome::Claimed);
        auto &sqlite = dynamic_cast<SqliteLedgerStore &>(f.store());
        QSqlQuery pragma(sqlite.connection().db);
        QVERIFY(pragma.exec(QStringLiteral("PRAGMA page_count")) && pragma.next());
        const qlonglong pages = pragma.value(0).toLongLong();
        QVERIFY(pragma.exec(QStringLiteral("PRAGMA max_page_count = %1").arg(pages)));
        const QByteArray before = f.snapshot();

        const Error full =
            errorOf([&] { f.engine().claim(claimInput("run-1:second", bigPayload(200'000))); });
        QCOMPARE(full.code(), ErrorCode::LedgerUnavailable);
        QVERIFY2(std::string(full.what()).find("disk is full") != std::string::npos, full.what());
        QVERIFY2(std::string(full.what()).find("nothing of this write was kept") !=
                     std::string::npos,
                 full.what());
        QCOMPARE(f.snapshot(), before);
        QVERIFY(!f.store().find(kNs, "run-1:second"));

        // Space again: the same claim goes through, once.
        QVERIFY(pragma.exec(QStringLiteral("PRAGMA max_page_count = 1073741823")));
        QCOMPARE(f.engine().claim(claimInput("run-1:second", bigPayload(200'000))).outcome,
                 ClaimOutcome::Claimed);
        QCOMPARE(f.engine().claim(claimInput("run-1:second", bigPayload(200'000))).outcome,
                 ClaimOutcome::InProgress);
    }

    /// Another process holding the write lock past the busy timeout: try again (LedgerBusy).
    void lockedSqliteLedgerIsBusy()
    {
        if (onPostgres())
            QSKIP("SQLite only");
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("ledger.db"));
        const auto clock = std::make_shared<ManualClock>();
        SqliteLedgerStore::Options quick;
        quick.busyTimeoutMs = 50;
        Engine engine(std::make_shared<SqliteLedgerStore>(path, clock, quick), {}, RetryPolicy{});
        SqliteLedgerStore holder(path, clock);
        QSqlQuery lock(holder.connection().db);
        QVERIFY(lock.exec(QStringLiteral("BEGIN IMMEDIATE")));
        const Error busy = errorOf([&] { engine.claim(claimInput("run-2:x")); });
        QCOMPARE(busy.code(), ErrorCode::LedgerBusy);
        QVERIFY2(std::string(busy.what()).find("try again") != std::string::npos, busy.what());
        QVERIFY(lock.exec(QStringLiteral("ROLLBACK")));
        QCOMPARE(engine.claim(claimInput("run-2:x")).outcome, ClaimOutcome::Claimed);
    }

    /// pg_terminate_backend is what a server restart does to every session (57P01): the call
    /// fails as LedgerUnavailable, says a write in flight may have been applied, and the next
    /// call opens a new connection and works.
    void terminatedPostgresConnectionIsUnavailableThenReconnects()
    {
        if (!onPostgres())
            QSKIP("PostgreSQL only: run under tests/pg/with-postgres.sh");
        LedgerFixture f;
        QCOMPARE(f.engine().claim(claimInput("run-3:a")).outcome, ClaimOutcome::Claimed);
        auto &pg = dynamic_cast<PostgresLedgerStore &>(f.store());
        const std::string pid =
            pg.connection().exec("backend pid", "SELECT pg_backend_pid()").text(0, 0);
        PgConnection admin(qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString());
        PgParams p;
        p.text(pid);
        admin.exec("terminate", "SELECT pg_terminate_backend($1::int)", p);

        const Error lost = errorOf([&] { f.engine().claim(claimInput("run-3:b")); });
        QCOMPARE(lost.code(), ErrorCode::LedgerUnavailable);
        QVERIFY2(std::string(lost.what()).find("may or may not have been applied") !=
                     std::string::npos,
                 lost.what());
        QCOMPARE(f.engine().claim(claimInput("run-3:b")).outcome, ClaimOutcome::Claimed);
        QCOMPARE(f.engine().claim(claimInput("run-3:b")).outcome, ClaimOutcome::InProgress);
    }

    /// A row another session holds past lock_timeout (55P03): nothing written, try again.
    void postgresLockTimeoutIsBusy()
    {
        if (!onPostgres())
            QSKIP("PostgreSQL only: run under tests/pg/with-postgres.sh");
        LedgerFixture f;
        QCOMPARE(f.engine().claim(claimInput("run-4:a")).outcome, ClaimOutcome::Claimed);
        const std::string url = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
        PgConnection holder(url);
        PgTransaction tx(holder);
        PgParams p;
        p.text(kNs).text("run-4:a");
        holder.exec(
            "lock",
            "SELECT 1 FROM operations WHERE namespace = $1 AND operation_key = $2 FOR UPDATE", p);

        Engine impatient(
            std::make_shared<PostgresLedgerStore>(url + "?options=-c%20lock_timeout%3D100"), {},
            RetryPolicy{});
        const Error busy = errorOf([&] { impatient.claim(claimInput("run-4:a")); });
        QCOMPARE(busy.code(), ErrorCode::LedgerBusy);
        QVERIFY2(std::string(busy.what()).find("55P03") != std::string::npos, busy.what());
    }
};

QTEST_GUILESS_MAIN(TestLedgerFailures)
#include "tst_ledgerfailures.moc"
