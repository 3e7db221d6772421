// SPDX-License-Identifier: Apache-2.0
// A ledger made by schema 5 (the table-and-trigger ledger), with data in it, migrated in place
// to the function API: every row kept, the audit chain intact and anchored, no role left with a
// write on any table, and the functions working on the old rows. Runs under
// tests/pg/with-postgres.sh.
#include <QCryptographicHash>
#include <QtTest>

#include "approvecommand.h"
#include "auditchain.h"
#include "auditverify.h"
#include "canonicaljson.h"
#include "engine.h"
#include "error.h"
#include "migrations.h"
#include "oldschemaledger.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"

using namespace idempo;

namespace {

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

std::string urlFor(const std::string &database)
{
    QUrl url(QString::fromStdString(testUrl()));
    url.setPath(QLatin1Char('/') + QString::fromStdString(database));
    return url.toString().toStdString();
}

std::string sha256Of(const std::string &text)
{
    return QCryptographicHash::hash(QByteArrayView(text), QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

/// What `idempo init` of the schema-5 build did: schema_migrations, then 0001 … 0005.
void initSchema5(PgConnection &c)
{
    test::migratePostgresTo(c, 5);
}

constexpr std::int64_t kNow = 1'800'000'000'000;

/// Rows as the schema-5 store wrote them: five operations with history, a suppression, an
/// applied approval, a four-eyes setting, three chained audit records, and a queue with a
/// message, a nacked message and a dead letter.
void seedSchema5(PgConnection &c)
{
    const auto op = [&](const std::string &key, const std::string &state,
                        const std::string &payload, std::int64_t token,
                        std::optional<std::int64_t> leaseExpires, const std::string &kind) {
        c.exec("seed operation",
               "INSERT INTO operations (namespace, operation_key, run_id, step_id, tool_kind, "
               "state, payload, "
               "payload_fingerprint, attempt, max_attempts, lease_owner, lease_expires_at_ms, "
               "fencing_token, "
               "created_at_ms, updated_at_ms, retention_expires_at_ms, operation_version, "
               "schema_version) "
               "VALUES ('default', $1, 'run-5', 'refund', $6, $2, $3, $4, 1, 1, 'worker-5', "
               "$5::bigint, $7::bigint, "
               "$8::bigint, $8::bigint, CASE WHEN $2 = 'succeeded' THEN $8::bigint + 86400000 END, "
               "2, 1)",
               PgParams()
                   .text(key)
                   .text(state)
                   .text(payload)
                   .text(sha256Of(payload))
                   .optionalInteger(leaseExpires)
                   .text(kind)
                   .integer(token)
                   .integer(kNow));
        c.exec("seed history",
               "INSERT INTO operation_events (operation_id, at_ms, from_state, to_state, "
               "fencing_token, attempt, actor, detail) "
               "SELECT id, $2::bigint, NULL, 'dispatching', fencing_token, 1, 'worker-5', "
               "'created' FROM operations "
               "WHERE operation_key = $1 UNION ALL "
               "SELECT id, $2::bigint, 'dispatching', state, fencing_token, 1, 'worker-5', 'moved' "
               "FROM operations "
               "WHERE operation_key = $1 AND state <> 'dispatching'",
               PgParams().text(key).integer(kNow));
    };
    const std::string refund = R"({"amount":"2500.00","currency":"EUR"})";
    op("run-5:done", "succeeded", R"({"amount":1})", 1, std::nullopt, "protected_write");
    op("run-5:live", "dispatching", R"({"amount":2})", 2, kNow + 3'600'000'000, "protected_write");
    op("run-5:lost", "unknown_outcome", R"({"amount":3})", 3, std::nullopt, "protected_write");
    op("run-5:confirm", "confirmation_required", refund, 4, std::nullopt, "protected_write");
    op("run-5:approved", "received", R"({"amount":5})", 0, std::nullopt, "protected_write");
    c.exec("seed suppression",
           "INSERT INTO suppressions (namespace, operation_key, at_ms, outcome, state, source, "
           "fingerprint) VALUES ('default', 'run-5:done', $1::bigint, 'replayed', 'succeeded', "
           "'worker-5', 'f')",
           PgParams().integer(kNow));
    c.exec("seed approval",
           "INSERT INTO approvals (approval_id, namespace, operation_key, revision, decision, "
           "reason, operator, role, "
           "proposal, status, operation_version, created_at_ms) VALUES ('ap-5', 'default', "
           "'run-5:approved', 1, "
           "'redispatch', 'ok', 'idempo', 'owner', 'p', 'applied', 1, $1::bigint)",
           PgParams().integer(kNow));
    c.exec("seed setting",
           "INSERT INTO guard_settings (name, value) VALUES ('four_eyes_above', '1000.00')");
    std::string prev = AuditGenesisHash;
    for (int seq = 1; seq <= 3; ++seq) {
        const AuditEntry entry{"idempo", "owner", "approve", "default/run-5:approved",   "ok",
                               "",       "",      "ap-5",    canonicalJson({{"n", seq}})};
        const AuditRecord r = chainAuditEntry(entry, seq, kNow + seq, prev, "");
        c.exec("seed audit",
               "INSERT INTO audit_log (seq, at_ms, who, role, action, target, reason, "
               "before_state, after_state, "
               "approval_id, detail, prev_hash, hash) VALUES ($1::bigint, $2::bigint, $3, $4, $5, "
               "$6, $7, $8, $9, $10, "
               "$11, $12, $13)",
               PgParams()
                   .integer(r.seq)
                   .integer(r.atMs)
                   .text(entry.who)
                   .text(entry.role)
                   .text(entry.action)
                   .text(entry.target)
                   .text(entry.reason)
                   .text(entry.beforeState)
                   .text(entry.afterState)
                   .text(entry.approvalId)
                   .text(entry.detail)
                   .text(r.prevHash)
                   .text(r.hash));
        prev = r.hash;
    }
    // The queue as the schema-5 createQueue() made it, grants included.
    c.execScript("seed queue", R"SQL(
        CREATE SCHEMA pgmq;
        CREATE TABLE pgmq.q_old (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, read_ct integer NOT NULL DEFAULT 0,
            enqueued_at timestamptz NOT NULL DEFAULT now(), last_read_at timestamptz, vt timestamptz NOT NULL,
            message jsonb, headers jsonb);
        CREATE TABLE pgmq.a_old (msg_id bigint PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0,
            enqueued_at timestamptz NOT NULL DEFAULT now(), last_read_at timestamptz,
            archived_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, headers jsonb);
        CREATE TABLE pgmq.q_old_dlq (LIKE pgmq.q_old INCLUDING ALL);
        CREATE TABLE pgmq.a_old_dlq (LIKE pgmq.a_old INCLUDING ALL);
        INSERT INTO queue_registry VALUES ('old', 1, 'old_dlq', 0), ('old_dlq', NULL, NULL, 0);
        INSERT INTO pgmq.q_old (vt, message) VALUES (clock_timestamp(), '{"n": 1}'), (clock_timestamp(), '{"n": 2}');
        UPDATE pgmq.q_old SET read_ct = 1 WHERE msg_id = 2;
        INSERT INTO queue_errors VALUES ('old', 2, 'transient', '503', 0);
        INSERT INTO pgmq.q_old_dlq (vt, message, headers) VALUES (clock_timestamp(), '{"n": 0}', '{"dlq": {}}');
        GRANT USAGE ON SCHEMA pgmq TO idempo_worker, idempo_operator, idempo_viewer;
        GRANT SELECT, INSERT, UPDATE, DELETE ON pgmq.q_old, pgmq.a_old, pgmq.q_old_dlq, pgmq.a_old_dlq TO idempo_worker;
        GRANT SELECT, INSERT, DELETE ON pgmq.q_old, pgmq.a_old, pgmq.q_old_dlq, pgmq.a_old_dlq TO idempo_operator;
    )SQL");
}

/// Every row of the ledger's tables as text, ordered; labelled by name without "public.".
std::string dump(PgConnection &c, const std::vector<std::string> &tables)
{
    std::string out;
    for (const std::string &t : tables)
        out += (t.starts_with("public.") ? t.substr(7) : t) + ":" +
               c.exec("dump",
                      "SELECT coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '') FROM " +
                          t + " AS x")
                   .text(0, 0) +
               "\n";
    return out;
}

} // namespace

class TestPostgresMigration final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
    }

    void schema5LedgerMigratesInPlace()
    {
        PgConnection admin(testUrl());
        admin.execScript("drop database",
                         "DROP DATABASE IF EXISTS idempo_migration_test WITH (FORCE)");
        admin.execScript("create database", "CREATE DATABASE idempo_migration_test");
        const std::string url = urlFor("idempo_migration_test");
        PgConnection c(url);
        initSchema5(c);
        seedSchema5(c);
        const std::vector<std::string> before = {
            "operations",     "operation_events", "suppressions", "approvals",  "audit_log",
            "guard_settings", "queue_registry",   "queue_errors", "pgmq.q_old", "pgmq.q_old_dlq"};
        const std::string rows = dump(c, before);

        auto store = std::make_shared<PostgresLedgerStore>(url);
        QCOMPARE(store->schemaVersion(), 5);
        store->migrate();
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        store->migrate(); // again: nothing to do
        // Every row kept: the tables moved to schema idempo, and the old names, now views with
        // the schema-5 columns, read exactly the rows they held.
        std::vector<std::string> legacy;
        for (const std::string &t : before)
            legacy.push_back(t.starts_with("pgmq.") ? t : "public." + t);
        QCOMPARE(dump(c, legacy), rows);
        QCOMPARE(c.exec("count", "SELECT count(*) FROM idempo.operations").integer(0, 0),
                 std::int64_t(5));
        QCOMPARE(c.exec("count", "SELECT count(*) FROM idempo.operation_events").integer(0, 0),
                 std::int64_t(9));

        // The chain verifies as it was, and its head is the newest old record.
        const AuditVerify::Result verified = AuditVerify(*store).run();
        QVERIFY2(verified.ok, verified.problem.c_str());
        QCOMPARE(verified.records, std::int64_t(3));
        QVERIFY(verified.head);
        QCOMPARE(verified.head->seq, std::int64_t(3));
        QCOMPARE(verified.head->hash, verified.lastHash);

        // No role writes a table any more; the 0005 triggers and functions are gone.
        const PgResult grants = c.exec("privileges", R"SQL(
            SELECT r.rolname || ' ' || p.privilege || ' ' || n.nspname || '.' || t.relname
            FROM pg_class AS t JOIN pg_namespace AS n ON n.oid = t.relnamespace
            CROSS JOIN (SELECT rolname FROM pg_roles WHERE rolname LIKE 'idempo\_%' UNION ALL SELECT 'public') AS r
            CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) AS p (privilege)
            WHERE n.nspname IN ('idempo', 'pgmq', 'public') AND t.relkind IN ('r', 'v')
              AND has_table_privilege(r.rolname, t.oid, p.privilege)
            ORDER BY 1)SQL");
        QStringList granted;
        for (int row = 0; row < grants.rows(); ++row)
            granted << QString::fromStdString(grants.text(row, 0));
        QVERIFY2(granted.isEmpty(), qPrintable(granted.join(QStringLiteral(", "))));
        QCOMPARE(
            c.exec("old functions", "SELECT count(*) FROM pg_proc WHERE proname LIKE 'idempo\\_%'")
                .integer(0, 0),
            std::int64_t(0));

        // The functions work on the old rows.
        Engine engine(store);
        ClaimInput done;
        done.key = "run-5:done";
        done.payloadJson = R"({"amount":1})";
        done.owner = "worker-6";
        QCOMPARE(engine.claim(done).outcome, ClaimOutcome::Replayed);
        ClaimInput live = done;
        live.key = "run-5:live";
        live.payloadJson = R"({"amount":2})";
        QCOMPARE(engine.claim(live).outcome, ClaimOutcome::InProgress);
        QCOMPARE(engine.complete("default", "run-5:live", 2, "{}", "").state,
                 OperationState::Succeeded);
        ApproveCommand::Request first{.key = "run-5:confirm",
                                      .decision = ApprovalDecision::Redispatch,
                                      .reason = "refund checked",
                                      .approvalId = "ap-6"};
        QCOMPARE(
            ApproveCommand(*store, {"bob", "approver"}, first).execute().status,
            std::string("pending")); // 2500.00 EUR is above the four-eyes threshold carried over
        first.approvalId = "ap-7";
        QCOMPARE(ApproveCommand(*store, {"carol", "approver"}, first).execute().status,
                 std::string("applied"));
        QCOMPARE(store->find("default", "run-5:confirm")->state, OperationState::Received);
        PostgresMessageQueue queue(store);
        const auto read = queue.read("old", 30'000, 10);
        QCOMPARE(read.size(), std::size_t(1)); // message 2 had used its one read: dead-lettered
        QCOMPARE(queue.deadLetters("old", 0, 10).size(), std::size_t(2));
        QCOMPARE(queue.deadLetters("old", 0, 10).back().provenance.lastErrorDetail,
                 std::string("503"));
        queue.ack("old", ReadReceipt::of(read[0]));
        queue.ack("old", ReadReceipt::of(read[0])); // retried: done again

        const AuditVerify::Result after = AuditVerify(*store).run(verified.lastHash);
        QVERIFY2(after.ok, after.problem.c_str());
        QCOMPARE(after.records, std::int64_t(5));
        QCOMPARE(after.anchorSeq, std::optional<std::int64_t>(3));
    }
};

QTEST_GUILESS_MAIN(TestPostgresMigration)
#include "tst_postgresmigration.moc"
