// SPDX-License-Identifier: Apache-2.0
// Four-eyes in one reference currency (the reference_rates guard setting, money.h), on every
// store: SQLite by default, PostgreSQL under tests/pg/with-postgres.sh, where idempo.approve
// decides by idempo.needs_four_eyes and the command's preview must say the same.
#include <QtTest>

#include "approvecommand.h"
#include "error.h"
#include "errorof.h"
#include "guardedactionhelpers.h"
#include "guardsettingcommand.h"
#include "ledgerfixture.h"
#include "money.h"
#include "pgconnection.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kOwner{"root-admin", "owner"};
const ActorIdentity kBob{"bob", "approver"};

void setGuard(LedgerStore &store, const char *name, const std::string &value)
{
    GuardSettingCommand command(store, kOwner, name, value, "treasury's rates of the day");
    QVERIFY(command.validate().empty());
    command.execute();
}

/// An operation of `payload` in confirmation_required.
void waiting(LedgerFixture &f, const std::string &key, const std::string &payload)
{
    ClaimInput in = refundClaim(key, "worker-a", payload);
    in.maxAttempts = 1;
    f.engine().fail(kNs, key, f.engine().claim(in).operation.fencingToken, ErrorClass::Transient,
                    "503");
}

/// Whether approving `key` waits for a second approver: the preview's word, then the ledger's.
bool waitsForSecond(LedgerStore &store, const std::string &key)
{
    ApproveCommand::Request r;
    r.ns = kNs;
    r.key = key;
    r.decision = ApprovalDecision::Redispatch;
    r.reason = "checked";
    ApproveCommand command(store, kBob, r);
    const bool previewed = command.describe().details.at("four_eyes").get<bool>();
    const std::string status = command.execute().status;
    if (previewed != (status == "pending"))
        qWarning("%s: preview says four_eyes=%d, ledger answered %s", key.c_str(), previewed,
                 status.c_str());
    return status == "pending" && previewed;
}

} // namespace

class TestReferenceRates : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void parsesOnlyWellFormedRates()
    {
        const auto rates = ReferenceRates::parse("EUR USD=0.92 JPY=0.0061");
        QVERIFY(rates);
        QCOMPARE(rates->reference, std::string("EUR"));
        QCOMPARE(rates->nanoRate("EUR"), std::optional<std::int64_t>(1'000'000'000));
        QCOMPARE(rates->nanoRate("USD"), std::optional<std::int64_t>(920'000'000));
        QCOMPARE(rates->nanoRate("JPY"), std::optional<std::int64_t>(6'100'000));
        QVERIFY(!rates->nanoRate("GBP"));
        for (const char *bad :
             {"eur", "EUR USD", "EUR USD=", "EUR USD=0", "EUR USD=1.0000000001", "EUR  USD=1",
              "EUR USD=1 USD=2", "EUR EUR=1", "EUR USD=-1", "EUR USD=1e3", "EUR USD=.5"}) {
            std::string problem;
            QVERIFY2(!ReferenceRates::parse(bad, &problem), bad);
            QVERIFY2(!problem.empty(), bad);
        }
    }

    void badRatesWriteNothing()
    {
        LedgerFixture f;
        GuardSettingCommand command(f.store(), kOwner, ReferenceRatesSetting, "EUR USD=abc",
                                    "typo");
        QCOMPARE(command.validate().size(), std::size_t(1));
        QVERIFY2(command.validate().front().find("'USD=abc'") != std::string::npos,
                 command.validate().front().c_str());
        QCOMPARE(errorOf([&] { command.execute(); }), ErrorCode::InvalidArgument);
        QVERIFY(!f.store().guardSetting(ReferenceRatesSetting));
        if (qEnvironmentVariableIsEmpty("IDEMPO_TEST_POSTGRES_URL"))
            return;
        // The ledger's own function refuses it too, for a client that skips our validation.
        PgConnection admin(qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString());
        for (const char *bad : {"EUR USD=abc", "EUR USD=0", "EUR USD=1 USD=2", "eur"}) {
            bool refused = false;
            try {
                admin.exec("set rates", "SELECT idempo.set_guard_setting($1, $2, $3)",
                           PgParams().text("reference_rates").text(bad).text("typo"));
            } catch (const Error &e) {
                refused = std::string(e.what()).find("reference_rates") != std::string::npos ||
                          std::string(e.what()).find("rate of") != std::string::npos;
                QVERIFY2(refused, e.what());
            }
            QVERIFY2(refused, bad);
        }
        QVERIFY(!f.store().guardSetting(ReferenceRatesSetting));
    }

    void gatesInTheReferenceCurrency()
    {
        LedgerFixture f;
        setGuard(f.store(), FourEyesSetting, "5000");
        setGuard(f.store(), ReferenceRatesSetting, "EUR USD=0.92 JPY=0.0061");
        waiting(f, "r:jpy-big", R"({"amount":1000000,"currency":"JPY"})");    // 6,100 EUR
        waiting(f, "r:eur-below", R"({"amount":"4999","currency":"EUR"})");   // 4,999 EUR
        waiting(f, "r:jpy-small", R"({"amount":5000,"currency":"JPY"})");     // 30.50 EUR
        waiting(f, "r:usd-big", R"({"amount":"6000","currency":"USD"})");     // 5,520 EUR
        waiting(f, "r:usd-edge", R"({"amount":"5434.78","currency":"USD"})"); // 4,999.9976 EUR
        waiting(f, "r:gbp", R"({"amount":"10","currency":"GBP"})");           // no rate
        QVERIFY(waitsForSecond(f.store(), "r:jpy-big"));
        QVERIFY(!waitsForSecond(f.store(), "r:eur-below"));
        QVERIFY(!waitsForSecond(f.store(), "r:jpy-small"));
        QVERIFY(waitsForSecond(f.store(), "r:usd-big"));
        QVERIFY(!waitsForSecond(f.store(), "r:usd-edge"));
        waiting(f, "r:usd-over", R"({"amount":"5434.79","currency":"USD"})"); // 5,000.0068 EUR
        QVERIFY(waitsForSecond(f.store(), "r:usd-over"));
        QVERIFY(waitsForSecond(f.store(), "r:gbp"));
    }

    void aSmallerDeclaredValueDoesNotHideThePayloadsAmount()
    {
        LedgerFixture f;
        setGuard(f.store(), FourEyesSetting, "1000");
        ClaimInput in =
            refundClaim("r:declared-small", "worker-a", R"({"amount":5000000,"currency":"EUR"})");
        in.value = Amount{100, "EUR"}; // 1.00 EUR declared
        in.maxAttempts = 1;
        f.engine().fail(kNs, in.key, f.engine().claim(in).operation.fencingToken,
                        ErrorClass::Transient, "503");
        QCOMPARE(f.store().find(kNs, in.key)->value->minorUnits, std::int64_t(100));
        QVERIFY(waitsForSecond(f.store(), "r:declared-small"));
    }

    void withoutRatesTheThresholdIsAsWrittenInEveryCurrency()
    {
        LedgerFixture f;
        setGuard(f.store(), FourEyesSetting, "5000");
        waiting(f, "r:jpy-at", R"({"amount":5000,"currency":"JPY"})");
        waiting(f, "r:jpy-above", R"({"amount":5001,"currency":"JPY"})");
        waiting(f, "r:eur-below", R"({"amount":"4999.99","currency":"EUR"})");
        QVERIFY(!waitsForSecond(f.store(), "r:jpy-at"));
        QVERIFY(waitsForSecond(f.store(), "r:jpy-above"));
        QVERIFY(!waitsForSecond(f.store(), "r:eur-below"));
        // A threshold finer than a currency's minor unit still gates it (it used to turn
        // four-eyes off for that currency).
        setGuard(f.store(), FourEyesSetting, "1000.50");
        waiting(f, "r:jpy-1001", R"({"amount":1001,"currency":"JPY"})");
        QVERIFY(waitsForSecond(f.store(), "r:jpy-1001"));
    }
};

QTEST_GUILESS_MAIN(TestReferenceRates)
#include "tst_referencerates.moc"
