// SPDX-License-Identifier: Apache-2.0
// Run budgets on the function API, tried as a login of each role with a raw libpq connection: no
// role un-halts a run or raises its budget by table DML or by calling the ledger's inner
// functions; only idempo.run_action does, for operators and admins, audited. Runs under
// tests/pg/with-postgres.sh.
#include <map>

#include <QCryptographicHash>
#include <QtTest>

#include "auditverify.h"
#include "error.h"
#include "oldschemaledger.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"

using namespace idempo;

namespace {

/// The suite's own ledger, made afresh by initTestCase() beside the cluster's database, so that
/// nothing an earlier suite (or an earlier run of this one) left there counts.
std::string &testUrl()
{
    static std::string url;
    return url;
}

std::string urlFor(const std::string &user)
{
    return test::urlAs(testUrl(), user);
}

const std::map<std::string, std::string> kLogins = {
    {"runs_worker", "idempo_worker"},     {"runs_viewer", "idempo_viewer"},
    {"runs_approver", "idempo_approver"}, {"runs_operator", "idempo_operator"},
    {"runs_admin", "idempo_admin"},
};

/// Every row of the ledger's tables, as text: equal dumps, nothing written.
std::string ledgerRows(PgConnection &owner)
{
    const PgResult tables = owner.exec("list tables", R"SQL(
        SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = 'idempo' AND c.relkind = 'r' ORDER BY 1)SQL");
    std::string out;
    for (int row = 0; row < tables.rows(); ++row) {
        const std::string table = tables.text(row, 0);
        out += table + ":\n" +
               owner
                   .exec("dump",
                         "SELECT coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '') FROM " +
                             table + " AS x")
                   .text(0, 0) +
               "\n";
    }
    return out;
}

std::string payloadHash(const std::string &payload)
{
    return QCryptographicHash::hash(QByteArrayView(payload.data(), qsizetype(payload.size())),
                                    QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

std::string claimSql(const std::string &key)
{
    const std::string payload = R"({"step":")" + key + R"("})";
    return "SELECT outcome, fencing_token, budget FROM idempo.claim('default', '" + key + "', '" +
           payload + "', '" + payloadHash(payload) + "', 'w', p_run_id => 'run-h')";
}

} // namespace

class TestSqlSecurityRuns final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (qEnvironmentVariableIsEmpty("IDEMPO_TEST_POSTGRES_URL"))
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        testUrl() = test::freshPostgresDatabase("idempo_sql_security_runs");
        QVERIFY(m_passwords.isValid());
        PostgresLedgerStore(testUrl()).migrate();
        PgConnection owner(testUrl());
        std::string logins;
        QFile file(m_passwords.filePath(QStringLiteral("pgpass")));
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        for (const auto &[login, group] : kLogins) {
            logins += "DROP ROLE IF EXISTS " + login + ";\nCREATE ROLE " + login +
                      " LOGIN PASSWORD '" + login + "-secret' IN ROLE " + group + ";\n";
            file.write(QByteArray::fromStdString("*:*:*:" + login + ":" + login + "-secret\n"));
        }
        file.close();
        QVERIFY(file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        qputenv("PGPASSFILE", file.fileName().toLocal8Bit());
        owner.execScript("create logins", logins);

        // A run halted by three failed dispatches of a worker.
        PgConnection worker(urlFor("runs_worker"));
        for (const std::string step : {"run-h:a", "run-h:b", "run-h:c"}) {
            const std::int64_t token = worker.exec("seed", claimSql(step)).integer(0, 1);
            worker.exec("seed",
                        "SELECT * FROM idempo.fail('default', $1, $2::bigint, 'transient', '503')",
                        PgParams().text(step).integer(token));
        }
        QCOMPARE(
            owner.exec("state", "SELECT state FROM idempo.runs WHERE run_id = 'run-h'").text(0, 0),
            std::string("halted"));
        PostgresLedgerStore store(testUrl());
        const AuditVerify::Result chain = AuditVerify(store).run();
        QVERIFY2(chain.ok, chain.problem.c_str());
    }

    void cleanupTestCase() { qunsetenv("PGPASSFILE"); }

    void unhaltingIsRefused_data()
    {
        QTest::addColumn<QString>("login");
        QTest::addColumn<QString>("script");
        const std::vector<std::pair<const char *, std::string>> everyone = {
            {"run un-halted by UPDATE", "UPDATE idempo.runs SET state = 'active'"},
            {"failed-dispatch limit raised by UPDATE",
             "UPDATE idempo.runs SET failed_dispatch_limit = 1000"},
            {"failures forgotten by UPDATE", "UPDATE idempo.runs SET failed_dispatches = 0"},
            {"run deleted, so the next claim makes a fresh one", "DELETE FROM idempo.runs"},
            {"runs truncated", "TRUNCATE idempo.runs"},
            {"resume request forged",
             "INSERT INTO idempo.run_actions (request_id, namespace, run_id, action, proposal, "
             "status, operator, role, reason, audit_seq, created_at_ms) VALUES ('rr-x', "
             "'default', 'run-h', 'resume', '{}', 'applied', 'x', 'admin', 'r', 0, 0)"},
            {"default budget raised by UPDATE",
             "INSERT INTO idempo.guard_settings (name, value) VALUES ('run_failed_dispatches', "
             "'1000')"},
            {"inner charge function called",
             "SELECT idempo.spend_run('default', 'run-h', -100000, 'EUR', 0, 0)"},
            {"inner check function called", "SELECT idempo.check_run('default', 'run-h', NULL, "
                                            "NULL, 0, false, 0)"},
            {"history event that counts as progress forged",
             "INSERT INTO idempo.operation_events (operation_id, at_ms, from_state, to_state, "
             "fencing_token, attempt) SELECT id, 0, 'dispatching', 'succeeded', 0, 0 FROM "
             "idempo.operations LIMIT 1"},
            {"the ledger's clock moved for the sweep",
             "SELECT idempo.sweep_runs('', NULL, -86400000)"},
        };
        for (const auto &[login, group] : kLogins)
            for (const auto &[what, script] : everyone)
                QTest::addRow("%s: %s", login.c_str(), what)
                    << QString::fromStdString(login) << QString::fromStdString(script);
        for (const char *login : {"runs_worker", "runs_viewer", "runs_approver"}) {
            QTest::addRow("%s: resume by a role that may not", login)
                << QString::fromLatin1(login)
                << QStringLiteral("SELECT * FROM idempo.run_action('default', 'run-h', 'rr-1', "
                                  "'resume', 'r', 5)");
            QTest::addRow("%s: default budget raised by a non-admin", login)
                << QString::fromLatin1(login)
                << QStringLiteral(
                       "SELECT idempo.set_guard_setting('run_failed_dispatches', '1000', 'r')");
        }
        QTest::addRow("runs_operator: resume in another identity's name")
            << QStringLiteral("runs_operator")
            << QStringLiteral("SELECT * FROM idempo.run_action('default', 'run-h', 'rr-2', "
                              "'resume', 'r', 5, p_as_name => 'somebody_else')");
        QTest::addRow("runs_operator: resume without a reason")
            << QStringLiteral("runs_operator")
            << QStringLiteral(
                   "SELECT * FROM idempo.run_action('default', 'run-h', 'rr-3', 'resume', '', 5)");
        QTest::addRow("runs_operator: resume without room")
            << QStringLiteral("runs_operator")
            << QStringLiteral(
                   "SELECT * FROM idempo.run_action('default', 'run-h', 'rr-4', 'resume', 'r')");
    }

    void unhaltingIsRefused()
    {
        QFETCH(QString, login);
        QFETCH(QString, script);
        PgConnection owner(testUrl());
        const std::string before = ledgerRows(owner);
        PgConnection c(urlFor(login.toStdString()));
        bool refused = false;
        try {
            c.execScript("attempt", script.toStdString());
        } catch (const Error &e) {
            refused = true;
            qInfo("refused: %s", e.what());
        }
        QVERIFY2(refused, "the attempt succeeded");
        QCOMPARE(ledgerRows(owner), before);
    }

    void haltedRunAnswersWorkersWithoutDispatching()
    {
        PgConnection owner(testUrl());
        PgConnection worker(urlFor("runs_worker"));
        const PgResult r = worker.exec("claim", claimSql("run-h:d"));
        QCOMPARE(r.text(0, 0), std::string("budget_exhausted"));
        QCOMPARE(r.text(0, 2), std::string("failed_dispatches"));
        QCOMPARE(owner
                     .exec("count", "SELECT count(*) FROM idempo.operations WHERE operation_key = "
                                    "'run-h:d'")
                     .integer(0, 0),
                 std::int64_t(0));
    }

    void anOperatorResumesAudited()
    {
        PgConnection owner(testUrl());
        PgConnection op(urlFor("runs_operator"));
        const PgResult r = op.exec("resume", "SELECT * FROM idempo.run_action('default', 'run-h', "
                                             "'rr-ok', 'resume', 'provider back', 2)");
        QCOMPARE(r.text(0, 0), std::string("applied"));
        const PgResult run = owner.exec(
            "run", "SELECT state, failed_dispatch_limit FROM idempo.runs WHERE run_id = 'run-h'");
        QCOMPARE(run.text(0, 0), std::string("active"));
        QCOMPARE(run.integer(0, 1), std::int64_t(5));
        const PgResult audit = owner.exec(
            "audit", "SELECT who, action, target FROM idempo.audit_log ORDER BY seq DESC LIMIT 1");
        QCOMPARE(audit.text(0, 0), std::string("runs_operator"));
        QCOMPARE(audit.text(0, 1), std::string("run_resume"));
        QCOMPARE(audit.text(0, 2), std::string("run:default/run-h"));
        QCOMPARE(op.exec("again", "SELECT * FROM idempo.run_action('default', 'run-h', 'rr-ok', "
                                  "'resume', 'provider back', 2)")
                     .text(0, 0),
                 std::string("replayed"));
        PostgresLedgerStore store(testUrl());
        const AuditVerify::Result chain = AuditVerify(store).run();
        QVERIFY2(chain.ok, chain.problem.c_str());
    }

private:
    QTemporaryDir m_passwords;
};

QTEST_GUILESS_MAIN(TestSqlSecurityRuns)
#include "tst_sqlsecurityruns.moc"
