// SPDX-License-Identifier: Apache-2.0
// The sandbox journal on the store the suite runs against (SQLite, or PostgreSQL under
// tests/pg/with-postgres.sh): a deduplicating provider answers a repeated key with the original
// effect, also when two connections race for it; lookup by key finds the first effect; a fault
// window opens once per operation; another store on the same ledger sees all of it.
#include <thread>

#include <QtTest>

#include "ledgerfixture.h"
#include "sandboxjournal.h"

using namespace idempo;
using namespace idempo::sandbox;

namespace {

Effect proposed(const std::string &ns, const std::string &key, std::int64_t token)
{
    Effect e;
    e.ns = ns;
    e.provider = "payments";
    e.operationKey = key;
    e.receivedKey = key;
    e.fencingToken = token;
    e.atMs = 1'000 + token;
    e.confirmedAtMs = 1'000 + token;
    return e;
}

/// A namespace of its own per test: PostgreSQL ledgers keep the sandbox tables between tests.
std::string freshNamespace()
{
    return std::string("journal-") + QTest::currentTestFunction();
}

} // namespace

class TestSandboxJournal final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store: %s", test::LedgerFixture::storeName()); }

    void repeatedKeyAnswersTheOriginalEffect()
    {
        test::LedgerFixture ledger;
        const auto journal = SandboxJournal::open(ledger.store());
        journal->createTables();
        const std::string ns = freshNamespace();
        const Performed first = journal->perform(proposed(ns, "r1:refund", 3), true);
        QVERIFY(!first.deduplicated);
        QCOMPARE(first.effect.effectId, std::string("payments/r1:refund/1"));
        const Performed again = journal->perform(proposed(ns, "r1:refund", 4), true);
        QVERIFY(again.deduplicated);
        QCOMPARE(again.effect.effectId, first.effect.effectId);
        QCOMPARE(again.effect.fencingToken, std::int64_t(3));
        QCOMPARE(journal->effects(ns).size(), std::size_t(1));

        // The same key at another provider, or in another namespace, is another operation.
        Effect elsewhere = proposed(ns, "r1:refund", 5);
        elsewhere.provider = "core-banking";
        QVERIFY(!journal->perform(elsewhere, true).deduplicated);
        QVERIFY(!journal->perform(proposed(ns + "-other", "r1:refund", 5), true).deduplicated);
        QCOMPARE(journal->effects(ns).size(), std::size_t(2));
    }

    void withoutDedupeEveryCallIsAnEffect()
    {
        test::LedgerFixture ledger;
        const auto journal = SandboxJournal::open(ledger.store());
        journal->createTables();
        const std::string ns = freshNamespace();
        QCOMPARE(journal->perform(proposed(ns, "r2:book", 1), false).effect.effectId,
                 std::string("payments/r2:book/1"));
        QCOMPARE(journal->perform(proposed(ns, "r2:book", 2), false).effect.effectId,
                 std::string("payments/r2:book/2"));
        QCOMPARE(journal->effects(ns).size(), std::size_t(2));
        const std::optional<Effect> found = journal->lookup(ns, "payments", "r2:book");
        QVERIFY(found.has_value());
        QCOMPARE(found->effectId, std::string("payments/r2:book/1"));
        QCOMPARE(found->fencingToken, std::int64_t(1));
        QVERIFY(!journal->lookup(ns, "payments", "r2:other").has_value());
        QVERIFY(!journal->lookup(ns, "mailer", "r2:book").has_value());
    }

    void racingConnectionsMakeOneEffect()
    {
        test::LedgerFixture ledger;
        SandboxJournal::open(ledger.store())->createTables();
        const std::string ns = freshNamespace();
        constexpr int PerThread = 15;
        std::atomic<int> deduplicated{0};
        std::atomic<int> failures{0};
        const auto race = [&](std::shared_ptr<LedgerStore> store) {
            const auto journal = SandboxJournal::open(*store);
            for (int i = 0; i < PerThread; ++i) {
                try {
                    if (journal->perform(proposed(ns, "r3:provision", i + 1), true).deduplicated)
                        ++deduplicated;
                } catch (const std::exception &) {
                    ++failures;
                }
            }
        };
        std::thread a(race, ledger.openAnother());
        std::thread b(race, ledger.openAnother());
        a.join();
        b.join();
        QCOMPARE(failures.load(), 0);
        QCOMPARE(deduplicated.load(), 2 * PerThread - 1);
        const auto journal = SandboxJournal::open(ledger.store());
        QCOMPARE(journal->effects(ns).size(), std::size_t(1));
    }

    void faultWindowOpensOncePerOperation()
    {
        test::LedgerFixture ledger;
        const auto journal = SandboxJournal::open(ledger.store());
        journal->createTables();
        const std::string ns = freshNamespace();
        QVERIFY(journal->openWindow(ns, "r4:provision", "crash-after-effect"));
        QVERIFY(!journal->openWindow(ns, "r4:provision", "crash-after-effect"));
        const std::shared_ptr<LedgerStore> anotherStore = ledger.openAnother();
        const auto another = SandboxJournal::open(*anotherStore);
        QVERIFY(!another->openWindow(ns, "r4:provision", "crash-after-effect"));
        QVERIFY(another->openWindow(ns, "r4:provision", "crash-after-record"));
        QVERIFY(another->openWindow(ns, "r5:provision", "crash-after-effect"));
    }

    void runsAndHistoryAreRead()
    {
        test::LedgerFixture ledger;
        const auto journal = SandboxJournal::open(ledger.store());
        journal->createTables();
        const std::string ns = freshNamespace();
        QVERIFY(!journal->hasRuns(ns));
        journal->addRuns({{ns, "kyc-1-000001", "kyc-onboarding", false},
                          {ns, "invoice-1-000002", "invoice-email", true}});
        QVERIFY(journal->hasRuns(ns));
        const std::vector<sandbox::RunRecord> runs = journal->runs(ns);
        QCOMPARE(runs.size(), std::size_t(2));
        QCOMPARE(runs.at(0).runId, std::string("invoice-1-000002"));
        QVERIFY(runs.at(0).naive);
        QVERIFY(!runs.at(1).naive);

        ClaimInput claim;
        claim.ns = ns;
        claim.key = "kyc-1-000001:provision_account";
        claim.payloadJson = R"({"client":1})";
        claim.owner = "w0";
        const ClaimResult claimed = ledger.engine().claim(claim);
        ledger.engine().complete(ns, claim.key, claimed.operation.fencingToken, R"({"ok":true})",
                                 {});
        const std::vector<HistoryRow> history = journal->history(ns);
        QCOMPARE(history.size(), std::size_t(2));
        QCOMPARE(history.at(0).operationKey, claim.key);
        QVERIFY(!history.at(0).from.has_value());
        QCOMPARE(history.at(0).to, OperationState::Dispatching);
        QCOMPARE(history.at(1).to, OperationState::Succeeded);
        QCOMPARE(history.at(1).fencingToken, claimed.operation.fencingToken);
    }
};

QTEST_GUILESS_MAIN(TestSandboxJournal)
#include "tst_sandboxjournal.moc"
