// SPDX-License-Identifier: Apache-2.0
// Run budgets through the real `idempo` binary: claim --cost / --tokens, budget_exhausted with
// exit 75 and its figures, `run show|list|resume|budget|defaults` and their refusals, a resume
// pending a second identity (exit 0).
#include <QJsonArray>
#include <QtTest>

#include "clirunner.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

/// `claim KEY` in the run KEY starts with ("run-1:a" is in run-1).
QStringList claim(const char *key, const char *cost)
{
    const QString run = S(key).section(QLatin1Char(':'), 0, 0);
    return {S("--json"), S("claim"), S(key),      S("--payload"), S("{}"),
            S("--run"),  run,        S("--cost"), S(cost)};
}

} // namespace

class TestCliRuns final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_cli;

    /// A run halted by its spend cap of 1.00 EUR after 0.60 EUR.
    void haltBySpend()
    {
        QCOMPARE(m_cli
                     .run({S("run"), S("defaults"), S("--spend"), S("1.00 EUR"), S("--reason"),
                           S("cap agent spend")})
                     .exitCode,
                 0);
        QCOMPARE(m_cli.run(claim("run-1:a", "0.60 EUR")).exitCode, 0);
        const CliRun over = m_cli.run(claim("run-1:b", "0.50 EUR"));
        QCOMPARE(over.exitCode, 75);
        QCOMPARE(over.json.value(S("outcome")).toString(), S("budget_exhausted"));
    }

private Q_SLOTS:
    void init() { QVERIFY(m_cli.useNewLedger(QString::fromLatin1(QTest::currentTestFunction()))); }

    void theFailureThatHaltsTheRunSaysSo()
    {
        QString said;
        for (const char *step : {"run-2:a", "run-2:b", "run-2:c"}) {
            const CliRun c = m_cli.run({S("--json"), S("claim"), S(step), S("--payload"), S("{}"),
                                        S("--run"), S("run-2")});
            QCOMPARE(c.exitCode, 0);
            const CliRun f =
                m_cli.run({S("fail"), S(step), S("--token"),
                           QString::number(c.json.value(S("fencing_token")).toInteger()),
                           S("--class"), S("transient"), S("--detail"), S("503")});
            QCOMPARE(f.exitCode, 0);
            said = QString::fromUtf8(f.out);
            if (QLatin1String(step) != QLatin1String("run-2:c"))
                QVERIFY2(!said.contains(S("halted")), qPrintable(said));
        }
        QVERIFY2(said.contains(S("run run-2 is halted: 3 failed dispatches")), qPrintable(said));
        QVERIFY2(said.contains(S("idempo run resume run-2")), qPrintable(said));
    }

    void budgetExhaustedNamesTheBudgetAndFigures()
    {
        haltBySpend();
        const CliRun again = m_cli.run(claim("run-1:c", "0.10 EUR"));
        QCOMPARE(again.exitCode, 75);
        const QJsonObject budget = again.json.value(S("budget")).toObject();
        QCOMPARE(budget.value(S("budget")).toString(), S("spend"));
        QCOMPARE(budget.value(S("used")).toInteger(), qint64(60));
        QCOMPARE(budget.value(S("limit")).toInteger(), qint64(100));
        QCOMPARE(budget.value(S("detail")).toString(),
                 S("spent 0.60 EUR + 0.50 EUR would pass the cap of 1.00 EUR"));
        const CliRun text =
            m_cli.run({S("claim"), S("run-1:c"), S("--payload"), S("{}"), S("--run"), S("run-1")});
        QCOMPARE(text.exitCode, 75);
        QVERIFY2(text.out.contains("run run-1 is halted: spend: spent 0.60 EUR"), text.out);
        // Nothing was created for the refused steps.
        QCOMPARE(m_cli.run({S("show"), S("run-1:b")}).exitCode, 65);

        const CliRun show = m_cli.run({S("--json"), S("run"), S("show"), S("run-1")});
        QCOMPARE(show.exitCode, 0);
        QCOMPARE(show.json.value(S("state")).toString(), S("halted"));
        QCOMPARE(show.json.value(S("halt_budget")).toString(), S("spend"));
        QCOMPARE(show.json.value(S("used")).toObject().value(S("spend")).toString(), S("0.60 EUR"));
        QCOMPARE(show.json.value(S("budgets")).toObject().value(S("failed_dispatches")).toInt(), 3);
        QCOMPARE(m_cli.run({S("run"), S("show"), S("run-404")}).exitCode, 65);
    }

    void listHaltedRuns()
    {
        haltBySpend();
        QCOMPARE(m_cli.run(claim("run-2:a", "0.10 EUR")).exitCode, 0);
        const CliRun halted =
            m_cli.run({S("--json"), S("run"), S("list"), S("--state"), S("halted")});
        QCOMPARE(halted.exitCode, 0);
        const QJsonArray runs = halted.json.value(S("runs")).toArray();
        QCOMPARE(runs.size(), qsizetype(1));
        QCOMPARE(runs.at(0).toObject().value(S("run_id")).toString(), S("run-1"));
        QCOMPARE(
            m_cli.run({S("--json"), S("run"), S("list")}).json.value(S("runs")).toArray().size(),
            qsizetype(2));
        const CliRun bad = m_cli.run({S("run"), S("list"), S("--state"), S("stuck")});
        QCOMPARE(bad.exitCode, 64);
        QVERIFY2(bad.err.contains("'stuck'"), bad.err);
    }

    void resumeIsGuarded()
    {
        haltBySpend();
        const CliRun noReason =
            m_cli.run({S("run"), S("resume"), S("run-1"), S("--add-spend"), S("1.00 EUR")});
        QCOMPARE(noReason.exitCode, 65);
        QVERIFY2(noReason.err.contains("--reason"), noReason.err);
        const CliRun noRoom =
            m_cli.run({S("run"), S("resume"), S("run-1"), S("--reason"), S("retry")});
        QCOMPARE(noRoom.exitCode, 65);
        QVERIFY2(noRoom.err.contains("--add-spend"), noRoom.err);

        const QStringList resume = {
            S("--json"),         S("run"),         S("resume"),   S("run-1"),        S("--reason"),
            S("provider fixed"), S("--add-spend"), S("1.00 EUR"), S("--request-id"), S("rr-ops-1")};
        const CliRun done = m_cli.run(resume);
        QCOMPARE(done.exitCode, 0);
        QCOMPARE(done.json.value(S("status")).toString(), S("applied"));
        QCOMPARE(done.json.value(S("run")).toObject().value(S("state")).toString(), S("active"));
        const CliRun again = m_cli.run(resume);
        QCOMPARE(again.exitCode, 0);
        QCOMPARE(again.json.value(S("status")).toString(), S("replayed"));
        QCOMPARE(m_cli.run(claim("run-1:b", "0.50 EUR")).exitCode, 0);

        const CliRun audit = m_cli.run({S("--json"), S("audit"), S("list")});
        const QJsonArray records = audit.json.value(S("records")).toArray();
        QCOMPARE(records.last().toObject().value(S("action")).toString(), S("run_resume"));
    }

    /// A resume that waits for a second identity is the first identity's command done: exit 0,
    /// status pending, also when asked again; the run stays halted and its claims answer
    /// budget_exhausted (75).
    void pendingResumeExitsZero()
    {
        haltBySpend();
        QCOMPARE(
            m_cli.run({S("four-eyes"), S("--above"), S("1.00"), S("--reason"), S("two")}).exitCode,
            0);
        const QStringList resume = {S("--json"),      S("run"),      S("resume"),
                                    S("run-1"),       S("--reason"), S("provider fixed"),
                                    S("--add-spend"), S("1.00 EUR")};
        for (int i = 0; i < 2; ++i) {
            const CliRun r = m_cli.run(resume);
            QCOMPARE(r.exitCode, 0);
            QCOMPARE(r.json.value(S("status")).toString(), S("pending"));
            QCOMPARE(r.json.value(S("run")).toObject().value(S("state")).toString(), S("halted"));
        }
        const CliRun claimed = m_cli.run(claim("run-1:b", "0.50 EUR"));
        QCOMPARE(claimed.exitCode, 75);
        QCOMPARE(claimed.json.value(S("outcome")).toString(), S("budget_exhausted"));
    }

    void budgetSetsLimits()
    {
        QCOMPARE(m_cli.run(claim("run-1:a", "0.10 EUR")).exitCode, 0);
        const CliRun set =
            m_cli.run({S("--json"), S("run"), S("budget"), S("run-1"), S("--tokens"), S("5"),
                       S("--no-progress"), S("none"), S("--reason"), S("small model run")});
        QCOMPARE(set.exitCode, 0);
        const QJsonObject budgets =
            set.json.value(S("run")).toObject().value(S("budgets")).toObject();
        QCOMPARE(budgets.value(S("tokens")).toInt(), 5);
        QVERIFY(budgets.value(S("no_progress_s")).isNull());
        QCOMPARE(m_cli
                     .run({S("run"), S("budget"), S("run-1"), S("--tokens"), S("0"), S("--reason"),
                           S("x")})
                     .exitCode,
                 64);
        QStringList tokens = {S("--json"), S("claim"), S("run-1:b"),  S("--payload"), S("{}"),
                              S("--run"),  S("run-1"), S("--tokens"), S("6")};
        const CliRun over = m_cli.run(tokens);
        QCOMPARE(over.exitCode, 75);
        QCOMPARE(over.json.value(S("budget")).toObject().value(S("budget")).toString(),
                 S("tokens"));
    }

    void costNeedsARun()
    {
        const CliRun r =
            m_cli.run({S("claim"), S("k:1"), S("--payload"), S("{}"), S("--cost"), S("1.00 EUR")});
        QCOMPARE(r.exitCode, 64);
        QVERIFY2(r.err.contains("run id"), r.err);
        const CliRun bad = m_cli.run({S("claim"), S("k:1"), S("--payload"), S("{}"), S("--run"),
                                      S("r"), S("--cost"), S("1.001 EUR")});
        QCOMPARE(bad.exitCode, 64);
        QCOMPARE(m_cli.run({S("show"), S("k:1")}).exitCode, 65);
        const CliRun defaults = m_cli.run(
            {S("run"), S("defaults"), S("--failed-dispatches"), S("0"), S("--reason"), S("x")});
        QCOMPARE(defaults.exitCode, 65);
        QVERIFY2(defaults.err.contains("not '0'"), defaults.err);
    }

    void helpNamesTheRunCommands()
    {
        const CliRun help = m_cli.run({S("run"), S("--help")});
        QCOMPARE(help.exitCode, 0);
        QVERIFY2(help.out.contains("resume RUN --reason TEXT"), help.out);
        QVERIFY2(help.out.contains("budget_exhausted"), help.out);
    }
};

QTEST_GUILESS_MAIN(TestCliRuns)
#include "tst_cli_runs.moc"
