// SPDX-License-Identifier: Apache-2.0
#include <QTest>

#include "keysetdiff.h"

using namespace idempo;

/// The ranged diff a live refresh applies: rows by id, with a version that marks a change.
class TestKeysetDiff final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void diff_data();
    void diff();
};

struct Row
{
    int id;
    int version;
};

void TestKeysetDiff::diff_data()
{
    QTest::addColumn<QList<int>>("before");
    QTest::addColumn<QList<int>>("after");
    QTest::addColumn<QList<int>>("changedIds");
    QTest::addColumn<int>("signals");
    QTest::newRow("same") << QList<int>{1, 2, 3} << QList<int>{1, 2, 3} << QList<int>{} << 0;
    QTest::newRow("insert middle") << QList<int>{1, 3} << QList<int>{1, 2, 3} << QList<int>{} << 1;
    QTest::newRow("remove run") << QList<int>{1, 2, 3, 4} << QList<int>{1, 4} << QList<int>{} << 1;
    QTest::newRow("changed range")
        << QList<int>{1, 2, 3, 4} << QList<int>{1, 2, 3, 4} << QList<int>{2, 3} << 1;
    QTest::newRow("mixed") << QList<int>{1, 2, 5, 7} << QList<int>{2, 3, 4, 7, 8} << QList<int>{7}
                           << 5;
    QTest::newRow("from empty") << QList<int>{} << QList<int>{4, 5} << QList<int>{} << 1;
    QTest::newRow("to empty") << QList<int>{4, 5} << QList<int>{} << QList<int>{} << 1;
}

void TestKeysetDiff::diff()
{
    QFETCH(QList<int>, before);
    QFETCH(QList<int>, after);
    QFETCH(QList<int>, changedIds);
    QFETCH(int, signals);
    std::vector<Row> rows{{0, 0}};
    for (int id : before)
        rows.push_back({id, 0});
    rows.push_back({100, 0}); // outside the window: must stay
    std::vector<Row> fresh;
    for (int id : after)
        fresh.push_back({id, changedIds.contains(id) ? 1 : 0});
    int emitted = 0;
    std::vector<int> mirror; // replays the hooks on ids, as a view would see them
    for (const Row &r : rows)
        mirror.push_back(r.id);
    int pendingFirst = -1;
    int pendingLast = -1;
    KeysetDiffHooks hooks{
        [&](int a, int b) {
            ++emitted;
            pendingFirst = a;
            pendingLast = b;
        },
        [&] { mirror.erase(mirror.begin() + pendingFirst, mirror.begin() + pendingLast + 1); },
        [&](int a, int b) {
            ++emitted;
            pendingFirst = a;
            pendingLast = b;
        },
        [&] {
            for (int i = pendingFirst; i <= pendingLast; ++i)
                mirror.insert(mirror.begin() + i, rows[static_cast<std::size_t>(i)].id);
        },
        [&](int a, int b) {
            ++emitted;
            for (int i = a; i <= b; ++i)
                QVERIFY(changedIds.contains(rows[static_cast<std::size_t>(i)].id));
        },
    };
    applyKeysetDiff(
        rows, 1, static_cast<int>(before.size()), fresh, [](const Row &r) { return r.id; },
        [](const Row &a, const Row &b) { return a.version == b.version; }, hooks);
    QList<int> ids;
    for (const Row &r : rows)
        ids << r.id;
    QList<int> expected{0};
    expected += after;
    expected << 100;
    QCOMPARE(ids, expected);
    QCOMPARE(QList<int>(mirror.begin(), mirror.end()), expected);
    QCOMPARE(emitted, signals);
}

QTEST_GUILESS_MAIN(TestKeysetDiff)
#include "tst_keysetdiff.moc"
