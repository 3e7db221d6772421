// SPDX-License-Identifier: Apache-2.0
// "Highest value first" in one reference currency on every store: with reference rates the value
// orders rank each value converted at its rate, a currency without a rate above every priced
// one, and keyset pages of any size continue exactly where valueRank() says the last row stood.
#include <algorithm>

#include <QtTest>

#include "guardsettingcommand.h"
#include "ledgercontracthelpers.h"
#include "ledgerfixture.h"
#include "money.h"
#include "operationkeys.h"
#include "operationquery.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kOwner{"olga", "owner"};

void claimWorth(LedgerFixture &f, const std::string &key, std::optional<Amount> value)
{
    ClaimInput in = claimInput(key);
    in.value = std::move(value);
    in.requiresApproval = true;
    QCOMPARE(f.engine().claim(in).operation.state, OperationState::AwaitingApproval);
}

void setRates(LedgerFixture &f, const std::string &rates)
{
    GuardSettingCommand command(f.store(), kOwner, ReferenceRatesSetting, rates,
                                "rates of the day");
    command.execute();
}

/// Every page of `query` in pages of `limit`, as a console view reads them.
std::vector<Operation> allPages(LedgerStore &store, const OperationQuery &query, int limit)
{
    std::vector<Operation> out;
    KeysetPosition after = KeysetPosition::start();
    for (int guard = 0; guard < 1000; ++guard) {
        const OperationQuery::Page page = query.scan(store, after, limit);
        out.insert(out.end(), page.rows.begin(), page.rows.end());
        if (!page.more)
            break;
        after = page.cursor;
    }
    return out;
}

/// The ledger: 1,000,000 JPY is worth 6,100.00 EUR at 0.0061, below 8,400.00 EUR.
void fillMixedCurrencies(LedgerFixture &f)
{
    claimWorth(f, "jpy:refund", Amount{1'000'000, "JPY"});
    claimWorth(f, "eur:refund", Amount{840'000, "EUR"});
    claimWorth(f, "usd:refund", Amount{900'000, "USD"}); // 8,280.00 EUR at 0.92
    claimWorth(f, "gbp:refund", Amount{100, "GBP"});     // no rate: its worth is unknown
    claimWorth(f, "none:refund", std::nullopt);
    claimWorth(f, "small:refund", Amount{500, "EUR"});
}

} // namespace

class TestReferenceRanking final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void highestValueFirstInTheReferenceCurrency()
    {
        LedgerFixture f;
        fillMixedCurrencies(f);
        OperationQuery query;
        query.states = {OperationState::AwaitingApproval};
        query.order = ListOrder::ValueDescending;
        using Keys = std::vector<std::string>;
        // Without rates every currency is ranked by its minor units, as written.
        QCOMPARE(keysOf(allPages(f.store(), query, 100)),
                 (Keys{"jpy:refund", "usd:refund", "eur:refund", "small:refund", "gbp:refund",
                       "none:refund"}));
        setRates(f, "EUR USD=0.92 JPY=0.0061");
        const Keys down{"gbp:refund", "eur:refund",   "usd:refund",
                        "jpy:refund", "small:refund", "none:refund"};
        for (int limit : {1, 2, 3, 100})
            QCOMPARE(keysOf(allPages(f.store(), query, limit)), down);
        query.order = ListOrder::ValueAscending;
        const Keys up{"none:refund", "small:refund", "jpy:refund",
                      "usd:refund",  "eur:refund",   "gbp:refund"};
        for (int limit : {1, 2, 100})
            QCOMPARE(keysOf(allPages(f.store(), query, limit)), up);
        // Dropping the rates goes back to minor units on the next read.
        setRates(f, "");
        query.order = ListOrder::ValueDescending;
        QCOMPARE(keysOf(allPages(f.store(), query, 2)).front(), std::string("jpy:refund"));
    }

    /// The store's rank is valueRank() exactly: ties made by truncation and by the ceiling go
    /// by id, and no page skips or repeats a record across them.
    void storeRankEqualsValueRank()
    {
        LedgerFixture f;
        // Reference JPY (no minor unit): one XBT is 9,000,000 JPY, so its minor unit is worth
        // 90,000 yen and 10^15 XBT less a minor unit passes the ceiling; a cent of EUR is 1.635
        // yen.
        claimWorth(f, "xbt-a", Amount{99'999'999'999'999'999, "XBT"});
        claimWorth(f, "xbt-b", Amount{99'000'000'000'000'000, "XBT"});
        claimWorth(f, "eur-1", Amount{1, "EUR"});
        claimWorth(f, "eur-2", Amount{2, "EUR"});
        claimWorth(f, "jpy-1", Amount{1, "JPY"});
        claimWorth(f, "jpy-3", Amount{3, "JPY"});
        claimWorth(f, "eur-0", Amount{0, "EUR"});
        claimWorth(f, "chf-9", Amount{9, "CHF"});
        claimWorth(f, "none", std::nullopt);
        const std::string rates = "JPY XBT=9000000 EUR=163.5";
        setRates(f, rates);
        const std::vector<ValueFactor> factors = ReferenceRates::factorsOf(rates);
        QCOMPARE(factors.size(), std::size_t(3));
        QCOMPARE(valueRank(Amount{99'999'999'999'999'999, "XBT"}, factors),
                 static_cast<std::int64_t>(PricedRankCeiling));
        QCOMPARE(valueRank(Amount{1, "EUR"}, factors), std::int64_t(1));
        QCOMPARE(valueRank(Amount{2, "EUR"}, factors), std::int64_t(3));
        QCOMPARE(valueRank(Amount{9, "CHF"}, factors), UnpricedRank);
        for (const ListOrder order : {ListOrder::ValueDescending, ListOrder::ValueAscending}) {
            OperationQuery query;
            query.order = order;
            std::vector<Operation> expected = allPages(f.store(), OperationQuery{}, 100);
            QCOMPARE(expected.size(), std::size_t(9));
            std::stable_sort(expected.begin(), expected.end(),
                             [&](const Operation &a, const Operation &b) {
                                 return query.position(a, factors) < query.position(b, factors);
                             });
            for (int limit : {1, 2, 4, 100})
                QCOMPARE(keysOf(allPages(f.store(), query, limit)), keysOf(expected));
        }
        OperationQuery down;
        down.order = ListOrder::ValueDescending;
        const std::vector<std::string> keys = keysOf(allPages(f.store(), down, 1));
        QCOMPARE(keys.front(), std::string("chf-9"));
        // Both XBT values meet the ceiling: a tie, oldest first.
        QCOMPARE(keys[1], std::string("xbt-a"));
        QCOMPARE(keys[2], std::string("xbt-b"));
        QCOMPARE(keys.back(), std::string("none"));
    }
};

QTEST_GUILESS_MAIN(TestReferenceRanking)
#include "tst_referenceranking.moc"
