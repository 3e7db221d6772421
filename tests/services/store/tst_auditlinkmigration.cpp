// SPDX-License-Identifier: Apache-2.0
// A ledger whose audit records predate target links (SQLite 10, PostgreSQL 21), migrated in
// place: the old records keep their hashes and the chain still verifies; every record appended
// after links to its target's previous one, the first of them to the newest old one. An
// evidence pack then carries the chain around the operation's old records only, and none for
// an operation whose records are all linked; records cut from it, or a link dropped, are refused.
// PostgreSQL runs under tests/pg/with-postgres.sh.
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QtTest>

#include "approvecommand.h"
#include "auditchain.h"
#include "auditverify.h"
#include "engine.h"
#include "evidencepack.h"
#include "migrations.h"
#include "oldschemaledger.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"
#include "sqliteledgerstore.h"

using namespace idempo;

namespace {

constexpr const char *kKey = "legacy:refund";
constexpr const char *kTarget = "default/legacy:refund";

std::string testUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

/// The old build's records: the operation's (1, 3) with another target's between and after.
std::vector<AuditEntry> oldEntries()
{
    const auto entry = [](const std::string &target, const std::string &reason) {
        return AuditEntry{"olga", "owner", "note", target, reason, "", "", "", "{}"};
    };
    return {entry(kTarget, "first look"), entry("setting:four_eyes_above", "policy"),
            entry(kTarget, "second look"), entry("default/other:refund", "elsewhere")};
}

void rejectTheOperation(LedgerStore &store)
{
    ApproveCommand::Request r;
    r.key = kKey;
    r.decision = ApprovalDecision::Reject;
    r.reason = "duplicate request";
    ApproveCommand(store, {"ann", "approver"}, r).execute();
}

QString problemOf(const EvidencePack::Verdict &v)
{
    return QString::fromStdString(v.problem);
}

void checkMigratedChain(const std::shared_ptr<LedgerStore> &ledger)
{
    LedgerStore &store = *ledger;
    const std::vector<AuditRecord> old = store.auditLog(0, 10);
    QCOMPARE(old.size(), std::size_t(4));
    for (const AuditRecord &r : old)
        QVERIFY(r.targetPrevHash.empty());
    rejectTheOperation(store);

    // A new operation's records: linked from its first on.
    Engine engine(ledger);
    ClaimInput in;
    in.key = "fresh:refund";
    in.payloadJson = R"({"amount":5})";
    in.owner = "worker";
    in.requiresApproval = true;
    engine.claim(in);
    ApproveCommand::Request r;
    r.key = "fresh:refund";
    r.decision = ApprovalDecision::Reject;
    r.reason = "not needed";
    ApproveCommand(store, {"ann", "approver"}, r).execute();

    const std::vector<AuditRecord> all = store.auditLog(0, 10);
    QCOMPARE(all.size(), std::size_t(6));
    QCOMPARE(all[4].entry.target, std::string(kTarget));
    QCOMPARE(all[4].targetPrevHash, all[2].hash); // the operation's newest old record
    QCOMPARE(all[5].targetPrevHash, std::string(AuditGenesisHash));
    const AuditVerify::Result chain = AuditVerify(store).run();
    QVERIFY2(chain.ok, chain.problem.c_str());
    QCOMPARE(chain.records, 6);

    const nlohmann::json pack = EvidencePack::build(store, "default", kKey);
    QCOMPARE(pack["version"], 3);
    QCOMPARE(pack["audit_records"].size(), std::size_t(3));
    // The chain around the old records only: record 2, between them; not 4, after them.
    QCOMPARE(pack["chain"]["links"].size(), std::size_t(1));
    QCOMPARE(pack["chain"]["links"][0]["seq"], 2);
    EvidencePack::Verdict v = EvidencePack::verify(pack);
    QVERIFY2(v.ok, v.problem.c_str());
    QCOMPARE(v.linked, false);
    v = EvidencePack::verifyAgainst(store, pack);
    QVERIFY2(v.ok, v.problem.c_str());

    nlohmann::json cut = pack;
    cut["chain"]["links"] = nlohmann::json::array();
    v = EvidencePack::verify(cut);
    QVERIFY(!v.ok);
    QVERIFY2(problemOf(v).contains(QLatin1String("chain record 2 is missing")), v.problem.c_str());
    cut = pack;
    cut["audit_records"].erase(1); // the newest old record
    v = EvidencePack::verify(cut);
    QVERIFY(!v.ok);
    QVERIFY2(problemOf(v).contains(QLatin1String("does not point at audit record 1's hash")),
             v.problem.c_str());
    cut = pack;
    cut["audit_records"][2].erase("target_prev_hash");
    v = EvidencePack::verify(cut);
    QVERIFY(!v.ok);
    QVERIFY2(problemOf(v).contains(QLatin1String("audit record 5 does not match its hash")),
             v.problem.c_str());
    // Record 4, after the old span, offered as a link: the proof needs none there.
    const AuditRecord r4 = store.auditLog(3, 1).front();
    cut = pack;
    nlohmann::json link = auditHashedFields(r4);
    link["hash"] = r4.hash;
    cut["chain"]["links"].push_back(link);
    v = EvidencePack::verify(cut);
    QVERIFY(!v.ok);
    QVERIFY2(problemOf(v).contains(QLatin1String("chain record 4 lies beyond the span")),
             v.problem.c_str());

    const nlohmann::json fresh = EvidencePack::build(store, "default", "fresh:refund");
    QCOMPARE(fresh["audit_records"].size(), std::size_t(1));
    QCOMPARE(fresh["chain"]["links"].size(), std::size_t(0));
    v = EvidencePack::verify(fresh);
    QVERIFY2(v.ok, v.problem.c_str());
    QCOMPARE(v.linked, true);
}

} // namespace

class TestAuditLinkMigration final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    /// A record rehashed with a link to another than its target's previous record: its own
    /// hash holds, the chain's links hold, the target link is what names it.
    void theVerifierNamesAWrongTargetLink()
    {
        const std::vector<AuditEntry> entries = oldEntries();
        const AuditRecord r1 =
            chainAuditEntry(entries[0], 1, 1, AuditGenesisHash, AuditGenesisHash);
        const AuditRecord r2 = chainAuditEntry(entries[1], 2, 2, r1.hash, AuditGenesisHash);
        const AuditRecord forged = chainAuditEntry(entries[2], 3, 3, r2.hash, AuditGenesisHash);
        AuditChainVerifier verifier;
        QVERIFY(verifier.add(r1));
        QVERIFY(verifier.add(r2));
        QVERIFY(!verifier.add(forged));
        QCOMPARE(verifier.firstBad(), std::optional<std::int64_t>(3));
        QVERIFY2(QString::fromStdString(verifier.problem())
                     .contains(QLatin1String("does not point at the previous record of")),
                 verifier.problem().c_str());
        // Once records carry links, one without is refused too.
        AuditChainVerifier unlinked;
        QVERIFY(unlinked.add(r1));
        QVERIFY(!unlinked.add(chainAuditEntry(entries[1], 2, 2, r1.hash, "")));
        QVERIFY2(
            QString::fromStdString(unlinked.problem()).contains(QLatin1String("carries no link")),
            unlinked.problem().c_str());
    }

    void sqliteSchema10IsLinkedFromHereOn()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("ledger.db"));
        {
            QSqlDatabase db =
                QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("schema10"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            const QString problem = test::migrateSqliteTo(q, 10);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
            QVERIFY(q.exec(QStringLiteral(
                "INSERT INTO operations (namespace, operation_key, tool_kind, state, payload, "
                "payload_fingerprint, attempt, max_attempts, fencing_token, created_at_ms, "
                "updated_at_ms, schema_version) VALUES ('default', 'legacy:refund', "
                "'protected_write', 'awaiting_approval', '{}', '00', 0, 3, 0, 0, 0, 1)")));
            std::string prev = AuditGenesisHash;
            std::int64_t seq = 0;
            for (const AuditEntry &e : oldEntries()) {
                const AuditRecord r = chainAuditEntry(e, ++seq, 1000 + seq, prev, "");
                prev = r.hash;
                QVERIFY(q.prepare(QStringLiteral(
                    "INSERT INTO audit_log (seq, at_ms, who, role, action, target, reason, "
                    "before_state, after_state, approval_id, detail, prev_hash, hash) VALUES "
                    "(?,?,?,?,?,?,?,?,?,?,?,?,?)")));
                q.addBindValue(static_cast<qlonglong>(r.seq));
                q.addBindValue(static_cast<qlonglong>(r.atMs));
                for (const std::string *s :
                     {&e.who, &e.role, &e.action, &e.target, &e.reason, &e.beforeState,
                      &e.afterState, &e.approvalId, &e.detail, &r.prevHash, &r.hash})
                    q.addBindValue(QString::fromStdString(*s));
                QVERIFY2(q.exec(), qPrintable(q.lastQuery()));
            }
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("schema10"));
        auto store = std::make_shared<SqliteLedgerStore>(path, std::make_shared<SystemClock>());
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("sqlite")));
        checkMigratedChain(store);
    }

    void postgresSchema21IsLinkedFromHereOn()
    {
        if (testUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        const std::string ledger = test::freshPostgresDatabase("idempo_audit_links");
        {
            PgConnection c(ledger);
            test::migratePostgresTo(c, 21);
            c.exec("claim",
                   "SELECT * FROM idempo.claim('default', $1, '{}', idempo.sha256_hex('{}'), "
                   "'worker', p_requires_approval => true)",
                   PgParams().text(kKey));
            std::int64_t at = 1000;
            for (const AuditEntry &e : oldEntries())
                c.exec("old record",
                       "INSERT INTO idempo.audit_log (at_ms, who, role, action, target, reason, "
                       "before_state, after_state, approval_id, detail) VALUES ($1::bigint, $2, "
                       "$3, $4, $5, $6, $7, $8, $9, $10)",
                       PgParams()
                           .integer(++at)
                           .text(e.who)
                           .text(e.role)
                           .text(e.action)
                           .text(e.target)
                           .text(e.reason)
                           .text(e.beforeState)
                           .text(e.afterState)
                           .text(e.approvalId)
                           .text(e.detail));
        }
        auto store = std::make_shared<PostgresLedgerStore>(ledger);
        QCOMPARE(store->schemaVersion(), 21);
        store->migrate();
        QCOMPARE(store->schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        checkMigratedChain(store);
    }
};

QTEST_GUILESS_MAIN(TestAuditLinkMigration)
#include "tst_auditlinkmigration.moc"
