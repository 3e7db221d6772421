// SPDX-License-Identifier: Apache-2.0
// QueueEnvelope: the wire form of a step's message and the checks on both directions.
#include <QtTest>

#include "error.h"
#include "queueenvelope.h"

using namespace idempo;

namespace {

nlohmann::json validWire()
{
    return {{"run_id", "run-42"},
            {"step_id", "provision_account"},
            {"source_agent", "planner"},
            {"target_agent", "provisioner"},
            {"payload", {{"customer", "c-7"}, {"plan", "gold"}}},
            {"produced_at", 1'700'000'000'123},
            {"idempotency_key", "run-42:provision_account"}};
}

ErrorCode errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.code();
    }
    return ErrorCode::Internal;
}

} // namespace

class TestQueueEnvelope final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundTrip()
    {
        const QueueEnvelope e = QueueEnvelope::fromJson(validWire());
        QCOMPARE(e.runId, std::string("run-42"));
        QCOMPARE(e.stepId, std::string("provision_account"));
        QCOMPARE(e.sourceAgent, std::string("planner"));
        QCOMPARE(e.targetAgent, std::string("provisioner"));
        QCOMPARE(e.payload["plan"], nlohmann::json("gold"));
        QCOMPARE(e.producedAtMs, std::int64_t(1'700'000'000'123));
        QCOMPARE(e.idempotencyKey, std::string("run-42:provision_account"));
        QCOMPARE(e.toJson(), validWire());
    }

    void unknownMembersAreIgnored()
    {
        nlohmann::json wire = validWire();
        wire["trace_id"] = "abc";
        QCOMPARE(QueueEnvelope::fromJson(wire).toJson(), validWire());
    }

    void refusedWireForms_data()
    {
        QTest::addColumn<QByteArray>("member");
        QTest::addColumn<QByteArray>("valueJson"); ///< empty: the member is removed
        QTest::addColumn<int>("code");
        const int arg = int(ErrorCode::InvalidArgument);
        const int key = int(ErrorCode::InvalidKey);
        QTest::newRow("no run_id") << QByteArray("run_id") << QByteArray() << arg;
        QTest::newRow("empty run_id") << QByteArray("run_id") << QByteArray(R"("")") << arg;
        QTest::newRow("numeric step_id") << QByteArray("step_id") << QByteArray("7") << arg;
        QTest::newRow("empty step_id") << QByteArray("step_id") << QByteArray(R"("")") << arg;
        QTest::newRow("no source_agent") << QByteArray("source_agent") << QByteArray() << arg;
        QTest::newRow("null target_agent")
            << QByteArray("target_agent") << QByteArray("null") << arg;
        QTest::newRow("no payload") << QByteArray("payload") << QByteArray() << arg;
        QTest::newRow("produced_at as text")
            << QByteArray("produced_at") << QByteArray(R"("2026-01-01")") << arg;
        QTest::newRow("produced_at fractional")
            << QByteArray("produced_at") << QByteArray("1.5") << arg;
        QTest::newRow("produced_at negative")
            << QByteArray("produced_at") << QByteArray("-1") << arg;
        QTest::newRow("no idempotency_key") << QByteArray("idempotency_key") << QByteArray() << arg;
        QTest::newRow("empty idempotency_key")
            << QByteArray("idempotency_key") << QByteArray(R"("")") << key;
        QTest::newRow("key with control character")
            << QByteArray("idempotency_key") << QByteArray(R"("run-42:\u0007")") << key;
        QTest::newRow("key with trailing space")
            << QByteArray("idempotency_key") << QByteArray(R"("run-42 ")") << key;
        QTest::newRow("key of 256 bytes")
            << QByteArray("idempotency_key") << ("\"" + QByteArray(256, 'k') + "\"") << key;
    }

    void refusedWireForms()
    {
        QFETCH(QByteArray, member);
        QFETCH(QByteArray, valueJson);
        QFETCH(int, code);
        nlohmann::json wire = validWire();
        if (valueJson.isEmpty())
            wire.erase(member.toStdString());
        else
            wire[member.toStdString()] = nlohmann::json::parse(valueJson.toStdString());
        QCOMPARE(errorOf([&] { QueueEnvelope::fromJson(wire); }), ErrorCode(code));
    }

    void notAnObjectIsRefused()
    {
        QCOMPARE(errorOf([] { QueueEnvelope::fromJson(nlohmann::json::array()); }),
                 ErrorCode::InvalidArgument);
    }

    void toJsonRefusesWhatFromJsonWould()
    {
        QueueEnvelope e = QueueEnvelope::fromJson(validWire());
        e.idempotencyKey.clear();
        QCOMPARE(errorOf([&] { (void)e.toJson(); }), ErrorCode::InvalidKey);
        e = QueueEnvelope::fromJson(validWire());
        e.runId.clear();
        QCOMPARE(errorOf([&] { (void)e.toJson(); }), ErrorCode::InvalidArgument);
    }
};

QTEST_GUILESS_MAIN(TestQueueEnvelope)
#include "tst_queueenvelope.moc"
