// SPDX-License-Identifier: Apache-2.0
// `idempo bench queue` through the real binary: on PostgreSQL beside pgmq's functions (here a
// stand-in with pgmq's names and layout, tests/testdata/pgmq-standin.sql) in a database of their
// own, every side measured, everything it made gone afterwards; its options refused where they
// do not apply. The PostgreSQL case runs under tests/pg/with-postgres.sh.
#include <QJsonArray>
#include <QStandardPaths>
#include <QtTest>

#include "clirunner.h"
#include "pgconnection.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

QString postgresUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
}

bool positive(const QJsonValue &v)
{
    return v.isDouble() && v.toDouble() > 0;
}

} // namespace

class TestCliQueueBench final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void postgresRunsBesidePgmqAndCleansUp()
    {
        if (postgresUrl().isEmpty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        if (QStandardPaths::findExecutable(S("pgbench")).isEmpty())
            QSKIP("pgbench is not on PATH");
        CliRunner cli;
        cli.useLedger(postgresUrl());
        QCOMPARE(cli.run({S("init")}).exitCode, 0);
        QCOMPARE(cli.run({S("queue"), S("create"), S("kept")}).exitCode, 0);
        QCOMPARE(cli.run({S("queue"), S("send"), S("kept"), S("--message"), S("{}")}).exitCode, 0);

        const CliRun missing = cli.run({S("bench"), S("queue"), S("--workers"), S("2")});
        QCOMPARE(missing.exitCode, 64);
        QVERIFY2(missing.err.contains("--pgmq FILE"), missing.err.constData());
        const CliRun unreadable =
            cli.run({S("bench"), S("queue"), S("--pgmq"), cli.filePath(S("no-such.sql"))});
        QCOMPARE(unreadable.exitCode, 64);
        QVERIFY2(unreadable.err.contains("no-such.sql"), unreadable.err.constData());

        const CliRun bench =
            cli.run({S("--json"), S("bench"), S("queue"), S("--workers"), S("2"), S("--messages"),
                     S("40"), S("--pgmq"), S(IDEMPO_PGMQ_STANDIN)});
        QVERIFY2(bench.exitCode == 0, bench.err.constData());
        for (const char *rate : {"pgmq_cycles_per_s", "raw_cycles_per_s", "engine_cycles_per_s",
                                 "engine_carried_cycles_per_s", "ratio", "carried_ratio"})
            QVERIFY2(positive(bench.json[QLatin1String(rate)]), rate);
        QCOMPARE(bench.json[S("workers")].toInt(), 2);
        QCOMPARE(bench.json[S("cycles")].toInt(), 40);
        QCOMPARE(bench.json[S("rounds")].toArray().size(), 3);
        // Three rounds of three engine queues, each with its dead-letter queue.
        QVERIFY2(bench.json[S("cleanup")].toString().startsWith(S("dropped 18 queues")),
                 bench.out.constData());
        const CliRun kept = cli.run({S("--json"), S("queue"), S("metrics"), S("kept")});
        QCOMPARE(kept.json[S("queue_length")].toInteger(), qint64(1)); // other queues untouched
        idempo::PgConnection c(postgresUrl().toStdString());
        QCOMPARE(c.exec("pgmq's database",
                        "SELECT count(*) FROM pg_database WHERE datname LIKE 'idempo_bench_pgmq_%'")
                     .integer(0, 0),
                 std::int64_t(0));
        QCOMPARE(
            c.exec("bench queues",
                   "SELECT count(*) FROM idempo.queue_registry WHERE queue_name LIKE 'bench_%'")
                .integer(0, 0),
            std::int64_t(0));
    }

    void optionsOnlyWhereTheyApply()
    {
        CliRunner cli;
        QVERIFY(cli.useNewLedger(S("bench")));
        const CliRun workers = cli.run({S("bench"), S("queue"), S("--workers"), S("2")});
        QCOMPARE(workers.exitCode, 64);
        QVERIFY2(workers.err.contains("PostgreSQL ledger"), workers.err.constData());
        QCOMPARE(cli.run({S("bench"), S("queue"), S("--pgmq"), S("x.sql")}).exitCode, 64);
        QCOMPARE(cli.run({S("bench"), S("queue"), S("--cycles"), S("5")}).exitCode, 64);
    }
};

QTEST_GUILESS_MAIN(TestCliQueueBench)
#include "tst_cli_queuebench.moc"
