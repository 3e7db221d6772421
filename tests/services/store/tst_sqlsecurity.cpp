// SPDX-License-Identifier: Apache-2.0
// What a user at a psql prompt could do to a schema-5 ledger, tried again on the function API
// with a raw libpq connection (PgConnection, not the store) as a login of each role: every
// attempt is refused, and the ledger's rows and its audit chain stay as they were. Runs under
// tests/pg/with-postgres.sh.
#include <map>

#include <QCryptographicHash>
#include <QtTest>

#include "auditverify.h"
#include "engine.h"
#include "error.h"
#include "oldschemaledger.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"

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

/// The logins of the suite and the groups each holds: one per role, sec_dual one person with two
/// hats, sec_nobody a login of the database in no idempo group.
const std::map<std::string, std::string> kLogins = {
    {"sec_worker", "idempo_worker"},
    {"sec_viewer", "idempo_viewer"},
    {"sec_approver", "idempo_approver"},
    {"sec_operator", "idempo_operator"},
    {"sec_admin", "idempo_admin"},
    {"sec_dual", "idempo_worker, idempo_approver"},
    {"sec_nobody", ""},
};

/// Every row of every table of the ledger and its queues, as text: equal dumps, nothing written.
std::string ledgerRows(PgConnection &owner)
{
    const PgResult tables = owner.exec("list tables", R"SQL(
        SELECT format('%I.%I', n.nspname, c.relname) FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('idempo', 'pgmq') AND c.relkind = 'r' ORDER BY 1)SQL");
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
    out += "sequence:" +
           owner.exec("sequence", "SELECT last_value FROM idempo.fencing_sequence").text(0, 0);
    return out;
}

std::string payloadHash(const char *payload)
{
    return QCryptographicHash::hash(QByteArrayView(payload), QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

} // namespace

class TestSqlSecurity final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (qEnvironmentVariableIsEmpty("IDEMPO_TEST_POSTGRES_URL"))
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        testUrl() = test::freshPostgresDatabase("idempo_sql_security");
        QVERIFY(m_passwords.isValid());
        PostgresLedgerStore(testUrl()).migrate();
        PgConnection owner(testUrl());
        std::string logins = "DROP SCHEMA IF EXISTS pgmq CASCADE;\n";
        QFile file(m_passwords.filePath(QStringLiteral("pgpass")));
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
        for (const auto &[login, groups] : kLogins) {
            logins += "DROP ROLE IF EXISTS " + login + ";\nCREATE ROLE " + login +
                      " LOGIN PASSWORD '" + login + "-secret'" +
                      (groups.empty() ? "" : " IN ROLE " + groups) + ";\n";
            file.write(QByteArray::fromStdString("*:*:*:" + login + ":" + login + "-secret\n"));
        }
        file.close();
        QVERIFY(file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        qputenv("PGPASSFILE", file.fileName().toLocal8Bit());
        owner.execScript("create logins", logins);
        seed(owner);
    }

    void cleanupTestCase() { qunsetenv("PGPASSFILE"); }

    /// One attempt (a script) by one login: refused, nothing written, the chain intact.
    void bypassIsRefused_data()
    {
        QTest::addColumn<QString>("login");
        QTest::addColumn<QString>("script");
        const std::vector<std::pair<const char *, std::string>> everyone = {
            // A worker (or anyone) UPDATEs operations: approval, reconciliation and audit skipped.
            {"awaiting approval to succeeded", "UPDATE idempo.operations SET state = 'succeeded' "
                                               "WHERE operation_key = 'sec:awaiting'"},
            {"unknown outcome to succeeded, through the schema-5 name",
             "UPDATE operations SET state = 'succeeded' WHERE operation_key = 'sec:unknown'"},
            {"payload rewritten", "UPDATE idempo.operations SET payload = '{\"amount\":1}'"},
            {"fencing token reset",
             "UPDATE idempo.operations SET fencing_token = 0 WHERE operation_key = 'sec:live'"},
            {"history forged", "INSERT INTO idempo.operation_events (operation_id, at_ms, "
                               "to_state, fencing_token, attempt) "
                               "SELECT id, 0, 'succeeded', 0, 0 FROM idempo.operations LIMIT 1"},
            {"records deleted", "DELETE FROM idempo.operations"},
            {"history truncated", "TRUNCATE idempo.operation_events"},
            {"fencing sequence moved back", "SELECT setval('idempo.fencing_sequence', 1)"},
            {"awaiting approval moved by a transition",
             "SELECT * FROM idempo.transition('default', 'sec:awaiting', 'awaiting_approval', 0, "
             "'received')"},
            {"unknown outcome settled by a transition",
             "SELECT * FROM idempo.transition('default', 'sec:unknown', 'unknown_outcome', "
             "(SELECT fencing_token FROM idempo.operations WHERE operation_key = 'sec:unknown'), "
             "'succeeded')"},
            {"a stale token completes", "SELECT * FROM idempo.complete('default', 'sec:live', 1)"},
            {"a moved clock takes over a live lease",
             "SELECT * FROM idempo.claim('default', 'sec:live', '{\"amount\":3}', '" +
                 payloadHash(R"({"amount":3})") +
                 "', 'thief', p_tool_kind => 'idempotent_write', p_clock_offset_ms => 7200000)"},
            // The trigger of schema 5 was fooled by a temporary table of the same name.
            {"temporary audit_log with a forged reconcile record, then an UPDATE",
             "CREATE TEMP TABLE audit_log AS SELECT * FROM idempo.audit_log; "
             "INSERT INTO audit_log (seq, at_ms, who, role, action, target, prev_hash, hash) "
             "VALUES (99, 0, session_user, 'operator', 'reconcile', 'default/sec:unknown', '', "
             "''); "
             "SET search_path = pg_temp, public; "
             "UPDATE operations SET state = 'succeeded' WHERE operation_key = 'sec:unknown'"},
            {"temporary operations table shadowing the ledger, then a reconcile of a live lease",
             "CREATE TEMP TABLE operations AS SELECT * FROM idempo.operations; "
             "UPDATE operations SET state = 'unknown_outcome'; "
             "SET search_path = pg_temp, idempo, public; "
             "SELECT * FROM idempo.reconcile('default', 'sec:live', "
             "'{\"status\":\"found\",\"reference\":\"R\"}', 'r')"},
            // An audit record naming another identity or role; the chain's head moved by hand.
            {"audit record naming another identity",
             "INSERT INTO idempo.audit_log (seq, at_ms, who, role, action, target, prev_hash, "
             "hash) "
             "VALUES (99, 0, 'somebody_else', 'admin', 'approve', 'default/sec:awaiting', '', '')"},
            {"audit record through the schema-5 name",
             "INSERT INTO audit_log (seq, at_ms, who, role, action, target, prev_hash, hash) "
             "VALUES (99, 0, 'somebody_else', 'admin', 'approve', 'default/sec:awaiting', '', '')"},
            {"newest audit record deleted",
             "DELETE FROM idempo.audit_log WHERE seq = (SELECT max(seq) FROM idempo.audit_log)"},
            {"audit head rewritten", "UPDATE idempo.audit_head SET seq = 0"},
            {"audit trigger disabled", "ALTER TABLE idempo.audit_log DISABLE TRIGGER USER"},
            {"approval in another identity's name",
             "SELECT * FROM idempo.approve('default', 'sec:awaiting', 'ap-forged', 'redispatch', "
             "'r', '', 3, 86400000, "
             "'somebody_else', 'approver')"},
            {"approval row inserted",
             "INSERT INTO idempo.approvals (approval_id, namespace, operation_key, revision, "
             "decision, reason, operator, role, proposal, status, operation_version, "
             "created_at_ms) "
             "VALUES ('ap-raw', 'default', 'sec:big', 1, 'redispatch', 'r', 'x', 'approver', 'p', "
             "'applied', 1, 0)"},
            {"operator settles a live lease",
             "SELECT * FROM idempo.reconcile('default', 'sec:live', "
             "'{\"status\":\"found\",\"reference\":\"R\"}', 'r')"},
            {"queue messages deleted", "DELETE FROM pgmq.q_sec_jobs"},
            {"dead letter requeued outside any replay",
             "SELECT idempo.queue_requeue_dead_letter('sec_jobs', (SELECT min(msg_id) FROM "
             "pgmq.q_sec_jobs_dlq), NULL, 'rp-none')"},
            {"guard setting changed directly",
             "UPDATE idempo.guard_settings SET value = '999999999'"},
            // A delivery whose timeout lapsed and whose message was read again (read_ct 2).
            {"stale ack of a message read again",
             "SELECT idempo.queue_ack('sec_acks', (SELECT min(msg_id) FROM pgmq.q_sec_acks), 1)"},
            {"stale archive of a message read again",
             "SELECT idempo.queue_archive('sec_acks', (SELECT min(msg_id) FROM "
             "pgmq.q_sec_acks), 1)"},
            {"stale nack of a message read again",
             "SELECT * FROM idempo.queue_nack('sec_acks', (SELECT min(msg_id) FROM "
             "pgmq.q_sec_acks), 'transient', 'x', 0, 1)"},
        };
        for (const auto &[login, groups] : kLogins)
            for (const auto &[what, script] : everyone)
                QTest::addRow("%s: %s", login.c_str(), what)
                    << QString::fromStdString(login) << QString::fromStdString(script);
        // The rows that are a bypass only for some logins (for others they are their own job).
        const auto only = [](const char *login, const char *what, const std::string &script) {
            QTest::addRow("%s: %s", login, what)
                << QString::fromLatin1(login) << QString::fromStdString(script);
        };
        for (const char *login :
             {"sec_viewer", "sec_approver", "sec_operator", "sec_admin", "sec_nobody"}) {
            only(login, "queue message deleted by a non-worker",
                 "SELECT idempo.queue_delete('sec_jobs', (SELECT min(msg_id) FROM "
                 "pgmq.q_sec_jobs))");
            only(login, "queue message archived by a non-worker",
                 "SELECT idempo.queue_archive('sec_acks', (SELECT min(msg_id) FROM "
                 "pgmq.q_sec_acks), 2)");
        }
        for (const char *login :
             {"sec_worker", "sec_viewer", "sec_approver", "sec_operator", "sec_dual", "sec_nobody"})
            only(login, "four-eyes threshold changed by a non-admin",
                 "SELECT idempo.set_guard_setting('four_eyes_above', '999999999', 'r')");
        only("sec_approver", "four-eyes passed alone: a second approval of one's own proposal",
             "SELECT * FROM idempo.approve('default', 'sec:big', 'ap-big-again', 'redispatch', "
             "'second one')");
        only("sec_dual", "approving the request one made oneself (as a worker)",
             "SELECT * FROM idempo.approve('default', 'sec:awaiting', 'ap-self', 'redispatch', "
             "'mine')");
        for (const char *login : {"sec_viewer", "sec_operator", "sec_nobody"})
            only(login, "a claim by a login that is no worker",
                 "SELECT * FROM idempo.claim('default', 'sec:new', '{}', '" + payloadHash("{}") +
                     "', 'me')");
        only("sec_dual", "approving what one touched last (as a worker)",
             "SELECT * FROM idempo.approve('default', 'sec:confirm', 'ap-self-2', 'redispatch', "
             "'mine')");
    }

    void bypassIsRefused()
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
        PostgresLedgerStore store(testUrl());
        const AuditVerify::Result chain = AuditVerify(store).run(m_anchor);
        QVERIFY2(chain.ok, chain.problem.c_str());
    }

    /// A bad argument gets its SQLSTATE (mapped to the engine's error code) and a message naming
    /// it, and nothing is written; as the owner, who may call everything.
    void badArgumentsAreRefused_data()
    {
        QTest::addColumn<QString>("call");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("named");
        const std::string ok = "'{}', '" + payloadHash("{}") + "'";
        const auto row = [](const char *what, const std::string &call, ErrorCode code,
                            const char *named) {
            QTest::newRow(what) << QString::fromStdString(call) << int(code)
                                << QString::fromLatin1(named);
        };
        row("NULL namespace", "idempo.claim(NULL, 'k', " + ok + ", 'w')",
            ErrorCode::InvalidArgument, "p_namespace");
        row("namespace with a space", "idempo.claim('a b', 'k', " + ok + ", 'w')",
            ErrorCode::InvalidKey, "p_namespace");
        row("key with a line break", "idempo.claim('d', E'k\\n', " + ok + ", 'w')",
            ErrorCode::InvalidKey, "p_key");
        row("key of 256 bytes", "idempo.claim('d', repeat('k', 256), " + ok + ", 'w')",
            ErrorCode::InvalidKey, "p_key");
        row("payload not JSON", "idempo.claim('d', 'k', '{', idempo.sha256_hex('{'), 'w')",
            ErrorCode::InvalidJson, "p_payload");
        // A recorded key: the payload is parsed whenever it is not the recorded one again.
        row("payload not JSON for a recorded key",
            "idempo.claim('default', 'sec:live', '{', idempo.sha256_hex('{'), 'w')",
            ErrorCode::InvalidJson, "p_payload");
        row("payload over 1 MiB",
            "idempo.claim('d', 'k', repeat(' ', 1048577), idempo.sha256_hex(repeat(' ', 1048577)), "
            "'w')",
            ErrorCode::PayloadTooLarge, "p_payload");
        row("hash of another text", "idempo.claim('d', 'k', '{}', idempo.sha256_hex('{ }'), 'w')",
            ErrorCode::InvalidArgument, "p_payload_sha256");
        row("negative lease", "idempo.claim('d', 'k', " + ok + ", 'w', p_lease_ms => -1)",
            ErrorCode::InvalidArgument, "p_lease_ms");
        row("unknown state", "idempo.transition('d', 'k', 'dispatching', 1, 'done')",
            ErrorCode::InvalidArgument, "p_to");
        row("result not JSON",
            "idempo.transition('d', 'k', 'dispatching', 1, 'succeeded', p_result => 'nope')",
            ErrorCode::InvalidJson, "p_result");
        row("receipt not JSON",
            "idempo.transition('d', 'k', 'dispatching', 1, 'succeeded', p_receipt => 'nope')",
            ErrorCode::InvalidJson, "p_receipt");
        row("message not JSON", "idempo.queue_send('sec_jobs', '{')", ErrorCode::InvalidJson,
            "p_message");
        row("headers not JSON", "idempo.queue_send('sec_jobs', '{}', '{')", ErrorCode::InvalidJson,
            "p_headers");
        row("bad queue name", "idempo.queue_send('Jobs', '{}')", ErrorCode::InvalidArgument,
            "p_queue");
        row("headers not an object", "idempo.queue_send('sec_jobs', '{}', '[1]')",
            ErrorCode::InvalidJson, "p_headers");
        // Durations beyond ten years overflowed the clock's arithmetic unnamed.
        row("visibility timeout over ten years", "idempo.queue_read('sec_jobs', 315360000001)",
            ErrorCode::InvalidArgument, "p_vt_ms");
        row("delay over ten years",
            "idempo.queue_send('sec_jobs', '{}', p_delay_ms => 9223372036854775000)",
            ErrorCode::InvalidArgument, "p_delay_ms");
        row("retry delay over ten years",
            "idempo.queue_nack('sec_jobs', 1, 'transient', '', 315360000001)",
            ErrorCode::InvalidArgument, "p_retry_delay_ms");
        row("visibility offset over ten years", "idempo.queue_set_vt('sec_jobs', 1, 315360000001)",
            ErrorCode::InvalidArgument, "p_vt_offset_ms");
        // A carried ack's pair that is not two integers in range was a bare cast error.
        row("ack pair with a fraction", "idempo.queue_read('sec_jobs', 1000, 1, '[[1.5, 1]]')",
            ErrorCode::InvalidArgument, "p_ack");
        row("ack pair with a huge msg_id", "idempo.queue_read('sec_jobs', 1000, 1, '[[1e30, 1]]')",
            ErrorCode::InvalidArgument, "p_ack");
        row("ack pair with a huge read_ct",
            "idempo.queue_read('sec_jobs', 1000, 1, '[[1, 99999999999]]')",
            ErrorCode::InvalidArgument, "p_ack");
        row("retention over ten years",
            "idempo.transition('d', 'k', 'dispatching', 1, 'succeeded', p_retention_ms => "
            "315360000001)",
            ErrorCode::InvalidArgument, "p_retention_ms");
        row("retry delay of a move over ten years",
            "idempo.transition('d', 'k', 'dispatching', 1, 'failed_retryable', p_error_class => "
            "'transient', p_retry_delay_ms => 9223372036854775000)",
            ErrorCode::InvalidArgument, "p_retry_delay_ms");
        row("retry-after over ten years",
            "idempo.fail('default', 'sec:live', 1, 'rate_limited', '', 315360000001)",
            ErrorCode::InvalidArgument, "p_retry_after_ms");
        row("approval retention over ten years",
            "idempo.approve('default', 'sec:confirm', 'ap-x', 'redispatch', 'r', p_retention_ms => "
            "315360000001)",
            ErrorCode::InvalidArgument, "p_retention_ms");
        row("reconciliation retention over ten years",
            "idempo.reconcile('default', 'sec:confirm', '{\"status\": \"found\"}', 'r', "
            "p_retention_ms => 315360000001)",
            ErrorCode::InvalidArgument, "p_retention_ms");
        row("ack pair with a read_ct of 0", "idempo.queue_read('sec_jobs', 1000, 1, '[[1, 0]]')",
            ErrorCode::InvalidArgument, "p_ack");
        row("ack of 10001 pairs",
            "idempo.queue_read('sec_jobs', 1000, 1, '[' || repeat('[1, 1], ', 10000) || '[1, 1]]')",
            ErrorCode::InvalidArgument, "at most 10000 pairs");
        row("approval without a reason",
            "idempo.approve('default', 'sec:confirm', 'ap-x', 'redispatch', '')",
            ErrorCode::Refused, "reason");
        row("unknown decision", "idempo.approve('default', 'sec:confirm', 'ap-x', 'maybe', 'r')",
            ErrorCode::InvalidArgument, "p_decision");
    }

    void badArgumentsAreRefused()
    {
        QFETCH(QString, call);
        QFETCH(int, code);
        QFETCH(QString, named);
        PgConnection owner(testUrl());
        const std::string before = ledgerRows(owner);
        try {
            owner.exec("bad argument", "SELECT * FROM " + call.toStdString());
            QFAIL("the call was accepted");
        } catch (const Error &e) {
            QCOMPARE(int(e.code()), code);
            QVERIFY2(QString::fromUtf8(e.what()).contains(named), e.what());
        }
        QCOMPARE(ledgerRows(owner), before);
    }

    /// The owner cannot edit, shorten or append to the chain without disabling its trigger
    /// (or setting the functions' mark by hand); when it does,
    /// the head exposes a removed newest record, and an anchor kept outside exposes a chain
    /// rewritten together with its head. (What the chain cannot prove: an owner who rewrites
    /// everything and was never anchored; docs/sql-api.md.)
    void ownerEditsAreRefusedOrDetected()
    {
        PgConnection owner(testUrl());
        PostgresLedgerStore store(testUrl());
        const std::string before = ledgerRows(owner);
        for (const char *script :
             {"DELETE FROM idempo.audit_log WHERE seq = (SELECT max(seq) FROM idempo.audit_log)",
              "UPDATE idempo.audit_log SET reason = 'nothing to see'", "TRUNCATE idempo.audit_log",
              // A plain INSERT: a record naming anyone that no function's rules let through.
              "INSERT INTO idempo.audit_log (at_ms, who, role, action, target, reason, "
              "before_state, after_state, approval_id, detail) VALUES (1, 'ap2', "
              "'idempo_approver', 'approve', 'default/forged:refund', 'forged', '', '', "
              "'ap-forged', '{}')",
              "UPDATE idempo.audit_head SET seq = seq - 1", "DELETE FROM idempo.audit_head"}) {
            bool refused = false;
            try {
                owner.execScript("owner edit", script);
            } catch (const Error &e) {
                refused =
                    e.code() == ErrorCode::LedgerUnavailable; // 42501 from the chain's triggers
            }
            QVERIFY2(refused, script);
        }
        QCOMPARE(ledgerRows(owner), before);

        owner.execScript(
            "delete the newest record past the trigger",
            "ALTER TABLE idempo.audit_log DISABLE TRIGGER USER; "
            "DELETE FROM idempo.audit_log WHERE seq = (SELECT max(seq) FROM idempo.audit_log); "
            "ALTER TABLE idempo.audit_log ENABLE TRIGGER USER");
        const AuditVerify::Result truncated = AuditVerify(store).run();
        QVERIFY(!truncated.ok);
        QVERIFY2(truncated.problem.find("newest records were removed") != std::string::npos,
                 truncated.problem.c_str());

        owner.execScript(
            "and move the head back too",
            "ALTER TABLE idempo.audit_head DISABLE TRIGGER USER; "
            "UPDATE idempo.audit_head SET (seq, hash) = (SELECT seq, hash FROM idempo.audit_log "
            "ORDER BY seq DESC LIMIT 1); "
            "ALTER TABLE idempo.audit_head ENABLE TRIGGER USER");
        QVERIFY(AuditVerify(store).run().ok); // the ledger alone cannot tell any more …
        const AuditVerify::Result anchored = AuditVerify(store).run(m_anchor);
        QVERIFY(!anchored.ok); // … the anchor kept outside can
        QVERIFY2(anchored.problem.find("expected head") != std::string::npos,
                 anchored.problem.c_str());
    }

private:
    /// The ledger the attempts aim at, written through the functions by the logins that own
    /// each step: an operation awaiting approval requested by sec_dual, one in unknown_outcome,
    /// one under a live lease, one in confirmation_required last touched by sec_dual, a large
    /// one with a pending first approval by sec_approver, and a queue with a dead letter.
    void seed(PgConnection &owner)
    {
        PgConnection dual(urlFor("sec_dual"));
        PgConnection worker(urlFor("sec_worker"));
        PgConnection approver(urlFor("sec_approver"));
        const auto claim = [](PgConnection &c, const std::string &key, const char *payload,
                              const std::string &extra) {
            return c
                .exec(
                    "seed claim",
                    "SELECT fencing_token FROM idempo.claim('default', $1, $2, $3, 'worker-label'" +
                        extra + ")",
                    PgParams().text(key).text(payload).text(payloadHash(payload)))
                .integer(0, 0);
        };
        claim(dual, "sec:awaiting", R"({"amount":1})", ", p_requires_approval => true");
        const std::int64_t unknown = claim(worker, "sec:unknown", R"({"amount":2})", "");
        worker.exec("seed",
                    "SELECT * FROM idempo.fail('default', 'sec:unknown', $1::bigint, "
                    "'unknown_outcome', 'timeout')",
                    PgParams().integer(unknown));
        claim(worker, "sec:live", R"({"amount":3})", ", p_lease_ms => 3600000");
        const std::int64_t confirm =
            claim(dual, "sec:confirm", R"({"amount":4})", ", p_max_attempts => 1");
        dual.exec(
            "seed",
            "SELECT * FROM idempo.fail('default', 'sec:confirm', $1::bigint, 'transient', '503')",
            PgParams().integer(confirm));
        const std::int64_t big = claim(worker, "sec:big", R"({"amount":5000,"currency":"EUR"})",
                                       ", p_max_attempts => 1");
        worker.exec(
            "seed",
            "SELECT * FROM idempo.fail('default', 'sec:big', $1::bigint, 'transient', '503')",
            PgParams().integer(big));
        PgConnection(urlFor("sec_admin"))
            .exec("seed", "SELECT idempo.set_guard_setting('four_eyes_above', '1000', 'policy')");
        QCOMPARE(approver
                     .exec("seed", "SELECT status FROM idempo.approve('default', 'sec:big', "
                                   "'ap-big', 'redispatch', 'ok')")
                     .text(0, 0),
                 std::string("pending"));
        owner.exec("seed queue", "SELECT * FROM idempo.queue_create('sec_jobs', 1)");
        for (const char *message : {R"({"n":1})", R"({"n":2})"})
            worker.exec("seed", "SELECT idempo.queue_send('sec_jobs', $1)",
                        PgParams().text(message));
        worker.exec("seed", "SELECT * FROM idempo.queue_read('sec_jobs', 0, 1)");
        worker.exec("seed",
                    "SELECT * FROM idempo.queue_read('sec_jobs', 0, 1)"); // dead-letters the first
        owner.exec("seed queue", "SELECT * FROM idempo.queue_create('sec_acks', 5)");
        worker.exec("seed", "SELECT idempo.queue_send('sec_acks', '{}')");
        for (int read = 1; read <= 2; ++read) // a lapsed timeout: read again
            worker.exec("seed", "SELECT * FROM idempo.queue_read('sec_acks', 0, 1)");
        PostgresLedgerStore store(testUrl());
        const AuditVerify::Result chain = AuditVerify(store).run();
        QVERIFY2(chain.ok && chain.records == 2, chain.problem.c_str());
        m_anchor = chain.lastHash;
    }

    QTemporaryDir m_passwords;
    std::string m_anchor; ///< the head after seeding, as `idempo audit head` would print it
};

QTEST_GUILESS_MAIN(TestSqlSecurity)
#include "tst_sqlsecurity.moc"
