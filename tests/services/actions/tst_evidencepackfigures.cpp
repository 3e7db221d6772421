// SPDX-License-Identifier: Apache-2.0
// The figures an export of an evidence pack reports (EvidencePack::figures(), the console's
// status line) read from what EvidencePack::build() makes, on every store: the operation's audit
// records in the pack and the chain head it was made at, as the pack and the ledger say; a pack
// without them is refused.
#include <QtTest>

#include "approvecommand.h"
#include "evidencepack.h"
#include "guardedactionhelpers.h"
#include "ledgerfixture.h"

using namespace idempo;
using namespace idempo::test;

namespace {

const ActorIdentity kBob{"bob", "approver"};

/// Sends `key` (in confirmation_required) out again with one more attempt: one audit record.
void approve(LedgerFixture &f, const std::string &key)
{
    ApproveCommand::Request r;
    r.ns = kNs;
    r.key = key;
    r.decision = ApprovalDecision::Redispatch;
    r.reason = "checked with the customer";
    ApproveCommand::Options options;
    options.extraAttempts = 1;
    ApproveCommand(f.store(), kBob, r, options).execute();
}

/// The ledger's newest audit record number (0 for an empty chain).
std::int64_t headOf(LedgerStore &store)
{
    AuditFilter newest;
    newest.newestFirst = true;
    newest.limit = 1;
    const std::vector<AuditRecord> last = store.auditRecords(newest);
    return last.empty() ? 0 : last.front().seq;
}

/// `figures` are what `pack` says.
void expectFiguresOf(const EvidencePack::Figures &figures, const nlohmann::json &pack)
{
    QCOMPARE(figures.auditRecords, static_cast<std::int64_t>(pack.at("audit_records").size()));
    QCOMPARE(figures.headSeq, pack.at("chain").at("head").at("seq").get<std::int64_t>());
}

/// The message of the Error figures() throws for `pack`; empty when it throws none.
std::string refusalOf(const nlohmann::json &pack)
{
    try {
        EvidencePack::figures(pack);
    } catch (const Error &e) {
        if (e.code() != ErrorCode::InvalidArgument)
            return std::string("not invalid_argument: ") + e.what();
        return e.what();
    }
    return {};
}

} // namespace

class TestEvidencePackFigures final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qInfo("store under test: %s", LedgerFixture::storeName()); }

    /// Two decisions on one operation with another's between them: the pack holds the
    /// operation's two records and names the newest record of the chain as its head.
    void figuresOfAPackWithRecords()
    {
        LedgerFixture f;
        needingConfirmation(f, "run-1:refund");
        approve(f, "run-1:refund");
        needingConfirmation(f, "run-2:refund");
        approve(f, "run-2:refund");
        // Its one more attempt fails too: back to a person, who decides again.
        const ClaimResult again = f.engine().claim(refundClaim("run-1:refund"));
        QCOMPARE(f.engine()
                     .fail(kNs, "run-1:refund", again.operation.fencingToken, ErrorClass::Transient,
                           "503 from provider")
                     .state,
                 OperationState::ConfirmationRequired);
        approve(f, "run-1:refund");

        const nlohmann::json pack = EvidencePack::build(f.store(), kNs, "run-1:refund");
        const EvidencePack::Figures figures = EvidencePack::figures(pack);
        expectFiguresOf(figures, pack);
        const EvidencePack::Verdict verdict = EvidencePack::verify(pack);
        QVERIFY2(verdict.ok, verdict.problem.c_str());
        QCOMPARE(figures.auditRecords, verdict.records);
        QCOMPARE(figures.auditRecords, std::int64_t{2});
        QCOMPARE(figures.headSeq, headOf(f.store()));
        QVERIFY(figures.headSeq >= 3);
    }

    /// An operation no one acted on: no records of its own, the head all the same.
    void figuresOfAPackWithoutRecords()
    {
        LedgerFixture f;
        f.engine().claim(refundClaim("run-3:refund"));
        nlohmann::json pack = EvidencePack::build(f.store(), kNs, "run-3:refund");
        EvidencePack::Figures figures = EvidencePack::figures(pack);
        expectFiguresOf(figures, pack);
        QCOMPARE(figures.auditRecords, std::int64_t{0});
        QCOMPARE(figures.headSeq, headOf(f.store()));

        needingConfirmation(f, "run-4:refund");
        approve(f, "run-4:refund");
        pack = EvidencePack::build(f.store(), kNs, "run-3:refund");
        figures = EvidencePack::figures(pack);
        expectFiguresOf(figures, pack);
        QCOMPARE(figures.auditRecords, std::int64_t{0});
        QCOMPARE(figures.headSeq, headOf(f.store()));
        QVERIFY(figures.headSeq > 0);
    }

    void malformedPacksAreRefused_data()
    {
        const char *kNoHead = "it has no chain head (\"chain\": {\"head\": …})";
        QTest::addColumn<QString>("pointer"); ///< the member spoilt
        QTest::addColumn<QString>("value");   ///< its new value as JSON; empty: removed
        QTest::addColumn<QString>("refusal"); ///< what the message must say
        QTest::addRow("no audit records") << "/audit_records"
                                          << ""
                                          << "it has no \"audit_records\" array";
        QTest::addRow("audit records not an array") << "/audit_records"
                                                    << "{}"
                                                    << "it has no \"audit_records\" array";
        QTest::addRow("no chain") << "/chain"
                                  << "" << kNoHead;
        QTest::addRow("chain not an object") << "/chain"
                                             << "[]" << kNoHead;
        QTest::addRow("no head") << "/chain/head"
                                 << "" << kNoHead;
        QTest::addRow("head not an object") << "/chain/head"
                                            << "7" << kNoHead;
        QTest::addRow("no seq") << "/chain/head/seq"
                                << ""
                                << "the chain head's \"seq\" is missing";
        QTest::addRow("seq as text") << "/chain/head/seq"
                                     << "\"3\""
                                     << "the chain head's \"seq\" is not a record number: \"3\"";
        QTest::addRow("negative seq") << "/chain/head/seq"
                                      << "-1"
                                      << "the chain head's \"seq\" is not a record number: -1";
        QTest::addRow("fractional seq") << "/chain/head/seq"
                                        << "2.5"
                                        << "the chain head's \"seq\" is not a record number: 2.5";
    }

    void malformedPacksAreRefused()
    {
        QFETCH(QString, pointer);
        QFETCH(QString, value);
        QFETCH(QString, refusal);
        LedgerFixture f;
        needingConfirmation(f, "run-5:refund");
        approve(f, "run-5:refund");
        nlohmann::json pack = EvidencePack::build(f.store(), kNs, "run-5:refund");
        const nlohmann::json::json_pointer at(pointer.toStdString());
        if (value.isEmpty())
            pack.at(at.parent_pointer()).erase(at.back());
        else
            pack[at] = nlohmann::json::parse(value.toStdString());
        const std::string message = refusalOf(pack);
        QCOMPARE(message, "malformed evidence pack: " + refusal.toStdString());
    }

    void notAnObjectIsRefused()
    {
        for (const nlohmann::json &pack : {nlohmann::json(), nlohmann::json::array()})
            QCOMPARE(refusalOf(pack), std::string("malformed evidence pack: it is not an object"));
    }
};

QTEST_GUILESS_MAIN(TestEvidencePackFigures)
#include "tst_evidencepackfigures.moc"
