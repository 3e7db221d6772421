// SPDX-License-Identifier: Apache-2.0
// The fingerprint projection a record was created with decides every later claim of its key, on
// the store the suite runs against (SQLite, or PostgreSQL under tests/pg/with-postgres.sh): a
// caller that names no projection is fingerprinted by the record's; one that names another is
// refused as projection_mismatch (not payload_mismatch), with nothing written or recorded.
#include <optional>

#include <QtTest>

#include "error.h"
#include "ledgerfixture.h"

using namespace idempo;
using idempo::test::LedgerFixture;

namespace {

const std::string kNs = "default";

ClaimInput claimOf(const std::string &key, const std::string &payload,
                   std::vector<std::string> fields = {})
{
    ClaimInput in;
    in.ns = kNs;
    in.key = key;
    in.payloadJson = payload;
    in.owner = "worker-a";
    in.fingerprintFields = std::move(fields);
    return in;
}

/// The error a claim throws, or nothing when it answers.
std::optional<Error> refusalOf(LedgerFixture &f, const ClaimInput &in)
{
    try {
        f.engine().claim(in);
    } catch (const Error &e) {
        return e;
    }
    return std::nullopt;
}

std::size_t suppressionCount(LedgerFixture &f)
{
    return f.store().suppressions({}, 0, 1000).size();
}

} // namespace

class TestProjectionContract final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    /// The case that was answered payload_mismatch: the same amount, a new volatile field, and
    /// no --fingerprint-fields on the second claim.
    void recordsProjectionDecidesWhenTheCallerNamesNone()
    {
        LedgerFixture f;
        const ClaimResult first = f.engine().claim(
            claimOf("run-1:refund", R"({"amount":10,"sent_at":"09:00"})", {"/amount"}));
        QCOMPARE(first.outcome, ClaimOutcome::Claimed);
        QCOMPARE(first.operation.fingerprintFields, std::vector<std::string>{"/amount"});

        const ClaimResult busy =
            f.engine().claim(claimOf("run-1:refund", R"({"amount":10,"sent_at":"09:05"})"));
        QCOMPARE(busy.outcome, ClaimOutcome::InProgress);
        QVERIFY(!busy.projectionDiffers);
        QCOMPARE(suppressionCount(f), std::size_t(1)); // one claim, one suppression
        f.engine().complete(kNs, "run-1:refund", first.operation.fencingToken,
                            R"({"refund":"RF-1"})", {});

        const ClaimResult replayed =
            f.engine().claim(claimOf("run-1:refund", R"({"sent_at":"10:00","amount":10})"));
        QCOMPARE(replayed.outcome, ClaimOutcome::Replayed);
        QCOMPARE(replayed.operation.result, std::string(R"({"refund":"RF-1"})"));
        const std::vector<Suppression> recorded = f.store().suppressions({}, 0, 1000);
        QCOMPARE(recorded.size(), std::size_t(2));
        // The suppression carries the fingerprint the claim was judged by: the record's projection.
        QCOMPARE(recorded.back().fingerprint, first.operation.fingerprint);

        // Under the record's projection a different amount is still a different payload.
        const ClaimResult changed =
            f.engine().claim(claimOf("run-1:refund", R"({"amount":11,"sent_at":"10:00"})"));
        QCOMPARE(changed.outcome, ClaimOutcome::PayloadMismatch);
        QCOMPARE(suppressionCount(f), std::size_t(3));
        QCOMPARE(f.store().find(kNs, "run-1:refund")->state, OperationState::Succeeded);
    }

    /// The same projection named another way (order, repeats) is the same projection.
    void theSameSetOfPointersIsTheSameProjection()
    {
        LedgerFixture f;
        const ClaimResult first = f.engine().claim(
            claimOf("run-2:book", R"({"seat":"12A","flight":"LX1","at":1})", {"/seat", "/flight"}));
        QCOMPARE(first.operation.fingerprintFields, (std::vector<std::string>{"/flight", "/seat"}));
        const ClaimResult again =
            f.engine().claim(claimOf("run-2:book", R"({"seat":"12A","flight":"LX1","at":2})",
                                     {"/flight", "/seat", "/flight"}));
        QCOMPARE(again.outcome, ClaimOutcome::InProgress);
    }

    /// A caller that names another projection is told so, and nothing is written or recorded:
    /// neither the projection nor a suppression.
    void anotherProjectionIsRefusedAsSuch_data()
    {
        QTest::addColumn<QStringList>("recorded");
        QTest::addColumn<QStringList>("named");
        QTest::newRow("other pointer")
            << QStringList{QStringLiteral("/amount")} << QStringList{QStringLiteral("/sent_at")};
        QTest::newRow("more pointers")
            << QStringList{QStringLiteral("/amount")}
            << QStringList{QStringLiteral("/amount"), QStringLiteral("/currency")};
        QTest::newRow("record fingerprints the whole payload")
            << QStringList{} << QStringList{QStringLiteral("/amount")};
    }
    void anotherProjectionIsRefusedAsSuch()
    {
        QFETCH(QStringList, recorded);
        QFETCH(QStringList, named);
        const auto pointers = [](const QStringList &list) {
            std::vector<std::string> v;
            for (const QString &p : list)
                v.push_back(p.toStdString());
            return v;
        };
        LedgerFixture f;
        const std::string payload = R"({"amount":10,"currency":"EUR","sent_at":"09:00"})";
        f.engine().claim(claimOf("run-3:refund", payload, pointers(recorded)));
        const QByteArray before = f.snapshot();

        const std::optional<Error> refused =
            refusalOf(f, claimOf("run-3:refund", payload, pointers(named)));
        QVERIFY(refused.has_value());
        QCOMPARE(refused->code(), ErrorCode::ProjectionMismatch);
        QCOMPARE(std::string(errorCodeName(refused->code())), std::string("projection_mismatch"));
        const std::string message = refused->what();
        QVERIFY2(message.find("the projection differs") != std::string::npos, message.c_str());
        QVERIFY2(message.find(pointers(named).front()) != std::string::npos, message.c_str());
        QVERIFY2(message.find("payload differs") == std::string::npos &&
                     message.find("payload_mismatch") == std::string::npos,
                 message.c_str());
        QCOMPARE(f.snapshot(), before);
    }

    /// Once the record's retention has passed, a claim is a new operation: it is created with
    /// the projection the new caller names (none here), not the old record's.
    void anExpiredRecordDoesNotImposeItsProjection()
    {
        LedgerFixture f;
        const ClaimResult first =
            f.engine().claim(claimOf("run-4:send", R"({"to":"a@example.org","n":1})", {"/to"}));
        f.engine().complete(kNs, "run-4:send", first.operation.fencingToken, R"({"sent":true})",
                            {});
        f.advanceMs(f.engine().settings().retentionMs + 1);
        const ClaimResult fresh =
            f.engine().claim(claimOf("run-4:send", R"({"to":"a@example.org","n":2})"));
        QCOMPARE(fresh.outcome, ClaimOutcome::Claimed);
        QVERIFY(fresh.operation.fingerprintFields.empty());
    }

    /// A payload in which the record's projection selects nothing does not match a record
    /// whose projection selected something: payload_mismatch, not an error about the caller's
    /// (absent) fields.
    void aPayloadWithoutTheRecordsFieldsIsAMismatch()
    {
        LedgerFixture f;
        f.engine().claim(claimOf("run-5:refund", R"({"amount":10})", {"/amount"}));
        const ClaimResult other = f.engine().claim(claimOf("run-5:refund", R"({"total":10})"));
        QCOMPARE(other.outcome, ClaimOutcome::PayloadMismatch);
    }
};

QTEST_GUILESS_MAIN(TestProjectionContract)
#include "tst_projectioncontract.moc"
