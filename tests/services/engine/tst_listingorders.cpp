// SPDX-License-Identifier: Apache-2.0
// The LedgerStore contract on every store: each ListOrder lists every matching record once, in
// its order with ties by id, and keyset pages of any size follow it exactly.
#include <algorithm>
#include <functional>

#include <QtTest>

#include "ledgercontracthelpers.h"
#include "ledgerfixture.h"

using namespace idempo;
using namespace idempo::test;

Q_DECLARE_METATYPE(idempo::ListOrder)

namespace {

/// What an order sorts by before the id, as the store must: the record's rank and key.
struct Rank
{
    std::int64_t rank = 0;
    std::string key;
    std::int64_t id = 0;
    bool operator<(const Rank &o) const
    {
        if (rank != o.rank)
            return rank < o.rank;
        if (key != o.key)
            return key < o.key;
        return id < o.id;
    }
};

Rank rankOf(ListOrder order, const Operation &op)
{
    const std::int64_t value = op.value ? op.value->minorUnits : ListFilter::NoValue;
    switch (order) {
    case ListOrder::Id:
        return {0, {}, op.id};
    case ListOrder::IdDescending:
        return {-op.id, {}, op.id};
    case ListOrder::ValueDescending:
        return {-value, {}, op.id};
    case ListOrder::ValueAscending:
        return {value, {}, op.id};
    case ListOrder::UpdatedAscending:
        return {op.updatedAtMs, {}, op.id};
    case ListOrder::UpdatedDescending:
        return {-op.updatedAtMs, {}, op.id};
    case ListOrder::KeyAscending:
        return {0, op.key, op.id};
    }
    return {};
}

/// Sets the cursor of `filter` after `last`, as a console page does.
void continueAfter(ListFilter &filter, const Operation &last)
{
    filter.afterId = last.id;
    filter.afterValueMinor = last.value ? last.value->minorUnits : ListFilter::NoValue;
    filter.afterUpdatedMs = last.updatedAtMs;
    filter.afterKey = last.key;
}

/// Every page of `filter` in pages of `limit`, concatenated.
std::vector<Operation> allPages(LedgerStore &store, ListFilter filter, int limit)
{
    filter.limit = limit;
    std::vector<Operation> out;
    for (int guard = 0; guard < 1000; ++guard) {
        const std::vector<Operation> page = store.list(filter);
        out.insert(out.end(), page.begin(), page.end());
        if (page.size() < static_cast<std::size_t>(limit))
            break;
        continueAfter(filter, page.back());
    }
    return out;
}

std::vector<std::int64_t> idsOf(const std::vector<Operation> &ops)
{
    std::vector<std::int64_t> ids;
    for (const Operation &op : ops)
        ids.push_back(op.id);
    return ids;
}

/// A ledger whose records tie on every ordered column: equal values (in two currencies), no
/// value, equal update times, the same key in two namespaces; keys not in id order.
void fillWithTies(LedgerFixture &f)
{
    const std::vector<std::pair<std::string, std::optional<Amount>>> gated = {
        {"m:refund", Amount{70'000, "EUR"}}, {"b:refund", Amount{70'000, "USD"}},
        {"z:refund", std::nullopt},          {"a:refund", Amount{500, "EUR"}},
        {"k:refund", std::nullopt},          {"c:refund", Amount{900'000, "JPY"}}};
    for (const auto &[key, value] : gated) {
        ClaimInput in = claimInput(key);
        in.value = value;
        in.requiresApproval = true;
        QCOMPARE(f.engine().claim(in).operation.state, OperationState::AwaitingApproval);
    }
    f.advanceMs(1'000);
    // The same key in another namespace, and records changed later than the gated ones.
    ClaimInput other = claimInput("m:refund");
    other.ns = "tenant-b";
    other.value = Amount{70'000, "EUR"};
    other.requiresApproval = true;
    f.engine().claim(other);
    reach(f, "d:mail", OperationState::Dispatching);
    reach(f, "e:mail", OperationState::Succeeded);
    f.advanceMs(1'000);
    reach(f, "a:mail", OperationState::Dispatching);
}

} // namespace

class TestListingOrders final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void everyOrderPagesExactly_data()
    {
        QTest::addColumn<ListOrder>("order");
        QTest::addColumn<bool>("byState");
        for (const auto &[name, order] : std::vector<std::pair<const char *, ListOrder>>{
                 {"id", ListOrder::Id},
                 {"id descending", ListOrder::IdDescending},
                 {"value descending", ListOrder::ValueDescending},
                 {"value ascending", ListOrder::ValueAscending},
                 {"updated ascending", ListOrder::UpdatedAscending},
                 {"updated descending", ListOrder::UpdatedDescending},
                 {"key", ListOrder::KeyAscending}}) {
            QTest::addRow("%s", name) << order << false;
            QTest::addRow("%s, one state", name) << order << true;
        }
    }

    void everyOrderPagesExactly()
    {
        QFETCH(ListOrder, order);
        QFETCH(bool, byState);
        LedgerFixture f;
        fillWithTies(f);
        ListFilter filter;
        filter.limit = 1000;
        if (byState)
            filter.state = OperationState::AwaitingApproval;
        std::vector<Operation> expected = f.store().list(filter);
        QCOMPARE(expected.size(), byState ? std::size_t(7) : std::size_t(10));
        std::sort(expected.begin(), expected.end(),
                  [order](const Operation &a, const Operation &b) {
                      return rankOf(order, a) < rankOf(order, b);
                  });
        filter.order = order;
        QCOMPARE(idsOf(f.store().list(filter)), idsOf(expected));
        // Pages of every size carry the order across ties: no record skipped or repeated.
        for (int limit : {1, 2, 3, 4})
            QCOMPARE(idsOf(allPages(f.store(), filter, limit)), idsOf(expected));
    }

    void ordersAsDocumented()
    {
        LedgerFixture f;
        fillWithTies(f);
        ListFilter filter;
        filter.state = OperationState::AwaitingApproval;
        filter.ns = kNs;
        const auto keys = [&](ListOrder order) {
            filter.order = order;
            std::vector<std::string> out;
            for (const Operation &op : allPages(f.store(), filter, 2))
                out.push_back(op.key);
            return out;
        };
        using Keys = std::vector<std::string>;
        QCOMPARE(keys(ListOrder::KeyAscending),
                 (Keys{"a:refund", "b:refund", "c:refund", "k:refund", "m:refund", "z:refund"}));
        // Equal values oldest first; without a value last going down, first going up.
        QCOMPARE(keys(ListOrder::ValueDescending),
                 (Keys{"c:refund", "m:refund", "b:refund", "a:refund", "z:refund", "k:refund"}));
        QCOMPARE(keys(ListOrder::ValueAscending),
                 (Keys{"z:refund", "k:refund", "a:refund", "m:refund", "b:refund", "c:refund"}));
        QCOMPARE(keys(ListOrder::IdDescending),
                 (Keys{"c:refund", "k:refund", "a:refund", "z:refund", "b:refund", "m:refund"}));
    }

    void keyOrderFollowsAPrefixAndNamespaces()
    {
        LedgerFixture f;
        fillWithTies(f);
        ListFilter filter;
        filter.order = ListOrder::KeyAscending;
        filter.keyPrefix = "m:";
        const std::vector<Operation> both = allPages(f.store(), filter, 1);
        QCOMPARE(both.size(), std::size_t(2));
        QCOMPARE(both[0].key, both[1].key);
        QVERIFY(both[0].id < both[1].id); // one key in two namespaces: by id
        QVERIFY(both[0].ns != both[1].ns);
        filter.keyPrefix = "a:";
        filter.order = ListOrder::UpdatedDescending;
        const std::vector<Operation> a = allPages(f.store(), filter, 1);
        QCOMPARE(a.size(), std::size_t(2));
        QCOMPARE(a[0].key, std::string("a:mail"));
    }
};

QTEST_GUILESS_MAIN(TestListingOrders)
#include "tst_listingorders.moc"
