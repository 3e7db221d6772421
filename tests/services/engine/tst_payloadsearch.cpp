// SPDX-License-Identifier: Apache-2.0
// Finding operations by a payload field or their customer (payloadmatch.h), on every store:
// exact pointers and texts, numbers and booleans by their text, the customer the console shows,
// several terms at once, keyset pages, the other filters, purge and a retention-expired key, and
// bad pointers refused before anything runs.
#include <QtTest>

#include "ledgercontracthelpers.h"
#include "ledgerfixture.h"
#include "operationkeys.h"

using namespace idempo;
using namespace idempo::test;

namespace {

ListFilter where(const std::string &pointer, const std::string &value)
{
    ListFilter filter;
    filter.payload.push_back({pointer, value});
    return filter;
}

ListFilter ofCustomer(const std::string &customer)
{
    ListFilter filter;
    filter.customer = customer;
    return filter;
}

using Keys = std::vector<std::string>;

} // namespace

class TestPayloadSearch final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void findsScalarLeavesByPointer()
    {
        LedgerFixture f;
        f.engine().claim(claimInput(
            "k-1", R"({"customer":"cust-42","refund":{"order_id":"o-7","amount":125,"ok":true},)"
                   "\"items\":[{\"sku\":\"a/b\"},{\"sku\":\"x~y\"}],\"note\":null,\"rate\":12.5}"));
        f.engine().claim(
            claimInput("k-2", R"({"customer":"cust-43","refund":{"order_id":"o-8"}})"));
        f.engine().claim(claimInput("k-3", R"({"order_id":"o-7","amount":"125"})"));

        QCOMPARE(keysOf(f.store().list(where("/customer", "cust-42"))), Keys{"k-1"});
        QCOMPARE(keysOf(f.store().list(where("/refund/order_id", "o-7"))), Keys{"k-1"});
        QCOMPARE(keysOf(f.store().list(where("/order_id", "o-7"))), Keys{"k-3"});
        // numbers, booleans and null by their text; the string "125" matches the number 125
        QCOMPARE(keysOf(f.store().list(where("/refund/amount", "125"))), Keys{"k-1"});
        QCOMPARE(keysOf(f.store().list(where("/amount", "125"))), Keys{"k-3"});
        QCOMPARE(keysOf(f.store().list(where("/refund/ok", "true"))), Keys{"k-1"});
        QCOMPARE(keysOf(f.store().list(where("/note", "null"))), Keys{"k-1"});
        QCOMPARE(keysOf(f.store().list(where("/rate", "12.5"))), Keys{"k-1"});
        // array positions, and the ~1 / ~0 escapes of RFC 6901 in member names
        QCOMPARE(keysOf(f.store().list(where("/items/0/sku", "a/b"))), Keys{"k-1"});
        QCOMPARE(keysOf(f.store().list(where("/items/1/sku", "x~y"))), Keys{"k-1"});
        QVERIFY(f.store().list(where("/items/1/sku", "a/b")).empty());
        // only scalars, only the exact text
        QVERIFY(f.store().list(where("/refund", "o-7")).empty());
        QVERIFY(f.store().list(where("/customer", "cust-4")).empty());
        QVERIFY(f.store().list(where("/customer", "CUST-42")).empty());
    }

    void escapedMemberNames()
    {
        LedgerFixture f;
        f.engine().claim(claimInput("k-1", R"({"a/b":{"c~d":"v"}})"));
        QCOMPARE(keysOf(f.store().list(where("/a~1b/c~0d", "v"))), Keys{"k-1"});
        QVERIFY(f.store().list(where("/a/b/c~0d", "v")).empty());
    }

    void customerIsWhatTheConsoleShows()
    {
        LedgerFixture f;
        f.engine().claim(claimInput("k-1", R"({"customer":"cust-42"})"));
        f.engine().claim(claimInput("k-2", R"({"customer_id":"cust-42","client":"c-9"})"));
        f.engine().claim(claimInput("k-3", R"({"client_id":4711})"));
        // customer is an object, so customer_id is the customer (the first string or number)
        f.engine().claim(claimInput("k-4", R"({"customer":{"id":"x"},"customer_id":"cust-42"})"));
        f.engine().claim(claimInput("k-5", R"({"account":{"customer":"cust-42"}})"));

        QCOMPARE(keysOf(f.store().list(ofCustomer("cust-42"))), (Keys{"k-1", "k-2", "k-4"}));
        QCOMPARE(keysOf(f.store().list(ofCustomer("4711"))), Keys{"k-3"});
        // client is not k-2's customer: customer_id comes first
        QVERIFY(f.store().list(ofCustomer("c-9")).empty());
        QCOMPARE(keysOf(f.store().list(where("/client", "c-9"))), Keys{"k-2"});
    }

    void termsCombineWithEachOtherAndTheFilters()
    {
        LedgerFixture f;
        f.engine().claim(claimInput("run-1:a", R"({"customer":"c1","country":"DE"})"));
        f.engine().claim(claimInput("run-1:b", R"({"customer":"c1","country":"FR"})"));
        f.engine().claim(claimInput("run-2:a", R"({"customer":"c2","country":"DE"})"));
        ClaimInput other = claimInput("run-1:a", R"({"customer":"c1","country":"DE"})");
        other.ns = "tenant-b";
        f.engine().claim(other);

        ListFilter both = where("/country", "DE");
        both.customer = "c1";
        QCOMPARE(f.store().list(both).size(), std::size_t(2));
        both.ns = kNs;
        QCOMPARE(keysOf(f.store().list(both)), Keys{"run-1:a"});
        both.payload.push_back({"/customer", "c1"});
        QCOMPARE(keysOf(f.store().list(both)), Keys{"run-1:a"});

        ListFilter prefixed = where("/country", "DE");
        prefixed.ns = kNs;
        prefixed.keyPrefix = "run-2";
        QCOMPARE(keysOf(f.store().list(prefixed)), Keys{"run-2:a"});
        prefixed.keyPrefix.clear();
        prefixed.state = OperationState::Succeeded;
        QVERIFY(f.store().list(prefixed).empty());
        prefixed.state = OperationState::Dispatching;
        prefixed.order = ListOrder::ValueDescending;
        QCOMPARE(keysOf(f.store().list(prefixed)), (Keys{"run-1:a", "run-2:a"}));
    }

    void pagesInIdOrderEitherWay()
    {
        LedgerFixture f;
        for (int i = 0; i < 7; ++i) {
            f.engine().claim(claimInput("k-" + std::to_string(i), R"({"customer":"common"})"));
            f.engine().claim(claimInput("j-" + std::to_string(i), R"({"customer":"other"})"));
        }
        // Every page of `filter` in pages of 3, each in the filter's id order.
        const auto allPages = [&f](ListFilter filter) {
            filter.limit = 3;
            Keys seen;
            for (;;) {
                const std::vector<Operation> page = f.store().list(filter);
                for (const Operation &op : page)
                    seen.push_back(op.key);
                if (static_cast<int>(page.size()) < filter.limit)
                    break;
                const bool down = filter.order == ListOrder::IdDescending;
                if (down ? page.front().id <= page.back().id : page.front().id >= page.back().id)
                    return Keys{"a page out of id order"};
                filter.afterId = page.back().id;
            }
            return seen;
        };
        ListFilter filter = ofCustomer("common");
        QCOMPARE(allPages(filter), (Keys{"k-0", "k-1", "k-2", "k-3", "k-4", "k-5", "k-6"}));

        // Newest first, with the customer and a payload field at once.
        filter.order = ListOrder::IdDescending;
        filter.payload = {{"/customer", "common"}};
        QCOMPARE(allPages(filter), (Keys{"k-6", "k-5", "k-4", "k-3", "k-2", "k-1", "k-0"}));
    }

    void limitsOfWhatIsIndexed()
    {
        LedgerFixture f;
        const std::string longest(PayloadMaxValueBytes, 'v');
        std::string list;
        for (int i = 0; i <= PayloadMaxArrayIndex; ++i)
            list += (i ? "," : "") + std::to_string(i);
        const std::string deep =
            R"({"b":{"c":{"d":{"e":{"f":{"g":{"h":"deep","i":{"j":"x"}}}}}}}})";
        f.engine().claim(claimInput("k-1", "{\"a\":" + deep + ",\"list\":[" + list +
                                               "],\"long\":\"" + longest + "\",\"longer\":\"" +
                                               longest + "x\"}"));
        QCOMPARE(keysOf(f.store().list(where("/a/b/c/d/e/f/g/h", "deep"))), Keys{"k-1"});
        QVERIFY(f.store().list(where("/a/b/c/d/e/f/g/i/j", "x")).empty());
        QCOMPARE(keysOf(f.store().list(where("/list/31", "31"))), Keys{"k-1"});
        QVERIFY(f.store().list(where("/list/32", "32")).empty());
        QCOMPARE(keysOf(f.store().list(where("/long", longest))), Keys{"k-1"});
        QCOMPARE(errorOf([&] { f.store().list(where("/longer", longest + "x")); }),
                 ErrorCode::InvalidArgument);
    }

    void purgeAndExpiredKeysLeaveNoStaleFields()
    {
        LedgerFixture f;
        for (const std::string key : {"k-1", "k-2"}) {
            const ClaimResult claimed =
                f.engine().claim(claimInput(key, "{\"customer\":\"old\",\"key\":\"" + key + "\"}"));
            f.engine().complete(kNs, key, claimed.operation.fencingToken, "{}", "");
        }
        f.advanceMs(f.engine().settings().retentionMs);
        // retention expired: the same key is a new operation with a new payload
        f.engine().claim(claimInput("k-1", R"({"customer":"new"})"));
        QCOMPARE(keysOf(f.store().list(ofCustomer("old"))), Keys{"k-2"});
        QCOMPARE(keysOf(f.store().list(ofCustomer("new"))), Keys{"k-1"});
        QVERIFY(f.store().list(where("/key", "k-1")).empty());

        QCOMPARE(f.store().purgeExpired(kNs), std::int64_t(1));
        QVERIFY(f.store().list(ofCustomer("old")).empty());
        QVERIFY(f.store().list(where("/key", "k-2")).empty());
        QCOMPARE(keysOf(f.store().list(ofCustomer("new"))), Keys{"k-1"});
    }

    void badPointersAreRefusedByName_data()
    {
        QTest::addColumn<QString>("pointer");
        QTest::addColumn<QString>("named");
        QTest::newRow("empty") << QString() << QStringLiteral("must start with '/'");
        QTest::newRow("no slash") << QStringLiteral("customer")
                                  << QStringLiteral("'customer' is not a JSON Pointer");
        QTest::newRow("dollar path")
            << QStringLiteral("$.customer") << QStringLiteral("'$.customer' is not a JSON Pointer");
        QTest::newRow("tilde 2") << QStringLiteral("/a~2b") << QStringLiteral("'/a~2b'");
        QTest::newRow("trailing tilde") << QStringLiteral("/a~") << QStringLiteral("'~' at byte 2");
    }

    void badPointersAreRefusedByName()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, named);
        LedgerFixture f;
        f.engine().claim(claimInput("k-1", R"({"customer":"c"})"));
        try {
            f.store().list(where(pointer.toStdString(), "c"));
            QFAIL("a bad pointer was accepted");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::InvalidArgument);
            QVERIFY2(QString::fromStdString(e.what()).contains(named), e.what());
        }
        QCOMPARE(errorOf([&] { parsePayloadMatch(pointer.toStdString() + "=c"); }),
                 ErrorCode::InvalidArgument);
        QCOMPARE(errorOf([] { parsePayloadMatch("/customer"); }), ErrorCode::InvalidArgument);
        QCOMPARE(parsePayloadMatch("/a=b=c"), (PayloadMatch{"/a", "b=c"}));
    }
};

QTEST_GUILESS_MAIN(TestPayloadSearch)
#include "tst_payloadsearch.moc"
