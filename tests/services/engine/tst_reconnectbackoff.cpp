// SPDX-License-Identifier: Apache-2.0
// The wait of a worker or driver that lost its ledger: delays from 100 ms doubling to 2 s, a
// deadline counted from the loss, the give-up message, and the blocking retry built on it.
#include <vector>

#include <QtTest>

#include "error.h"
#include "reconnectbackoff.h"

using namespace idempo;

class TestReconnectBackoff final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void delaysDoubleToTheCapUntilTheDeadline()
    {
        ReconnectBackoff backoff({.firstDelayMs = 100, .maxDelayMs = 2'000, .deadlineMs = 10'000});
        QVERIFY(!backoff.lost());
        std::vector<std::int64_t> delays;
        std::int64_t now = 1'000;
        while (const std::optional<std::int64_t> delay = backoff.failed(now)) {
            QVERIFY(backoff.lost());
            QVERIFY(!backoff.due(now + *delay - 1));
            QVERIFY(backoff.due(now + *delay));
            delays.push_back(*delay);
            now += *delay;
        }
        // The last wait is cut so that the final attempt falls on the deadline.
        const std::vector<std::int64_t> expected{100,   200,   400,   800, 1'600,
                                                 2'000, 2'000, 2'000, 900};
        QCOMPARE(delays, expected);
        QCOMPARE(now, 11'000);
        QCOMPARE(backoff.recovered(now + 5), 10'005);
        QVERIFY(!backoff.lost());
        QVERIFY(!backoff.due(now + 10'000));
        QCOMPARE(backoff.failed(20'000),
                 std::optional<std::int64_t>(100)); // a new outage starts over
    }

    void zeroDeadlineGivesUpAtOnce()
    {
        ReconnectBackoff backoff({.deadlineMs = 0});
        QVERIFY(!backoff.failed(5));
    }

    void giveUpMessageNamesLedgerDeadlineAndReason()
    {
        const std::string message =
            gaveUpOnLedger("postgresql://idempo@db/ledger", {.deadlineMs = 2'500}, "refused");
        QCOMPARE(message,
                 std::string(
                     "gave up on the ledger postgresql://idempo@db/ledger after 2.5 s without it "
                     "(--reconnect-deadline): refused"));
    }

    void retryCallsThroughAnOutageAndSaysSo()
    {
        int calls = 0;
        std::vector<std::string> lost;
        std::vector<std::int64_t> back;
        const bool done = retryThroughOutage(
            {.firstDelayMs = 1, .maxDelayMs = 2, .deadlineMs = 10'000}, "sqlite:/l.db",
            [&] {
                if (++calls < 3)
                    throw Error(calls == 1 ? ErrorCode::LedgerUnavailable : ErrorCode::LedgerBusy,
                                "down");
            },
            [&](const std::string &reason) { lost.push_back(reason); },
            [&](std::int64_t ms) { back.push_back(ms); });
        QVERIFY(done);
        QCOMPARE(calls, 3);
        QCOMPARE(lost, std::vector<std::string>{"down"});
        QCOMPARE(back.size(), std::size_t(1));
    }

    void retryRethrowsOtherErrorsAndGivesUpAtTheDeadline()
    {
        int calls = 0;
        const auto never = [](const auto &) {};
        try {
            retryThroughOutage(
                {}, "l",
                [&] {
                    ++calls;
                    throw Error(ErrorCode::StaleLease, "stale");
                },
                never, never);
            QFAIL("no error");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::StaleLease);
        }
        QCOMPARE(calls, 1);
        try {
            retryThroughOutage(
                {.firstDelayMs = 1, .maxDelayMs = 1, .deadlineMs = 5}, "sqlite:/l.db",
                [] { throw Error(ErrorCode::LedgerUnavailable, "disk full"); }, never, never);
            QFAIL("no error");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::LedgerUnavailable);
            QVERIFY2(std::string(e.what()).find("sqlite:/l.db") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("disk full") != std::string::npos, e.what());
        }
        const std::atomic<bool> stop{true};
        QVERIFY(!retryThroughOutage(
            {}, "l", [] { throw Error(ErrorCode::LedgerBusy, "busy"); }, never, never, &stop));
    }
};

QTEST_GUILESS_MAIN(TestReconnectBackoff)
#include "tst_reconnectbackoff.moc"
