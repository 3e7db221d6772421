// SPDX-License-Identifier: Apache-2.0
// LedgerStore::auditRecords() on every store: each filter (target, target prefix, namespace,
// identity, action, time) and their combination, keyset pages in both orders, and bad filters
// refused by name.
#include <QtTest>

#include "approvecommand.h"
#include "guardedactionhelpers.h"
#include "guardsettingcommand.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kAnna{"anna", "approver"};

std::vector<std::int64_t> seqs(const std::vector<AuditRecord> &records)
{
    std::vector<std::int64_t> out;
    for (const AuditRecord &r : records)
        out.push_back(r.seq);
    return out;
}

void reject(LedgerStore &store, const std::string &key)
{
    ApproveCommand::Request request;
    request.ns = kNs;
    request.key = key;
    request.decision = ApprovalDecision::Reject;
    request.reason = "customer withdrew";
    // A named identity: the login that claimed the operation may not decide it.
    ApproveCommand(store, kAnna, request).execute();
}

void setting(LedgerStore &store, const std::string &value)
{
    GuardSettingCommand(store, store.actor(), "four_eyes_above", value, "policy review").execute();
}

} // namespace

class TestAuditFilterContract final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store: %s", LedgerFixture::storeName()); }
    void init();
    void cleanup() { m_fixture.reset(); }
    void eachFilterNarrowsInTheLedger();
    void pagesInBothOrders();
    void timeRange();
    void badFiltersAreRefusedByName();

private:
    AuditFilter all() const
    {
        AuditFilter f;
        f.limit = 100;
        return f;
    }
    std::vector<AuditRecord> records(const AuditFilter &f)
    {
        return m_fixture->store().auditRecords(f);
    }

    std::unique_ptr<LedgerFixture> m_fixture;
    std::vector<AuditRecord> m_log; ///< every record, oldest first
};

void TestAuditFilterContract::init()
{
    m_fixture = std::make_unique<LedgerFixture>();
    LedgerStore &store = m_fixture->store();
    // Records 1..5: three operations (one key a prefix of another), two settings.
    for (const std::string key : {"run-1:a", "run-1:ab", "run-2:c"})
        needingConfirmation(*m_fixture, key);
    reject(store, "run-1:a");
    m_fixture->advanceMs(60'000);
    setting(store, "5000.00");
    reject(store, "run-1:ab");
    m_fixture->advanceMs(60'000);
    setting(store, "");
    reject(store, "run-2:c");
    m_log = store.auditLog(0, 100);
    QCOMPARE(m_log.size(), std::size_t{5});
}

void TestAuditFilterContract::eachFilterNarrowsInTheLedger()
{
    AuditFilter f = all();
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{1, 2, 3, 4, 5}));

    f.target = "default/run-1:a"; // exactly: not run-1:ab
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{1}));

    f = all();
    f.targetPrefix = "default/run-1:a"; // both
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{1, 3}));
    f.targetPrefix = "default/run-1%"; // no wildcards
    QVERIFY(records(f).empty());
    f.targetPrefix = "setting:";
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{2, 4}));

    f = all();
    f.ns = kNs; // operations of the namespace, not the settings
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{1, 3, 5}));
    f.ns = "defaul"; // a namespace, not a prefix of one
    QVERIFY(records(f).empty());

    f = all();
    f.action = "setting";
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{2, 4}));
    f.action = "reject";
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{1, 3, 5}));

    f = all();
    f.who = kAnna.name;
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{1, 3, 5}));
    f.who = m_log[1].entry.who; // the settings' identity
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{2, 4}));
    f.who = "nobody";
    QVERIFY(records(f).empty());

    // Together: every filter narrows.
    f = all();
    f.ns = kNs;
    f.action = "reject";
    f.who = kAnna.name;
    f.targetPrefix = "default/run-2";
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{5}));
    // Records come whole, hashes included.
    QCOMPARE(records(f).front().hash, m_log.back().hash);
    QCOMPARE(records(f).front().entry.reason, std::string("customer withdrew"));
}

void TestAuditFilterContract::pagesInBothOrders()
{
    AuditFilter f = all();
    f.limit = 2;
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{1, 2}));
    f.afterSeq = 2;
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{3, 4}));
    f.afterSeq = 4;
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{5}));

    f = all();
    f.newestFirst = true;
    f.limit = 2;
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{5, 4}));
    f.afterSeq = 4;
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{3, 2}));
    f.afterSeq = 2;
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{1}));
    f.afterSeq = 1;
    QVERIFY(records(f).empty());

    // A filtered page continues past its cursor, skipping what does not match.
    f = all();
    f.newestFirst = true;
    f.action = "reject";
    f.limit = 1;
    f.afterSeq = 5;
    QCOMPARE(seqs(records(f)), (std::vector<std::int64_t>{3}));
}

void TestAuditFilterContract::timeRange()
{
    // Judged against the times the ledger stamped (its own clock on either store).
    for (const AuditRecord &pivot : m_log) {
        AuditFilter from = all();
        from.fromMs = pivot.atMs;
        AuditFilter until = all();
        until.toMs = pivot.atMs;
        std::vector<std::int64_t> later;
        std::vector<std::int64_t> earlier;
        for (const AuditRecord &r : m_log)
            (r.atMs >= pivot.atMs ? later : earlier).push_back(r.seq);
        QCOMPARE(seqs(records(from)), later);
        QCOMPARE(seqs(records(until)), earlier);
        from.toMs = pivot.atMs + 1;
        from.action = pivot.entry.action;
        for (const AuditRecord &r : records(from)) {
            QCOMPARE(r.atMs, pivot.atMs);
            QCOMPARE(r.entry.action, pivot.entry.action);
        }
    }
}

void TestAuditFilterContract::badFiltersAreRefusedByName()
{
    const auto refusal = [this](const AuditFilter &f) -> QString {
        try {
            records(f);
        } catch (const Error &e) {
            return e.code() == ErrorCode::InvalidArgument ? QString::fromUtf8(e.what())
                                                          : QStringLiteral("wrong code");
        }
        return QStringLiteral("accepted");
    };
    AuditFilter f = all();
    f.limit = 0;
    QVERIFY2(refusal(f).contains(QLatin1String("limit")), qPrintable(refusal(f)));
    f = all();
    f.afterSeq = -3;
    QVERIFY2(refusal(f).contains(QLatin1String("-3")), qPrintable(refusal(f)));
    f = all();
    f.fromMs = 2000;
    f.toMs = 1000;
    QVERIFY2(refusal(f).contains(QLatin1String("time range")), qPrintable(refusal(f)));
}

QTEST_GUILESS_MAIN(TestAuditFilterContract)
#include "tst_auditfiltercontract.moc"
