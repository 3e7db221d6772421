// SPDX-License-Identifier: Apache-2.0
// resources/schema/envelope.schema.json and the engine's envelope parser (QueueEnvelope::fromJson)
// say the same: the members the parser requires are the schema's `required`, and sample envelopes,
// valid and not, get the same verdict from both. The parser is the judge; the schema is read by a
// small evaluator of exactly the keywords the schema uses (any other keyword fails the test, so
// the schema cannot grow past what is checked here).
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include <QFile>
#include <QRegularExpression>
#include <QtTest>

#include "error.h"
#include "queueenvelope.h"

using namespace idempo;

namespace {

nlohmann::json loadSchema()
{
    QFile file(QStringLiteral(IDEMPO_ENVELOPE_SCHEMA));
    if (!file.open(QIODevice::ReadOnly))
        return nullptr;
    return nlohmann::json::parse(file.readAll().toStdString(), nullptr, false);
}

const std::set<std::string> &understoodKeywords()
{
    static const std::set<std::string> keywords{
        "$schema",   "title",     "description", "type",    "required", "properties",
        "minLength", "maxLength", "minimum",     "maximum", "pattern"};
    return keywords;
}

/// JSON Schema's "integer": any number whose fractional part is zero.
bool isInteger(const nlohmann::json &v)
{
    return v.is_number_integer() ||
           (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
}

bool hasType(const nlohmann::json &v, const std::string &type)
{
    if (type == "object")
        return v.is_object();
    if (type == "array")
        return v.is_array();
    if (type == "string")
        return v.is_string();
    if (type == "number")
        return v.is_number();
    if (type == "integer")
        return isInteger(v);
    if (type == "boolean")
        return v.is_boolean();
    return type == "null" && v.is_null();
}

static_assert(std::numeric_limits<long double>::digits >= 64,
              "numberOf() must hold every 64-bit integer exactly");

/// A JSON number as a long double: exact for every 64-bit integer.
long double numberOf(const nlohmann::json &v)
{
    if (v.is_number_unsigned())
        return static_cast<long double>(v.get<std::uint64_t>());
    if (v.is_number_integer())
        return static_cast<long double>(v.get<std::int64_t>());
    return static_cast<long double>(v.get<double>());
}

/// The schema's verdict on `v`; `why` says what failed.
bool schemaAccepts(const nlohmann::json &schema, const nlohmann::json &v, std::string &why)
{
    for (const auto &[keyword, value] : schema.items()) {
        if (keyword == "type" && !hasType(v, value.get<std::string>())) {
            why = "type " + value.get<std::string>();
            return false;
        }
        if (keyword == "required" && v.is_object()) {
            for (const nlohmann::json &name : value)
                if (!v.contains(name.get<std::string>())) {
                    why = "required " + name.get<std::string>();
                    return false;
                }
        }
        if (keyword == "properties" && v.is_object()) {
            for (const auto &[name, sub] : value.items())
                if (v.contains(name) && !schemaAccepts(sub, v.at(name), why)) {
                    why = name + ": " + why;
                    return false;
                }
        }
        if (v.is_string()) {
            const QString text = QString::fromStdString(v.get<std::string>());
            const auto codePoints = static_cast<std::int64_t>(text.toUcs4().size());
            if ((keyword == "minLength" && codePoints < value.get<std::int64_t>()) ||
                (keyword == "maxLength" && codePoints > value.get<std::int64_t>())) {
                why = keyword;
                return false;
            }
            if (keyword == "pattern") {
                const QRegularExpression re(QString::fromStdString(value.get<std::string>()),
                                            QRegularExpression::UseUnicodePropertiesOption);
                const QRegularExpressionMatch m = re.match(text);
                // ECMA-262's `$` matches only at the very end, never before a final newline.
                const bool endAnchored = value.get<std::string>().ends_with("$");
                if (!m.hasMatch() || (endAnchored && m.capturedEnd() != text.size())) {
                    why = "pattern";
                    return false;
                }
            }
        }
        if (v.is_number() && ((keyword == "minimum" && numberOf(v) < numberOf(value)) ||
                              (keyword == "maximum" && numberOf(v) > numberOf(value)))) {
            why = keyword;
            return false;
        }
    }
    return true;
}

/// The parser's verdict on `v`; `why` is its message.
bool parserAccepts(const nlohmann::json &v, std::string &why)
{
    try {
        QueueEnvelope::fromJson(v);
        return true;
    } catch (const Error &e) {
        why = e.what();
        return false;
    }
}

nlohmann::json validWire()
{
    return {{"run_id", "run-42"},
            {"step_id", "provision_account"},
            {"source_agent", "planner"},
            {"target_agent", "provisioner"},
            {"payload", {{"customer", "c-7"}}},
            {"produced_at", 1'700'000'000'123},
            {"idempotency_key", "run-42:provision_account"}};
}

nlohmann::json with(const char *member, const nlohmann::json &value)
{
    nlohmann::json wire = validWire();
    wire[member] = value;
    return wire;
}

} // namespace

class TestEnvelopeSchema final : public QObject
{
    Q_OBJECT

private:
    nlohmann::json m_schema;

private Q_SLOTS:
    void initTestCase()
    {
        m_schema = loadSchema();
        QVERIFY2(m_schema.is_object(),
                 "resources/schema/envelope.schema.json is missing or not JSON");
    }

    void schemaIsDraft202012AndUsesOnlyCheckedKeywords()
    {
        QCOMPARE(m_schema.at("$schema").get<std::string>(),
                 std::string("https://json-schema.org/draft/2020-12/schema"));
        QCOMPARE(m_schema.at("type").get<std::string>(), std::string("object"));
        const std::function<void(const nlohmann::json &, const std::string &)> walk =
            [&](const nlohmann::json &s, const std::string &at) {
                for (const auto &[keyword, value] : s.items()) {
                    QVERIFY2(understoodKeywords().count(keyword),
                             (at + ": keyword " + keyword + " is not checked here").c_str());
                    if (keyword == "properties")
                        for (const auto &[name, sub] : value.items()) {
                            QVERIFY2(sub.contains("description"),
                                     (at + "/" + name + " has no description").c_str());
                            walk(sub, at + "/" + name);
                        }
                }
            };
        walk(m_schema, "#");
    }

    /// Every member the parser requires (it refuses the envelope without it) is `required` in
    /// the schema, and the schema requires nothing the parser does without.
    void requiredMembersAgree()
    {
        std::set<std::string> parserRequires;
        const nlohmann::json example = validWire();
        for (const auto &[member, value] : example.items()) {
            nlohmann::json wire = validWire();
            wire.erase(member);
            std::string why;
            if (!parserAccepts(wire, why))
                parserRequires.insert(member);
        }
        const auto listed = m_schema.at("required").get<std::vector<std::string>>();
        QCOMPARE(std::set<std::string>(listed.begin(), listed.end()), parserRequires);
        for (const std::string &member : parserRequires)
            QVERIFY2(m_schema.at("properties").contains(member), member.c_str());
        QCOMPARE(m_schema.at("properties").size(), validWire().size());
    }

    void samplesGetTheSameVerdict_data()
    {
        QTest::addColumn<QByteArray>("envelope");
        QTest::addColumn<bool>("valid");
        const auto row = [](const char *name, const nlohmann::json &v, bool valid) {
            QTest::newRow(name) << QByteArray::fromStdString(v.dump()) << valid;
        };
        row("the example", validWire(), true);
        row("extra members", with("trace_id", "t-1"), true);
        row("payload null", with("payload", nullptr), true);
        row("payload array", with("payload", nlohmann::json::array({1, 2})), true);
        row("payload text", with("payload", "refund"), true);
        row("empty agents", with("source_agent", ""), true);
        row("produced_at 0", with("produced_at", 0), true);
        row("produced_at 1000.0",
            nlohmann::json::parse(
                R"({"run_id":"r","step_id":"s","source_agent":"","target_agent":"","payload":{},"produced_at":1000.0,"idempotency_key":"r:s"})"),
            true);
        row("produced_at 1e3",
            nlohmann::json::parse(
                R"({"run_id":"r","step_id":"s","source_agent":"","target_agent":"","payload":{},"produced_at":1e3,"idempotency_key":"r:s"})"),
            true);
        row("produced_at INT64_MAX", with("produced_at", std::numeric_limits<std::int64_t>::max()),
            true);
        row("key with letters beyond ASCII", with("idempotency_key", "run-42:prøve:Zürich"), true);
        row("key of 255 bytes", with("idempotency_key", std::string(255, 'k')), true);
        row("key with inner spaces", with("idempotency_key", "run 42:refund"), true);

        row("an array", nlohmann::json::array(), false);
        row("a string", "run-42", false);
        row("null", nullptr, false);
        const nlohmann::json example = validWire();
        for (const auto &[member, value] : example.items()) {
            nlohmann::json missing = validWire();
            missing.erase(member);
            row(("no " + member).c_str(), missing, false);
        }
        for (const char *member :
             {"run_id", "step_id", "source_agent", "target_agent", "idempotency_key"}) {
            row((std::string(member) + " as number").c_str(), with(member, 7), false);
            row((std::string(member) + " null").c_str(), with(member, nullptr), false);
            row((std::string(member) + " as object").c_str(),
                with(member, nlohmann::json::object()), false);
        }
        row("empty run_id", with("run_id", ""), false);
        row("empty step_id", with("step_id", ""), false);
        row("produced_at negative", with("produced_at", -1), false);
        row("produced_at -0.5", with("produced_at", -0.5), false);
        row("produced_at fractional", with("produced_at", 1.5), false);
        row("produced_at as text", with("produced_at", "2026-01-01"), false);
        row("produced_at boolean", with("produced_at", true), false);
        row("produced_at beyond INT64_MAX",
            with("produced_at", std::uint64_t(9223372036854775808ULL)), false);
        row("produced_at 1e19",
            nlohmann::json::parse(
                R"({"run_id":"r","step_id":"s","source_agent":"","target_agent":"","payload":{},"produced_at":1e19,"idempotency_key":"r:s"})"),
            false);
        row("empty key", with("idempotency_key", ""), false);
        row("key with leading space", with("idempotency_key", " run-42"), false);
        row("key with trailing space", with("idempotency_key", "run-42 "), false);
        row("key with trailing no-break space", with("idempotency_key", "run-42\u00a0"), false);
        row("key with trailing newline", with("idempotency_key", "run-42\n"), false);
        row("key with a tab inside", with("idempotency_key", "run\t42"), false);
        row("key with a control character", with("idempotency_key", "run-42:\u0007"), false);
        row("key with a zero-width space", with("idempotency_key", "run\u200b42"), false);
        row("key with a line separator", with("idempotency_key", "run\u202842"), false);
        row("key with an unassigned code point", with("idempotency_key", "run\U000e0fff"), false);
        row("key of 256 ASCII bytes", with("idempotency_key", std::string(256, 'k')), false);
    }
    void samplesGetTheSameVerdict()
    {
        QFETCH(QByteArray, envelope);
        QFETCH(bool, valid);
        const nlohmann::json v = nlohmann::json::parse(envelope.toStdString());
        std::string parserWhy;
        std::string schemaWhy;
        const bool parser = parserAccepts(v, parserWhy);
        const bool schema = schemaAccepts(m_schema, v, schemaWhy);
        QVERIFY2(parser == valid, ("parser: " + parserWhy).c_str());
        QVERIFY2(schema == parser,
                 ("schema says " + std::string(schema ? "valid" : "invalid (" + schemaWhy + ")") +
                  ", parser says " + (parser ? "valid" : "invalid (" + parserWhy + ")"))
                     .c_str());
    }
};

QTEST_GUILESS_MAIN(TestEnvelopeSchema)
#include "tst_envelopeschema.moc"
