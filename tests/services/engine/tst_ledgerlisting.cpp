// SPDX-License-Identifier: Apache-2.0
// The LedgerStore contract, through the engine, on every store: what the ledger lists and keeps
// apart. Keyset pages, key prefixes as byte ranges, values and their order, namespaces.
#include <QtTest>

#include "ledgercontracthelpers.h"
#include "ledgerfixture.h"
#include "operationkeys.h"

using namespace idempo;
using namespace idempo::test;

namespace {

} // namespace

class TestLedgerListing final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void valueIsRecordedByTheCreatingClaim()
    {
        LedgerFixture f;
        ClaimInput in = claimInput("run-40:refund");
        in.value = Amount{125'000, "EUR"};
        const ClaimResult first = f.engine().claim(in);
        QVERIFY(first.operation.value);
        QCOMPARE(first.operation.value->minorUnits, std::int64_t(125'000));
        QCOMPARE(first.operation.value->currency, std::string("EUR"));
        f.engine().complete(kNs, in.key, first.operation.fencingToken, "{}", "");

        // a later claim cannot change what the record says it moves
        in.value = Amount{1, "USD"};
        const ClaimResult replay = f.engine().claim(in);
        QCOMPARE(replay.outcome, ClaimOutcome::Replayed);
        QCOMPARE(*replay.operation.value, (Amount{125'000, "EUR"}));
        QCOMPARE(*f.store().find(kNs, in.key)->value, (Amount{125'000, "EUR"}));

        // after retention the key is a new operation with the new claim's value
        f.advanceMs(f.engine().settings().retentionMs);
        const ClaimResult fresh = f.engine().claim(in);
        QCOMPARE(fresh.outcome, ClaimOutcome::Claimed);
        QCOMPARE(*fresh.operation.value, (Amount{1, "USD"}));

        ClaimInput plain = claimInput("run-41:mail");
        QVERIFY(!f.engine().claim(plain).operation.value);
        QVERIFY(!f.store().find(kNs, plain.key)->value);
    }

    void badValuesChangeNothing_data()
    {
        QTest::addColumn<qlonglong>("minor");
        QTest::addColumn<QString>("currency");
        QTest::newRow("negative") << qlonglong(-1) << QStringLiteral("EUR");
        QTest::newRow("lower-case currency") << qlonglong(100) << QStringLiteral("eur");
        QTest::newRow("long currency") << qlonglong(100) << QStringLiteral("EURO");
        QTest::newRow("empty currency") << qlonglong(100) << QString();
        QTest::newRow("10^15 major units")
            << qlonglong(100'000'000'000'000'000) << QStringLiteral("EUR");
    }

    void badValuesChangeNothing()
    {
        QFETCH(qlonglong, minor);
        QFETCH(QString, currency);
        LedgerFixture f;
        reach(f, "existing:op", OperationState::Succeeded);
        const QByteArray before = f.snapshot();
        ClaimInput in = claimInput("run-42:refund");
        in.value = Amount{minor, currency.toStdString()};
        QCOMPARE(errorOf([&] { f.engine().claim(in); }), ErrorCode::InvalidArgument);
        QCOMPARE(f.snapshot(), before);
    }

    void purgeAndMetricsStayInTheirNamespace()
    {
        LedgerFixture f;
        for (const std::string ns : {"tenant-a", "tenant-b"}) {
            ClaimInput in = claimInput("run-25:notify");
            in.ns = ns;
            const ClaimResult r = f.engine().claim(in);
            f.engine().complete(ns, in.key, r.operation.fencingToken, "{}", "");
            f.engine().claim(in); // replayed: one suppression each
        }
        const LedgerMetrics a = f.store().metrics("tenant-a");
        QCOMPARE(a.suppressionsByOutcome.size(), std::size_t(1));
        QCOMPARE(a.suppressionsByOutcome.front().second, std::int64_t(1));
        QCOMPARE(a.events, std::int64_t(2));
        QCOMPARE(f.store().metrics({}).events, std::int64_t(4));
        f.advanceMs(f.engine().settings().retentionMs);
        QCOMPARE(f.store().purgeExpired("tenant-a"), std::int64_t(1));
        QVERIFY(!f.store().find("tenant-a", "run-25:notify"));
        QVERIFY(f.store().find("tenant-b", "run-25:notify"));
        QCOMPARE(f.store().history("tenant-b", "run-25:notify").size(), std::size_t(2));
    }

    void namespacesScopeKeys()
    {
        LedgerFixture f;
        ClaimInput a = claimInput("run-19:pay");
        ClaimInput b = a;
        b.ns = "tenant-b";
        b.payloadJson = R"({"amount":5})";
        QCOMPARE(f.engine().claim(a).outcome, ClaimOutcome::Claimed);
        QCOMPARE(f.engine().claim(b).outcome, ClaimOutcome::Claimed);
    }

    void hostileButValidKeysAreStoredVerbatim_data()
    {
        QTest::addColumn<QByteArray>("key");
        QTest::newRow("quotes") << QByteArray("run-'1\":step");
        QTest::newRow("sql") << QByteArray("x'); DROP TABLE operations; --");
        QTest::newRow("like wildcards") << QByteArray("run_%:step");
        QTest::newRow("255 bytes") << QByteArray(255, 'k');
        QTest::newRow("unicode") << QByteArray("lauf-\xc3\xbc:\xe6\xad\xa5\xe9\xaa\xa4");
    }

    void hostileButValidKeysAreStoredVerbatim()
    {
        QFETCH(QByteArray, key);
        LedgerFixture f;
        const ClaimResult r = f.engine().claim(claimInput(key.toStdString()));
        QCOMPARE(r.outcome, ClaimOutcome::Claimed);
        QCOMPARE(f.store().find(kNs, key.toStdString())->key, key.toStdString());
        ListFilter prefix;
        prefix.keyPrefix = key.left(5).toStdString();
        QCOMPARE(f.store().list(prefix).size(), std::size_t(1));
        prefix.keyPrefix = "run_";
        QCOMPARE(f.store().list(prefix).size(), std::size_t(key.startsWith("run_") ? 1 : 0));
    }

    void keyPrefixFilterIsAByteRange()
    {
        LedgerFixture f;
        const std::vector<std::string> keys = {"run-1",   "run-1:a", "run-10:a",         "run-1:b",
                                               "run-2:a", "run-1;x", "run-1:\xc3\xbc:x", "run_1:a"};
        for (const std::string &key : keys)
            reach(f, key, OperationState::Dispatching);
        ClaimInput other = claimInput("run-1:a");
        other.ns = "other";
        QCOMPARE(f.engine().claim(other).outcome, ClaimOutcome::Claimed);

        const auto listed = [&](const std::string &prefix, const std::string &ns = {},
                                std::int64_t afterId = 0, int limit = 100) {
            ListFilter filter;
            filter.ns = ns;
            filter.keyPrefix = prefix;
            filter.afterId = afterId;
            filter.limit = limit;
            std::vector<std::string> found;
            for (const Operation &op : f.store().list(filter))
                found.push_back(op.ns + "/" + op.key);
            return found;
        };
        using Keys = std::vector<std::string>;
        // "run-1:" is a strict prefix of other keys and "run-1;" (its byte successor) is not
        // inside.
        QCOMPARE(listed("run-1:"), (Keys{"default/run-1:a", "default/run-1:b",
                                         "default/run-1:\xc3\xbc:x", "other/run-1:a"}));
        QCOMPARE(listed("run-1:", kNs),
                 (Keys{"default/run-1:a", "default/run-1:b", "default/run-1:\xc3\xbc:x"}));
        QCOMPARE(listed("run-1").size(), std::size_t(7));
        QCOMPARE(listed("run-1:\xc3\xbc"), (Keys{"default/run-1:\xc3\xbc:x"}));
        QCOMPARE(listed("run-1:b:"), Keys{});
        QCOMPARE(listed("run_"), (Keys{"default/run_1:a"}));
        const auto firstTwo = listed("run-1:", {}, 0, 2);
        QCOMPARE(firstTwo, (Keys{"default/run-1:a", "default/run-1:b"}));
        const std::int64_t second = f.store().find(kNs, "run-1:b")->id;
        QCOMPARE(listed("run-1:", {}, second, 2),
                 (Keys{"default/run-1:\xc3\xbc:x", "other/run-1:a"}));
    }

    /// A prefix most keys share pages in id order like a rare one (the embedded store plans
    /// the two differently).
    void commonKeyPrefixPagesInIdOrder()
    {
        LedgerFixture f;
        constexpr int Common = 2100;
        for (int i = 0; i < Common; ++i)
            QCOMPARE(f.engine().claim(claimInput("bulk:" + std::to_string(i))).outcome,
                     ClaimOutcome::Claimed);
        reach(f, "bulk-rare", OperationState::Dispatching);
        ListFilter filter;
        filter.keyPrefix = "bulk:";
        filter.limit = 500;
        int seen = 0;
        std::int64_t lastId = 0;
        for (;;) {
            const auto page = f.store().list(filter);
            for (const Operation &op : page) {
                QVERIFY(op.id > lastId);
                lastId = op.id;
                QCOMPARE(op.key, "bulk:" + std::to_string(seen));
                ++seen;
            }
            if (page.size() < std::size_t(filter.limit))
                break;
            filter.afterId = page.back().id;
        }
        QCOMPARE(seen, Common);
        filter = {};
        filter.keyPrefix = "bulk-";
        const auto rare = f.store().list(filter);
        QCOMPARE(rare.size(), std::size_t(1));
        QCOMPARE(rare.front().key, std::string("bulk-rare"));
    }

    void listsHighestValueFirstWithKeyset()
    {
        LedgerFixture f;
        const std::vector<std::pair<std::string, std::optional<Amount>>> ops = {
            {"v:small", Amount{500, "EUR"}},    {"v:none-1", std::nullopt},
            {"v:big", Amount{900'000, "EUR"}},  {"v:tie-1", Amount{70'000, "USD"}},
            {"v:tie-2", Amount{70'000, "EUR"}}, {"v:none-2", std::nullopt},
            {"v:zero", Amount{0, "JPY"}}};
        for (const auto &[key, value] : ops) {
            ClaimInput in = claimInput(key);
            in.value = value;
            in.requiresApproval = true;
            QCOMPARE(f.engine().claim(in).operation.state, OperationState::AwaitingApproval);
        }
        reach(f, "v:dispatching", OperationState::Dispatching);
        const std::vector<std::string> expected = {"v:big",  "v:tie-1",  "v:tie-2", "v:small",
                                                   "v:zero", "v:none-1", "v:none-2"};
        ListFilter filter;
        filter.state = OperationState::AwaitingApproval;
        filter.order = ListOrder::ValueDescending;
        QCOMPARE(keysOf(f.store().list(filter)), expected);
        // Pages of two follow the same order through the (value, id) cursor, across ties and NULLs.
        filter.limit = 2;
        std::vector<std::string> paged;
        for (;;) {
            const auto page = f.store().list(filter);
            for (const Operation &op : page)
                paged.push_back(op.key);
            if (page.size() < std::size_t(filter.limit))
                break;
            filter.afterId = page.back().id;
            filter.afterValueMinor =
                page.back().value ? page.back().value->minorUnits : ListFilter::NoValue;
        }
        QCOMPARE(paged, expected);
    }

    void listPagesWithKeyset()
    {
        LedgerFixture f;
        for (int i = 0; i < 25; ++i)
            reach(f, "page:" + std::to_string(i),
                  i % 2 ? OperationState::Succeeded : OperationState::Dispatching);
        ListFilter filter;
        filter.limit = 10;
        filter.state = OperationState::Dispatching;
        std::vector<std::string> keys;
        for (;;) {
            const auto page = f.store().list(filter);
            for (const auto &op : page)
                keys.push_back(op.key);
            if (page.size() < std::size_t(filter.limit))
                break;
            filter.afterId = page.back().id;
        }
        QCOMPARE(keys.size(), std::size_t(13));
        QCOMPARE(keys.front(), std::string("page:0"));
        QCOMPARE(keys.back(), std::string("page:24"));
    }
};

QTEST_GUILESS_MAIN(TestLedgerListing)
#include "tst_ledgerlisting.moc"
