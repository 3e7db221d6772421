// SPDX-License-Identifier: Apache-2.0
#include "consolefixture.h"

#include <QDateTime>

#include "approvecommand.h"
#include "guardsettingcommand.h"

namespace idempo::test {

namespace {

ClaimInput input(const std::string &runId, const std::string &step, ToolKind kind,
                 const std::string &payload, const std::string &owner)
{
    ClaimInput in;
    in.key = runId + ":" + step;
    in.runId = runId;
    in.stepId = step;
    in.kind = kind;
    in.payloadJson = payload;
    in.owner = owner;
    return in;
}

} // namespace

ConsoleFixture::ConsoleFixture(const QString &path)
    : m_path(path.isEmpty() ? m_dir.filePath(QStringLiteral("ledger.db")) : path),
      m_clock(std::make_shared<ManualClock>(QDateTime::currentMSecsSinceEpoch() - 45 * 60'000)),
      m_store(std::make_shared<SqliteLedgerStore>(m_path, m_clock)),
      m_queues(std::make_unique<SqliteMessageQueue>(m_store)),
      m_engine(
          std::make_unique<Engine>(m_store, Engine::Settings{}, RetryPolicy([] { return 0.5; })))
{
}

ClaimResult ConsoleFixture::claimNew(const std::string &key, const std::string &runId,
                                     std::int64_t leaseMs)
{
    ClaimInput in = input(runId, key.substr(key.find(':') + 1), ToolKind::ProtectedWrite,
                          R"({"amount":125000,"currency":"EUR"})", "worker-live");
    in.key = key;
    in.leaseMs = leaseMs;
    return m_engine->claim(in);
}

void ConsoleFixture::populate()
{
    Engine &e = *m_engine;
    const auto step = [this](std::int64_t ms) { m_clock->advanceMs(ms); };

    // Runs that went well, with steps of different lengths for the time-to-final chart.
    for (int r = 0; r < 12; ++r) {
        const std::string run = "run-" + std::to_string(7100 + r);
        for (const auto &[name, kind] :
             {std::pair{"extract_document", ToolKind::Read},
              std::pair{"compliance_check", ToolKind::IdempotentWrite},
              std::pair{"provision_account", ToolKind::ProtectedWrite}}) {
            const ClaimResult c =
                e.claim(input(run, name, kind,
                              R"({"customer":"c-)" + std::to_string(900 + r) + "\"}", "worker-a"));
            step(400 + 900 * r);
            e.complete("default", c.operation.key, c.operation.fencingToken, R"({"ok":true})",
                       kind == ToolKind::ProtectedWrite
                           ? R"({"core_banking_ref":"CB-)" + std::to_string(5000 + r) + "\"}"
                           : "");
            step(200);
        }
        step(20'000);
    }

    // run-7001: KYC onboarding, delivered three times: two replays and one changed payload.
    for (const char *name : {"extract_document", "compliance_check", "provision_account"}) {
        const ClaimResult c = e.claim(input("run-7001", name, ToolKind::ProtectedWrite,
                                            R"({"customer":"c-981","plan":"gold"})", "worker-a"));
        step(1500);
        e.complete("default", c.operation.key, c.operation.fencingToken,
                   R"({"account":"ACC-7731"})", R"({"core_banking_ref":"CB-55012"})");
    }
    step(5000);
    e.claim(input("run-7001", "provision_account", ToolKind::ProtectedWrite,
                  R"({"plan":"gold","customer":"c-981"})", "queue-redelivery"));
    e.claim(input("run-7001", "provision_account", ToolKind::ProtectedWrite,
                  R"({"customer":"c-981","plan":"gold"})", "worker-c"));
    e.claim(input("run-7001", "provision_account", ToolKind::ProtectedWrite,
                  R"({"customer":"c-981","plan":"platinum"})", "planner-2"));

    // run-7002: a refund over the threshold waits for approval.
    ClaimInput refund = input(
        "run-7002", "refund", ToolKind::ProtectedWrite,
        R"({"amount":125000,"currency":"EUR","order":"SO-88121","reason":"duplicate charge"})",
        "worker-a");
    refund.requiresApproval = true;
    refund.value = Amount{125'000, "EUR"};
    e.claim(refund);
    step(3000);

    // run-7003: the booking provider timed out after it may have committed.
    const ClaimResult flight = e.claim(
        input("run-7003", "book_flight", ToolKind::ProtectedWrite,
              R"({"passenger":"P. Nowak","flight":"LH1234","date":"2026-12-01"})", "worker-b"));
    step(30'000);
    e.fail("default", flight.operation.key, flight.operation.fencingToken,
           ErrorClass::UnknownOutcome, "provider timeout after 30 s");
    step(2000);
    e.claim(input("run-7003", "book_flight", ToolKind::ProtectedWrite,
                  R"({"passenger":"P. Nowak","flight":"LH1234","date":"2026-12-01"})", "worker-c"));

    // run-7004: an invoice email failed three times: a person must decide.
    for (int attempt = 0; attempt < 3; ++attempt) {
        ClaimInput invoice = input("run-7004", "send_invoice", ToolKind::ProtectedWrite,
                                   R"({"to":"ap@example.com","invoice":"INV-2291"})", "worker-a");
        invoice.value = Amount{840'000, "EUR"};
        const ClaimResult c = e.claim(invoice);
        step(2000);
        e.fail("default", c.operation.key, c.operation.fencingToken, ErrorClass::Transient,
               "SMTP 451 temporary failure");
        step(60'000);
    }

    // run-7008 and run-7010: a terminal refusal and a retry pending.
    const ClaimResult account =
        e.claim(input("run-7008", "create_account", ToolKind::ProtectedWrite,
                      R"({"customer":"c-17"})", "worker-a"));
    step(800);
    e.fail("default", account.operation.key, account.operation.fencingToken, ErrorClass::Validation,
           "IBAN checksum invalid");
    const ClaimResult mail = e.claim(input("run-7010", "send_email", ToolKind::ProtectedWrite,
                                           R"({"to":"ops@example.com"})", "worker-a"));
    step(800);
    e.fail("default", mail.operation.key, mail.operation.fencingToken, ErrorClass::RateLimited,
           "429 Too Many Requests", 600'000);

    // run-7007: a protected write whose lease lapsed: nobody has claimed it since.
    ClaimInput charge = input("run-7007", "charge_card", ToolKind::ProtectedWrite,
                              R"({"amount":4999,"currency":"EUR"})", "worker-d");
    charge.leaseMs = 30'000;
    charge.value = Amount{4'999, "EUR"};
    e.claim(charge);

    // A dead letter: a message nacked once, then read past its limit.
    m_queues->createQueue("payments", QueueOptions{1});
    const std::int64_t msg = m_queues->send(
        "payments",
        R"({"run_id":"run-7009","step_id":"capture","source_agent":"planner","target_agent":"payments","payload":{"amount":250},"produced_at":)" +
            std::to_string(m_clock->nowMs()) + R"(,"idempotency_key":"run-7009:capture"})",
        "", 0);
    m_queues->read("payments", 30'000, 1);
    m_queues->nack("payments", msg, ErrorClass::Transient, "payments API 503", 0);
    m_queues->read("payments", 30'000, 1);

    // The last minute before now: the takeover below must come within run-7005's no-progress
    // budget, or the run would rightly halt instead.
    m_clock->setMs(QDateTime::currentMSecsSinceEpoch() - 60'000);

    // run-7005: a paused worker loses its lease on a read; worker-b takes over with a new token.
    ClaimInput rates =
        input("run-7005", "lookup_rates", ToolKind::Read, R"({"pair":"EURUSD"})", "worker-a");
    rates.leaseMs = 20'000;
    e.claim(rates);

    // Bring the clock to the real time so countdowns and ages read naturally.
    m_clock->setMs(QDateTime::currentMSecsSinceEpoch());

    rates.owner = "worker-b";
    rates.leaseMs = 900'000;
    e.claim(rates);

    // run-7006: a capture in flight, and a redelivery answered "in progress".
    ClaimInput capture = input("run-7006", "capture_payment", ToolKind::ProtectedWrite,
                               R"({"amount":87000,"currency":"EUR"})", "worker-c");
    capture.leaseMs = 600'000;
    capture.value = Amount{87'000, "EUR"};
    e.claim(capture);
    capture.owner = "queue-redelivery";
    e.claim(capture);
}

std::string ConsoleFixture::approveRefundOnce()
{
    GuardSettingCommand(*m_store, {"olga", "owner"}, FourEyesSetting, "1000",
                        "four-eyes above 1,000")
        .execute();
    ApproveCommand::Request r;
    r.ns = "default";
    r.key = "run-7002:refund";
    r.decision = ApprovalDecision::Redispatch;
    r.reason = "customer called, refund agreed";
    return ApproveCommand(*m_store, {"carol", "approver"}, r).execute().status;
}

} // namespace idempo::test
