// SPDX-License-Identifier: Apache-2.0
#include <bit>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTest>

#include "canonicaljson.h"
#include "error.h"

using nlohmann::json;

namespace {

json parse(const QByteArray &text)
{
    return idempo::parseStrictJson(std::string_view(text.constData(), size_t(text.size())));
}

QByteArray canonical(const json &value)
{
    return QByteArray::fromStdString(idempo::canonicalJson(value));
}

std::vector<std::string> toPointers(const QStringList &list)
{
    std::vector<std::string> pointers;
    for (const QString &p : list)
        pointers.push_back(p.toStdString());
    return pointers;
}

QByteArray readFile(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

} // namespace

/// RFC 8785 canonical form, strict parsing, projection and the payload fingerprint.
class TestCanonicalJson final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void rfc8785Vectors_data();
    void rfc8785Vectors();
    void numbers_data();
    void numbers();
    void canonicalText_data();
    void canonicalText();
    void fingerprintEquality_data();
    void fingerprintEquality();
    void projection_data();
    void projection();
    void projectionIgnoresVolatileFields();
    void malformedPointer_data();
    void malformedPointer();
    void strictRefusals_data();
    void strictRefusals();
    void nonFiniteNotCanonical_data();
    void nonFiniteNotCanonical();
    void knownFingerprint();
};

void TestCanonicalJson::rfc8785Vectors_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QByteArray>("expected");
    const QString vectors = QFINDTESTDATA("../testdata/rfc8785");
    QVERIFY2(!vectors.isEmpty(), "tests/testdata/rfc8785 not found");
    const QDir dir(vectors);
    const QStringList names = QDir(dir.filePath(QStringLiteral("input")))
                                  .entryList({QStringLiteral("*.json")}, QDir::Files, QDir::Name);
    QVERIFY2(!names.isEmpty(), "no RFC 8785 test vectors found");
    for (const QString &name : names) {
        const QByteArray expected = readFile(dir.filePath(QStringLiteral("output/") + name));
        QVERIFY2(!expected.isEmpty(), qPrintable(QStringLiteral("missing output for ") + name));
        QTest::newRow(qPrintable(name))
            << readFile(dir.filePath(QStringLiteral("input/") + name)) << expected;
    }
}

void TestCanonicalJson::rfc8785Vectors()
{
    QFETCH(QByteArray, input);
    QFETCH(QByteArray, expected);
    QCOMPARE(canonical(parse(input)), expected);
}

void TestCanonicalJson::numbers_data()
{
    QTest::addColumn<double>("value");
    QTest::addColumn<QByteArray>("expected");

    const QString numbers = QFINDTESTDATA("../testdata/rfc8785/numbers.csv");
    QVERIFY2(!numbers.isEmpty(), "tests/testdata/rfc8785/numbers.csv not found");
    const QByteArray csv = readFile(numbers);
    const QList<QByteArray> lines = csv.trimmed().split('\n');
    QVERIFY2(lines.size() > 1, "numbers.csv is missing or empty");
    for (qsizetype i = 1; i < lines.size(); ++i) { // line 0 is the header
        const QList<QByteArray> fields = lines.at(i).trimmed().split(',');
        QVERIFY2(fields.size() == 2, lines.at(i).constData());
        bool ok = false;
        const quint64 bits = fields.at(0).toULongLong(&ok, 16);
        QVERIFY2(ok, lines.at(i).constData());
        QTest::newRow(QByteArray("csv " + fields.at(0)).constData())
            << std::bit_cast<double>(bits) << fields.at(1);
    }

    QTest::newRow("0") << 0.0 << QByteArray("0");
    QTest::newRow("-0") << -0.0 << QByteArray("0");
    QTest::newRow("1e21") << 1e21 << QByteArray("1e+21");
    QTest::newRow("1e-7") << 1e-7 << QByteArray("1e-7");
    QTest::newRow("1e-6") << 1e-6 << QByteArray("0.000001");
    QTest::newRow("largest plain")
        << 123456789012345680000.0 << QByteArray("123456789012345680000");
    QTest::newRow("min subnormal") << 5e-324 << QByteArray("5e-324");
    QTest::newRow("max double") << 1.7976931348623157e308 << QByteArray("1.7976931348623157e+308");
    QTest::newRow("0.1") << 0.1 << QByteArray("0.1");
    QTest::newRow("-1.5") << -1.5 << QByteArray("-1.5");
    QTest::newRow("100") << 100.0 << QByteArray("100");
    QTest::newRow("1e2") << 1e2 << QByteArray("100");
    QTest::newRow("-1e-30") << -1e-30 << QByteArray("-1e-30");
    QTest::newRow("1.5e300") << 1.5e300 << QByteArray("1.5e+300");
    QTest::newRow("2^53") << 9007199254740992.0 << QByteArray("9007199254740992");
}

void TestCanonicalJson::numbers()
{
    QFETCH(double, value);
    QFETCH(QByteArray, expected);
    QCOMPARE(canonical(json(value)), expected);
}

void TestCanonicalJson::canonicalText_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QByteArray>("expected");

    QTest::newRow("literal 1e2") << QByteArray("1e2") << QByteArray("100");
    QTest::newRow("literal -0") << QByteArray("-0") << QByteArray("0");
    QTest::newRow("literal -0.0") << QByteArray("-0.0") << QByteArray("0");
    QTest::newRow("literal 1E21") << QByteArray("1E21") << QByteArray("1e+21");
    QTest::newRow("2^53 accepted")
        << QByteArray("9007199254740992") << QByteArray("9007199254740992");
    QTest::newRow("-2^53 accepted")
        << QByteArray("-9007199254740992") << QByteArray("-9007199254740992");
    QTest::newRow("2^64 accepted")
        << QByteArray("18446744073709551616") << QByteArray("18446744073709552000");
    QTest::newRow("fraction rounds")
        << QByteArray("9007199254740993.0") << QByteArray("9007199254740992");
    QTest::newRow("whitespace") << QByteArray(" \t\r\n[ 1 , { \"a\" : true } ]\n")
                                << QByteArray("[1,{\"a\":true}]");
    QTest::newRow("escapes") << QByteArray(R"("\u0000\u001F\b\f\n\r\t\"\\\/\u007f\u00e9")")
                             << QByteArray(
                                    "\"\\u0000\\u001f\\b\\f\\n\\r\\t\\\"\\\\/\x7f\xc3\xa9\"");
    QTest::newRow("nested sort") << QByteArray(R"({"b":{"z":1,"y":[{"d":0,"c":0}]},"a":null})")
                                 << QByteArray(R"({"a":null,"b":{"y":[{"c":0,"d":0}],"z":1}})");
    QTest::newRow("utf-16 order") << QByteArray(R"({"\ue000":1,"\ud800\udc00":2})")
                                  << QByteArray("{\"\xf0\x90\x80\x80\":2,\"\xee\x80\x80\":1}");
    QTest::newRow("empty containers") << QByteArray("[{},[]]") << QByteArray("[{},[]]");
}

void TestCanonicalJson::canonicalText()
{
    QFETCH(QByteArray, input);
    QFETCH(QByteArray, expected);
    QCOMPARE(canonical(parse(input)), expected);
}

void TestCanonicalJson::fingerprintEquality_data()
{
    QTest::addColumn<QByteArray>("left");
    QTest::addColumn<QByteArray>("right");
    QTest::addColumn<bool>("same");

    QTest::newRow("key order") << QByteArray(R"({"a":1,"b":2})") << QByteArray(R"({"b":2,"a":1})")
                               << true;
    QTest::newRow("nested key order")
        << QByteArray(R"({"o":{"x":[1,{"p":1,"q":2}],"y":"s"},"n":0})")
        << QByteArray(R"({"n":0,"o":{"y":"s","x":[1,{"q":2,"p":1}]}})") << true;
    QTest::newRow("whitespace") << QByteArray(R"({"a":[1,2]})")
                                << QByteArray("{ \"a\" : [ 1 , 2 ] }\n") << true;
    QTest::newRow("number spelling")
        << QByteArray("[1.0,100,0.5]") << QByteArray("[1,1e2,5E-1]") << true;
    QTest::newRow("array order") << QByteArray("[1,2]") << QByteArray("[2,1]") << false;
    QTest::newRow("nested array order")
        << QByteArray(R"({"a":{"b":[1,2]}})") << QByteArray(R"({"a":{"b":[2,1]}})") << false;
    QTest::newRow("value change") << QByteArray(R"({"a":1})") << QByteArray(R"({"a":2})") << false;
    QTest::newRow("string vs number")
        << QByteArray(R"({"a":1})") << QByteArray(R"({"a":"1"})") << false;
}

void TestCanonicalJson::fingerprintEquality()
{
    QFETCH(QByteArray, left);
    QFETCH(QByteArray, right);
    QFETCH(bool, same);
    QCOMPARE(idempo::payloadFingerprint(parse(left)) == idempo::payloadFingerprint(parse(right)),
             same);
}

void TestCanonicalJson::projection_data()
{
    QTest::addColumn<QByteArray>("payload");
    QTest::addColumn<QStringList>("pointers");
    QTest::addColumn<QByteArray>("expected");

    const QByteArray payment =
        R"({"amount":5,"currency":"EUR","ts":"2024-01-01T00:00:00Z","meta":{"trace":"t1"}})";
    QTest::newRow("no pointers") << payment << QStringList() << canonical(parse(payment));
    QTest::newRow("fields") << payment
                            << QStringList{QStringLiteral("/currency"), QStringLiteral("/amount")}
                            << QByteArray(R"({"/amount":5,"/currency":"EUR"})");
    QTest::newRow("missing left out")
        << payment << QStringList{QStringLiteral("/amount"), QStringLiteral("/nope")}
        << QByteArray(R"({"/amount":5})");
    QTest::newRow("nothing selected")
        << payment << QStringList{QStringLiteral("/nope")} << QByteArray("{}");
    QTest::newRow("nested") << payment << QStringList{QStringLiteral("/meta/trace")}
                            << QByteArray(R"({"/meta/trace":"t1"})");
    QTest::newRow("whole document")
        << QByteArray("[1]") << QStringList{QString()} << QByteArray(R"({"":[1]})");
    QTest::newRow("~1 and ~0") << QByteArray(R"({"a/b":1,"m~n":2,"x":3})")
                               << QStringList{QStringLiteral("/a~1b"), QStringLiteral("/m~0n")}
                               << QByteArray(R"({"/a~1b":1,"/m~0n":2})");
    const QByteArray items = R"({"items":[{"sku":"x"},{"sku":"y"}],"n":1})";
    QTest::newRow("array index") << items << QStringList{QStringLiteral("/items/1/sku")}
                                 << QByteArray(R"({"/items/1/sku":"y"})");
    QTest::newRow("index out of range")
        << items << QStringList{QStringLiteral("/items/2")} << QByteArray("{}");
    QTest::newRow("index '-'") << items << QStringList{QStringLiteral("/items/-")}
                               << QByteArray("{}");
    QTest::newRow("index leading zero")
        << items << QStringList{QStringLiteral("/items/01")} << QByteArray("{}");
    QTest::newRow("index not a number")
        << items << QStringList{QStringLiteral("/items/sku")} << QByteArray("{}");
    QTest::newRow("index huge") << items
                                << QStringList{QStringLiteral("/items/99999999999999999999999")}
                                << QByteArray("{}");
    QTest::newRow("through a scalar")
        << items << QStringList{QStringLiteral("/n/x")} << QByteArray("{}");
}

void TestCanonicalJson::projection()
{
    QFETCH(QByteArray, payload);
    QFETCH(QStringList, pointers);
    QFETCH(QByteArray, expected);
    QCOMPARE(canonical(idempo::projectJson(parse(payload), toPointers(pointers))), expected);
}

void TestCanonicalJson::projectionIgnoresVolatileFields()
{
    const std::vector<std::string> pointers{"/amount", "/customer/id"};
    const auto fingerprint = [&](const char *text) {
        return idempo::payloadFingerprint(parse(QByteArray(text)), pointers);
    };
    const std::string base = fingerprint(R"({"amount":5,"customer":{"id":7,"name":"A"},"ts":1})");
    QCOMPARE(fingerprint(R"({"ts":2,"customer":{"name":"B","id":7},"amount":5,"nonce":"z"})"),
             base);
    QVERIFY(fingerprint(R"({"amount":6,"customer":{"id":7,"name":"A"},"ts":1})") != base);
    QVERIFY(fingerprint(R"({"amount":5,"customer":{"id":8,"name":"A"},"ts":1})") != base);
    // A selected field that goes missing changes the fingerprint too.
    QVERIFY(fingerprint(R"({"customer":{"id":7,"name":"A"},"ts":1})") != base);
}

void TestCanonicalJson::malformedPointer_data()
{
    QTest::addColumn<QString>("pointer");
    QTest::newRow("no leading slash") << QStringLiteral("amount");
    QTest::newRow("bad escape") << QStringLiteral("/a~2");
    QTest::newRow("trailing tilde") << QStringLiteral("/a~");
}

void TestCanonicalJson::malformedPointer()
{
    QFETCH(QString, pointer);
    try {
        idempo::projectJson(parse(R"({"amount":1})"), {pointer.toStdString()});
        QFAIL("malformed pointer accepted");
    } catch (const idempo::Error &e) {
        QCOMPARE(e.code(), idempo::ErrorCode::InvalidArgument);
        QVERIFY2(QByteArray(e.what()).contains(pointer.toUtf8()), e.what());
    }
}

void TestCanonicalJson::strictRefusals_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QByteArray>("mention");

    QTest::newRow("duplicate key")
        << QByteArray(R"({"a":1,"a":2})") << QByteArray(R"(duplicate member name "a" at byte 7)");
    QTest::newRow("nested duplicate") << QByteArray("{\"x\": {\"k\":1,\n \"k\":[2]}}")
                                      << QByteArray(R"(duplicate member name "k" at byte 15)");
    QTest::newRow("escaped duplicate")
        << QByteArray(R"({"a":1,"\u0061":2})") << QByteArray(R"("a")");
    QTest::newRow("duplicate control name")
        << QByteArray(R"({"\n":1,"\n":2})") << QByteArray(R"("\n")");
    QTest::newRow("invalid UTF-8") << QByteArray("\"\xff\"") << QByteArray("UTF-8");
    QTest::newRow("overlong UTF-8") << QByteArray("\"\xc0\x80\"") << QByteArray("UTF-8");
    QTest::newRow("encoded surrogate") << QByteArray("\"\xed\xa0\x80\"") << QByteArray("UTF-8");
    QTest::newRow("lone high surrogate") << QByteArray(R"("\ud800")") << QByteArray("surrogate");
    QTest::newRow("lone low surrogate") << QByteArray(R"(["\udc00"])") << QByteArray("surrogate");
    QTest::newRow("raw control char") << QByteArray("\"a\x01\"") << QByteArray("control character");
    QTest::newRow("1e400") << QByteArray("[1e400]")
                           << QByteArray("number 1e400 at byte 1 is not finite");
    QTest::newRow("-1e400") << QByteArray("-1e400")
                            << QByteArray("number -1e400 at byte 0 is not finite");
    QTest::newRow("2^53+1") << QByteArray(R"({"id": 9007199254740993})")
                            << QByteArray("integer 9007199254740993 at byte 7");
    QTest::newRow("-(2^53+1)") << QByteArray("[-9007199254740993]")
                               << QByteArray("-9007199254740993");
    QTest::newRow("uint64 max") << QByteArray("18446744073709551615")
                                << QByteArray("18446744073709551615");
    QTest::newRow("beyond uint64") << QByteArray("[0, 18446744073709551617]")
                                   << QByteArray("integer 18446744073709551617 at byte 4");
    QTest::newRow("huge integer") << QByteArray("123456789012345680000")
                                  << QByteArray("send it as a string");
    QTest::newRow("trailing garbage") << QByteArray("[1] x") << QByteArray("end of input");
    QTest::newRow("second value") << QByteArray("{} {}") << QByteArray("end of input");
    QTest::newRow("NUL after value") << QByteArray("[1]\0", 4) << QByteArray("NUL byte");
    QTest::newRow("NUL in string")
        << QByteArray("\"a\0\"", 4) << QByteArray("at byte 2: unescaped NUL");
    QTest::newRow("empty text") << QByteArray() << QByteArray("end of input");
    QTest::newRow("only whitespace") << QByteArray(" \n") << QByteArray("end of input");
    QTest::newRow("trailing comma") << QByteArray(R"({"a":1,})") << QByteArray("at byte 7");
    QTest::newRow("NaN literal") << QByteArray("NaN") << QByteArray("invalid literal");
    QTest::newRow("leading zero") << QByteArray("01") << QByteArray("at byte 1");
    QTest::newRow("too deep") << QByteArray(600, '[') + QByteArray(600, ']')
                              << QByteArray("nesting deeper than");
}

void TestCanonicalJson::strictRefusals()
{
    QFETCH(QByteArray, input);
    QFETCH(QByteArray, mention);
    try {
        parse(input);
        QFAIL("strict parse accepted the input");
    } catch (const idempo::Error &e) {
        const QByteArray message(e.what());
        QCOMPARE(e.code(), idempo::ErrorCode::InvalidJson);
        QVERIFY2(message.contains(mention), message.constData());
        QVERIFY2(!message.contains('\n') && !message.contains('\r'), message.constData());
        QVERIFY2(QString::fromUtf8(message).toUtf8() == message, "message is not valid UTF-8");
    }
}

void TestCanonicalJson::nonFiniteNotCanonical_data()
{
    QTest::addColumn<double>("value");
    QTest::newRow("NaN") << std::numeric_limits<double>::quiet_NaN();
    QTest::newRow("+inf") << std::numeric_limits<double>::infinity();
    QTest::newRow("-inf") << -std::numeric_limits<double>::infinity();
}

void TestCanonicalJson::nonFiniteNotCanonical()
{
    QFETCH(double, value);
    try {
        idempo::canonicalJson(json::array({1, value}));
        QFAIL("non-finite number canonicalised");
    } catch (const idempo::Error &e) {
        QCOMPARE(e.code(), idempo::ErrorCode::InvalidJson);
        QVERIFY2(QByteArray(e.what()).contains("not finite"), e.what());
    }
}

void TestCanonicalJson::knownFingerprint()
{
    const std::string fingerprint = idempo::payloadFingerprint(parse(R"({"b":1,"a":"x"})"));
    const QByteArray expected = QCryptographicHash::hash(QByteArrayLiteral(R"({"a":"x","b":1})"),
                                                         QCryptographicHash::Sha256)
                                    .toHex();
    QCOMPARE(QByteArray::fromStdString(fingerprint), expected);
    static const QRegularExpression lowerHex(QStringLiteral("^[0-9a-f]{64}$"));
    QVERIFY(lowerHex.match(QString::fromStdString(fingerprint)).hasMatch());
    // Integers held as such by nlohmann hash like the doubles they equal.
    QCOMPARE(idempo::payloadFingerprint(json{{"a", "x"}, {"b", 1.0}}), fingerprint);
    QCOMPARE(idempo::payloadFingerprint(json{{"a", "x"}, {"b", 1u}}), fingerprint);
}

QTEST_GUILESS_MAIN(TestCanonicalJson)
#include "tst_canonicaljson.moc"
