// SPDX-License-Identifier: Apache-2.0
// Bulk actions on a counted, frozen set (BulkCommand) on every store: SQLite by default,
// PostgreSQL under tests/pg/with-postgres.sh. Each operation goes through its own guarded
// command, so every rule and audit record is per operation.
#include <QtTest>

#include "approvecommand.h"
#include "bulkcommand.h"
#include "errorof.h"
#include "guardedactionhelpers.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kBob{"bob", "approver"};
const ActorIdentity kCarol{"carol", "approver"};

/// Where a bulk run's pacing went: the waits it asked for, the progress it reported, and a stop
/// after `stopAfter` operations.
struct FakePacing
{
    std::vector<std::chrono::milliseconds> waits;
    std::vector<std::int64_t> progress;
    std::int64_t stopAfter = -1;

    PacedRun::Hooks hooks()
    {
        return {[this](std::chrono::milliseconds ms) { waits.push_back(ms); },
                [this](std::int64_t done, std::int64_t) { progress.push_back(done); },
                [this] {
                    return stopAfter >= 0 &&
                           static_cast<std::int64_t>(progress.size()) >= stopAfter;
                }};
    }
};

ListFilter prefix(const std::string &p)
{
    ListFilter filter;
    filter.ns = kNs;
    filter.keyPrefix = p;
    return filter;
}

BulkOutcome runBulk(LedgerFixture &f, const ActorIdentity &actor, BulkAction action,
                    const std::vector<BulkTarget> &targets, FakePacing &pacing,
                    std::optional<std::int64_t> typed = std::nullopt)
{
    BulkCommand::Request r;
    r.action = action;
    r.targets = targets;
    r.reason = "end-of-shift review";
    r.confirmCount = typed ? typed : std::optional<std::int64_t>(std::ssize(targets));
    BulkCommand command(f.store(), actor, r, {.pacing = pacing.hooks()});
    return command.execute();
}

std::vector<std::string> results(const BulkOutcome &o)
{
    std::vector<std::string> names;
    for (const BulkItem &item : o.items)
        names.emplace_back(bulkResultName(item.result));
    return names;
}

} // namespace

class TestBulkCommand final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    void oneAuditRecordPerOperationAtTheBoundedRate()
    {
        LedgerFixture f;
        for (const char *key : {"run-1:a", "run-1:b", "run-1:c"})
            needingConfirmation(f, key);
        const std::vector<BulkTarget> set =
            BulkCommand::freeze(f.store(), prefix("run-1:"), BulkAction::Approve);
        QCOMPARE(set.size(), std::size_t(3));
        FakePacing pacing;
        const BulkOutcome o = runBulk(f, kBob, BulkAction::Approve, set, pacing);
        QCOMPARE(results(o), (std::vector<std::string>{"applied", "applied", "applied"}));
        QCOMPARE(o.toJson().at("applied").get<int>(), 3);
        // Default 20 per second: a 50 ms wait between operations, none before the first.
        QCOMPARE(pacing.waits,
                 (std::vector<std::chrono::milliseconds>(2, std::chrono::milliseconds(50))));
        QCOMPARE(pacing.progress, (std::vector<std::int64_t>{1, 2, 3}));
        const auto audit = f.store().auditLog(0, 100);
        QCOMPARE(audit.size(), std::size_t(3));
        for (std::size_t i = 0; i < audit.size(); ++i) {
            QCOMPARE(audit[i].entry.action, std::string("approve"));
            QCOMPARE(audit[i].entry.target, kNs + "/" + set[i].key);
            QCOMPARE(audit[i].entry.who, std::string("bob"));
            QCOMPARE(o.items[i].auditSeq, std::optional<std::int64_t>(audit[i].seq));
            QCOMPARE(f.store().find(kNs, set[i].key)->state, OperationState::Received);
        }
    }

    void changedSinceFrozenIsSkippedAndLaterRowsAreNotInTheSet()
    {
        LedgerFixture f;
        for (const char *key : {"run-2:a", "run-2:b", "run-2:c"})
            needingConfirmation(f, key);
        const std::vector<BulkTarget> set =
            BulkCommand::freeze(f.store(), prefix("run-2:"), BulkAction::Reject);
        // After freezing: carol decides run-2:b herself, and a new matching operation arrives.
        ApproveCommand::Request own;
        own.ns = kNs;
        own.key = "run-2:b";
        own.decision = ApprovalDecision::Redispatch;
        own.reason = "customer called";
        ApproveCommand(f.store(), kCarol, own).execute();
        needingConfirmation(f, "run-2:late");
        FakePacing pacing;
        const BulkOutcome o = runBulk(f, kBob, BulkAction::Reject, set, pacing);
        QCOMPARE(results(o), (std::vector<std::string>{"applied", "skipped_changed", "applied"}));
        QVERIFY(o.items[1].detail.find("changed since") != std::string::npos);
        QCOMPARE(f.store().find(kNs, "run-2:b")->state, OperationState::Received);
        QCOMPARE(f.store().find(kNs, "run-2:a")->state, OperationState::FailedTerminal);
        QCOMPARE(f.store().find(kNs, "run-2:late")->state, OperationState::ConfirmationRequired);
        QCOMPARE(f.store().approvals(kNs, "run-2:b").size(), std::size_t(1));
        QCOMPARE(f.store().auditLog(0, 100).size(), std::size_t(3)); // carol's, then two rejects
    }

    void stopMidwayLeavesTheRestUntouched()
    {
        LedgerFixture f;
        for (int i = 0; i < 5; ++i)
            needingConfirmation(f, "run-3:" + std::to_string(i));
        const auto set = BulkCommand::freeze(f.store(), prefix("run-3:"), BulkAction::Approve);
        FakePacing pacing;
        pacing.stopAfter = 2;
        const BulkOutcome o = runBulk(f, kBob, BulkAction::Approve, set, pacing);
        QVERIFY(o.cancelled);
        QCOMPARE(o.items.size(), std::size_t(2));
        QCOMPARE(o.notReached(), std::int64_t(3));
        QVERIFY(o.text().find("stopped, 3 not touched") != std::string::npos);
        for (int i = 2; i < 5; ++i) {
            const std::string key = "run-3:" + std::to_string(i);
            QCOMPARE(f.store().find(kNs, key)->state, OperationState::ConfirmationRequired);
            QVERIFY(f.store().approvals(kNs, key).empty());
        }
        QCOMPARE(f.store().auditLog(0, 100).size(), std::size_t(2));
    }

    void runAgainAfterAKillDoesNotApplyTwice()
    {
        LedgerFixture f;
        for (int i = 0; i < 4; ++i)
            needingConfirmation(f, "run-4:" + std::to_string(i));
        const auto set = BulkCommand::freeze(f.store(), prefix("run-4:"), BulkAction::Approve);
        FakePacing killed;
        killed.stopAfter = 2;
        runBulk(f, kBob, BulkAction::Approve, set, killed);
        f.reopen();
        // The same frozen set again (the keys file with its versions).
        FakePacing again;
        const BulkOutcome o = runBulk(f, kBob, BulkAction::Approve, set, again);
        QCOMPARE(results(o),
                 (std::vector<std::string>{"already_done", "already_done", "applied", "applied"}));
        for (const BulkTarget &t : set) {
            QCOMPARE(f.store().approvals(kNs, t.key).size(), std::size_t(1));
            QCOMPARE(f.store().find(kNs, t.key)->state, OperationState::Received);
        }
        QCOMPARE(f.store().auditLog(0, 100).size(), std::size_t(4));
        // The filter frozen again no longer holds what was decided.
        QVERIFY(BulkCommand::freeze(f.store(), prefix("run-4:"), BulkAction::Approve).empty());
    }

    /// A run stopped after two of four and started again answers what it did the same way
    /// whether the set names the versions it saw, names bare keys (the version read now, as a
    /// `KEY` line of `idempo bulk --keys`) or is the filter frozen again; only the filter's set
    /// leaves out what the action no longer takes.
    void runAgainAnswersAlikeHoweverTheSetIsNamed_data()
    {
        QTest::addColumn<int>("action");
        QTest::addColumn<QString>("naming");
        QTest::addColumn<bool>("fourEyes");
        for (const BulkAction action :
             {BulkAction::Approve, BulkAction::Reject, BulkAction::Reconcile})
            for (const char *naming : {"versions", "bare keys", "filter"})
                QTest::addRow("%s, %s", bulkActionName(action).data(), naming)
                    << static_cast<int>(action) << QString::fromLatin1(naming) << false;
        for (const char *naming : {"versions", "bare keys", "filter"})
            QTest::addRow("four-eyes approve, %s", naming)
                << static_cast<int>(BulkAction::Approve) << QString::fromLatin1(naming) << true;
    }

    void runAgainAnswersAlikeHoweverTheSetIsNamed()
    {
        QFETCH(int, action);
        QFETCH(QString, naming);
        QFETCH(bool, fourEyes);
        const auto bulk = static_cast<BulkAction>(action);
        const ActorIdentity &actor = bulk == BulkAction::Reconcile ? kOliver : kBob;
        LedgerFixture f;
        if (fourEyes)
            GuardSettingCommand(f.store(), {"root-admin", "owner"}, FourEyesSetting, "1000.00",
                                "two approvers for large refunds")
                .execute();
        const std::size_t settingRecords = fourEyes ? 1 : 0;
        for (int i = 0; i < 4; ++i) {
            const std::string key = "run-10:" + std::to_string(i);
            if (bulk == BulkAction::Reconcile) {
                const ClaimResult r = f.engine().claim(refundClaim(key));
                f.engine().fail(kNs, key, r.operation.fencingToken, ErrorClass::UnknownOutcome,
                                "timeout");
            } else {
                needingConfirmation(f, key);
            }
        }
        NoProviderLookup none;
        const auto run = [&](const std::vector<BulkTarget> &targets, std::int64_t stopAfter) {
            BulkCommand::Request r;
            r.action = bulk;
            r.targets = targets;
            r.reason = "end-of-shift review";
            r.confirmCount = std::ssize(targets);
            FakePacing pacing;
            pacing.stopAfter = stopAfter;
            BulkCommand command(f.store(), actor, r, {.lookup = &none, .pacing = pacing.hooks()});
            const std::string said = command.describe().sentence;
            return std::pair{command.execute(), said};
        };
        const std::vector<BulkTarget> frozen =
            BulkCommand::freeze(f.store(), prefix("run-10:"), bulk);
        QCOMPARE(frozen.size(), std::size_t(4));
        QVERIFY(run(frozen, 2).first.cancelled);
        f.reopen();
        const std::vector<AuditRecord> before = f.store().auditLog(0, 100);
        QCOMPARE(before.size(), settingRecords + 2);

        std::vector<BulkTarget> again = frozen;
        if (naming == QLatin1String("bare keys"))
            for (BulkTarget &t : again)
                t.version = f.store().find(t.ns, t.key)->version;
        else if (naming == QLatin1String("filter"))
            again = BulkCommand::freeze(f.store(), prefix("run-10:"), bulk);
        const auto [o, said] = run(again, -1);

        // What the first run decided is answered from its own records, nothing written again;
        // the filter no longer holds an operation approving or rejecting took out of its states.
        const bool leftOut =
            naming == QLatin1String("filter") && bulk != BulkAction::Reconcile && !fourEyes;
        const std::string earlier = fourEyes ? "pending" : "already_done";
        const std::string now = fourEyes ? "pending" : "applied";
        const std::vector<std::string> expected =
            leftOut ? std::vector<std::string>{now, now}
                    : std::vector<std::string>{earlier, earlier, now, now};
        QCOMPARE(results(o), expected);
        for (std::size_t i = 0; i < o.items.size(); ++i) {
            const BulkTarget &first = frozen[i + (leftOut ? 2 : 0)];
            QCOMPARE(o.items[i].target.key, first.key);
            QCOMPARE(o.items[i].target.version, first.version); // the version acted on
        }
        if (!leftOut && !fourEyes) {
            QVERIFY2(said.find("(2 already done by you before") != std::string::npos, said.c_str());
            QVERIFY2(o.items[0].detail.find("already done: your ") == 0, o.items[0].detail.c_str());
            QVERIFY(!o.items[0].auditSeq);
        }
        const std::vector<AuditRecord> after = f.store().auditLog(0, 100);
        QCOMPARE(after.size(), settingRecords + 4);
        for (std::size_t i = 0; i < before.size(); ++i)
            QCOMPARE(after[i].hash, before[i].hash);
    }

    /// A first four-eyes approval the operation moved away from (another approver rejected it)
    /// did not take effect: a run again says it changed, whichever way the set names it.
    void overtakenFirstApprovalIsSkippedHoweverTheSetIsNamed()
    {
        LedgerFixture f;
        GuardSettingCommand(f.store(), {"root-admin", "owner"}, FourEyesSetting, "1000.00",
                            "two approvers for large refunds")
            .execute();
        needingConfirmation(f, "run-11:a");
        const auto set = BulkCommand::freeze(f.store(), prefix("run-11:"), BulkAction::Approve);
        FakePacing pacing;
        QCOMPARE(results(runBulk(f, kBob, BulkAction::Approve, set, pacing)),
                 std::vector<std::string>{"pending"});
        ApproveCommand::Request no;
        no.ns = kNs;
        no.key = "run-11:a";
        no.decision = ApprovalDecision::Reject;
        no.reason = "duplicate";
        ApproveCommand(f.store(), kCarol, no).execute();
        std::vector<BulkTarget> bare = set;
        bare[0].version = f.store().find(kNs, "run-11:a")->version;
        for (const auto &targets : {set, bare}) {
            const BulkOutcome o = runBulk(f, kBob, BulkAction::Approve, targets, pacing);
            QCOMPARE(results(o), std::vector<std::string>{"skipped_changed"});
            QVERIFY2(o.items[0].detail.find("which no second approver applied") !=
                         std::string::npos,
                     o.items[0].detail.c_str());
        }
        QCOMPARE(f.store().find(kNs, "run-11:a")->state, OperationState::FailedTerminal);
    }

    void wrongCountWritesNothing()
    {
        LedgerFixture f;
        needingConfirmation(f, "run-5:a");
        needingConfirmation(f, "run-5:b");
        const auto set = BulkCommand::freeze(f.store(), prefix("run-5:"), BulkAction::Approve);
        const QByteArray before = f.snapshot();
        for (const std::int64_t typed : {1, 3, 0}) {
            FakePacing pacing;
            QCOMPARE(errorOf([&] { runBulk(f, kBob, BulkAction::Approve, set, pacing, typed); }),
                     ErrorCode::Refused);
        }
        BulkCommand::Request untyped;
        untyped.targets = set;
        untyped.reason = "r";
        BulkCommand command(f.store(), kBob, untyped, {});
        QVERIFY(command.validate().empty());
        try {
            command.execute();
            QFAIL("executed without the typed count");
        } catch (const Error &e) {
            QCOMPARE(std::string(e.what()),
                     std::string("confirm the count: the set holds 2 operations"));
        }
        QCOMPARE(f.snapshot(), before);
    }

    void fourEyesHoldsPerOperation()
    {
        LedgerFixture f;
        needingConfirmation(f, "run-6:by-bob", "bob");
        needingConfirmation(f, "run-6:by-worker");
        const auto set = BulkCommand::freeze(f.store(), prefix("run-6:"), BulkAction::Approve);
        FakePacing pacing;
        const BulkOutcome o = runBulk(f, kBob, BulkAction::Approve, set, pacing);
        QCOMPARE(results(o), (std::vector<std::string>{"refused", "applied"}));
        QVERIFY(o.items[0].detail.find("requested this operation") != std::string::npos);
        QCOMPARE(f.store().find(kNs, "run-6:by-bob")->state, OperationState::ConfirmationRequired);

        // Above the threshold, bob's approval waits for a second approver; bob again does not
        // count twice and is told it still waits; carol applies it.
        GuardSettingCommand setting(f.store(), {"root-admin", "owner"}, FourEyesSetting, "1000.00",
                                    "two approvers for large refunds");
        setting.execute();
        needingConfirmation(f, "run-7:large");
        const auto large = BulkCommand::freeze(f.store(), prefix("run-7:"), BulkAction::Approve);
        QCOMPARE(results(runBulk(f, kBob, BulkAction::Approve, large, pacing)),
                 std::vector<std::string>{"pending"});
        QCOMPARE(results(runBulk(f, kBob, BulkAction::Approve, large, pacing)),
                 std::vector<std::string>{"pending"});
        QCOMPARE(f.store().find(kNs, "run-7:large")->state, OperationState::ConfirmationRequired);
        QCOMPARE(results(runBulk(f, kCarol, BulkAction::Approve, large, pacing)),
                 std::vector<std::string>{"applied"});
        QCOMPARE(f.store().find(kNs, "run-7:large")->state, OperationState::Received);
    }

    void rulesOfTheSetItself()
    {
        LedgerFixture f;
        needingConfirmation(f, "run-8:a");
        const auto set = BulkCommand::freeze(f.store(), prefix("run-8:"), BulkAction::Approve);
        const QByteArray before = f.snapshot();
        // Every set below is refused by execute() too, with the rule's error.
        bool executeRefused = true;
        const auto problemsOf = [&](const ActorIdentity &actor, BulkAction action, double rate,
                                    const std::string &reason) {
            BulkCommand::Request r;
            r.action = action;
            r.targets = set;
            r.reason = reason;
            r.ratePerSecond = rate;
            r.confirmCount = 1;
            BulkCommand command(f.store(), actor, r, {});
            const auto problems = command.validate();
            const ErrorCode code = errorOf([&] { command.execute(); });
            executeRefused = executeRefused &&
                             (code == ErrorCode::Refused || code == ErrorCode::InvalidArgument);
            return problems;
        };
        QCOMPARE(problemsOf({"vera", "viewer"}, BulkAction::Approve, 20, "r").front(),
                 std::string("role 'viewer' may not approve or reject operations: that needs "
                             "idempo_approver or idempo_admin"));
        QCOMPARE(problemsOf(kBob, BulkAction::Approve, 20, "").front(),
                 std::string("a reason is required"));
        QCOMPARE(problemsOf(kBob, BulkAction::Approve, 0, "r").front(),
                 std::string("the rate must be more than 0 and at most 500 operations per second, "
                             "not 0"));
        QCOMPARE(problemsOf(kBob, BulkAction::Approve, 501, "r").size(), std::size_t(1));
        QCOMPARE(problemsOf(kOliver, BulkAction::Reconcile, 20, "r").front(),
                 std::string("reconciling needs a provider lookup"));
        QVERIFY(executeRefused);
        QCOMPARE(f.snapshot(), before);
        // A filter naming a state the action does not take freezes nothing.
        ListFilter succeeded = prefix("run-8:");
        succeeded.state = OperationState::Succeeded;
        QVERIFY(BulkCommand::freeze(f.store(), succeeded, BulkAction::Approve).empty());
    }

    void reconcileInBulk()
    {
        LedgerFixture f;
        for (const char *key : {"run-9:a", "run-9:b"}) {
            const ClaimResult r = f.engine().claim(refundClaim(key));
            f.engine().fail(kNs, key, r.operation.fencingToken, ErrorClass::UnknownOutcome,
                            "timeout");
        }
        NoProviderLookup none;
        const auto set = BulkCommand::freeze(f.store(), prefix("run-9:"), BulkAction::Reconcile);
        QCOMPARE(set.size(), std::size_t(2));
        BulkCommand::Request r;
        r.action = BulkAction::Reconcile;
        r.targets = set;
        r.reason = "provider outage";
        r.confirmCount = 2;
        FakePacing pacing;
        BulkCommand command(f.store(), kOliver, r, {.lookup = &none, .pacing = pacing.hooks()});
        const BulkOutcome o = command.execute();
        QCOMPARE(results(o), (std::vector<std::string>{"applied", "applied"}));
        // No lookup for them: each goes to a person, with the evidence recorded.
        for (const BulkItem &item : o.items)
            QCOMPARE(item.state, std::string("confirmation_required"));
        const auto audit = f.store().auditLog(0, 100);
        QCOMPARE(audit.size(), std::size_t(2));
        QCOMPARE(audit[0].entry.action, std::string("reconcile"));
    }
};

QTEST_GUILESS_MAIN(TestBulkCommand)
#include "tst_bulkcommand.moc"
