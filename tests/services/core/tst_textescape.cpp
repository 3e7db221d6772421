// SPDX-License-Identifier: Apache-2.0
// The one rule for showing stored text (textescape.h): what it escapes, what it leaves alone,
// and that JSON stays the same value.
#include <nlohmann/json.hpp>

#include <QtTest>

#include "textescape.h"

using namespace idempo;

class TestTextEscape final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void escapedText_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("shown");
        QTest::newRow("plain") << QByteArray("refund approved, C:\\temp")
                               << QByteArray("refund approved, C:\\temp");
        QTest::newRow("printable UTF-8") << QByteArray("café … ✓ 🙂 ключ")
                                         << QByteArray("café … ✓ 🙂 ключ");
        QTest::newRow("line break, tab, CR")
            << QByteArray("a\nb\tc\rd") << QByteArray("a\\nb\\tc\\rd");
        QTest::newRow("ANSI CSI") << QByteArray("x\x1b[2Jy") << QByteArray("x\\x1b[2Jy");
        QTest::newRow("OSC with BEL") << QByteArray("\x1b]0;t\x07") << QByteArray("\\x1b]0;t\\x07");
        QTest::newRow("NUL and DEL") << QByteArray("a\0b\x7f", 4) << QByteArray("a\\x00b\\x7f");
        QTest::newRow("C1 CSI") << QByteArray("a\xc2\x9b"
                                              "2J")
                                << QByteArray("a\\u009b2J");
        QTest::newRow("RLO") << QByteArray("abc\xe2\x80\xae"
                                           "exe")
                             << QByteArray("abc\\u202eexe");
        QTest::newRow("isolates") << QByteArray("\xe2\x81\xa6x\xe2\x81\xa9")
                                  << QByteArray("\\u2066x\\u2069");
        QTest::newRow("zero width space") << QByteArray("a\xe2\x80\x8b"
                                                        "b")
                                          << QByteArray("a\\u200bb");
        QTest::newRow("line separator") << QByteArray("a\xe2\x80\xa8"
                                                      "b")
                                        << QByteArray("a\\u2028b");
        QTest::newRow("BOM") << QByteArray("\xef\xbb\xbfx") << QByteArray("\\ufeffx");
        QTest::newRow("tag character")
            << QByteArray("\xf3\xa0\x80\x81") << QByteArray("\\U000e0001");
        QTest::newRow("invalid byte") << QByteArray("a\xffz") << QByteArray("a\\xffz");
        QTest::newRow("truncated sequence") << QByteArray("a\xe2\x80") << QByteArray("a\\xe2\\x80");
        QTest::newRow("overlong slash") << QByteArray("\xc0\xaf") << QByteArray("\\xc0\\xaf");
        QTest::newRow("encoded surrogate")
            << QByteArray("\xed\xa0\x80") << QByteArray("\\xed\\xa0\\x80");
    }

    void escapedText()
    {
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, shown);
        QCOMPARE(QByteArray::fromStdString(idempo::escapedText(text.toStdString())), shown);
        // Nothing left to escape: applying the rule again changes nothing.
        QCOMPARE(QByteArray::fromStdString(idempo::escapedText(shown.toStdString())), shown);
    }

    void escapedLinesKeepLineBreaks()
    {
        QCOMPARE(QByteArray::fromStdString(escapedLines("one\ntwo\x1b[m\r")),
                 QByteArray("one\ntwo\\x1b[m\\r"));
    }

    void escapedJsonIsTheSameValue_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::newRow("controls") << QByteArray("a\x1b[2J\n\x7f");
        QTest::newRow("bidi and C1") << QByteArray("x\xe2\x80\xae\xc2\x85y");
        QTest::newRow("astral format") << QByteArray("\xf3\xa0\x80\x81 tag");
        QTest::newRow("printable") << QByteArray("café ✓ 🙂");
    }

    void escapedJsonIsTheSameValue()
    {
        QFETCH(QByteArray, value);
        const nlohmann::json document = {{"reason", value.toStdString()}, {"n", 1}};
        const std::string json = escapedJson(document.dump(2));
        QVERIFY(nlohmann::json::parse(json) == document);
        // Unprintable characters are \u escapes; printable non-ASCII stays itself; layout stays.
        QVERIFY(json.find('\x7f') == std::string::npos);
        QVERIFY(json.find("\xe2\x80\xae") == std::string::npos);
        QVERIFY(json.find("\xc2\x85") == std::string::npos);
        QVERIFY(json.find("\xf3\xa0\x80\x81") == std::string::npos);
        QVERIFY(json.find('\n') != std::string::npos);
        if (value == "café ✓ 🙂")
            QVERIFY(json.find("café ✓ 🙂") != std::string::npos);
    }

    void escapedJsonWritesAstralAsASurrogatePair()
    {
        QCOMPARE(QByteArray::fromStdString(escapedJson("\"\xf3\xa0\x80\x81\"")),
                 QByteArray(R"("\udb40\udc01")"));
    }

    void csvField_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("field");
        QTest::newRow("plain") << QByteArray("ok") << QByteArray("ok");
        QTest::newRow("comma") << QByteArray("a,b") << QByteArray("\"a,b\"");
        QTest::newRow("quote") << QByteArray("say \"hi\"") << QByteArray("\"say \"\"hi\"\"\"");
        QTest::newRow("line break") << QByteArray("a\r\nb") << QByteArray("a\\r\\nb");
        QTest::newRow("escape and comma")
            << QByteArray("\x1b[31m,x") << QByteArray("\"\\x1b[31m,x\"");
        QTest::newRow("JSON") << QByteArray(R"({"a":1,"b":"x"})")
                              << QByteArray(R"("{""a"":1,""b"":""x""}")");
    }

    void csvField()
    {
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, field);
        QCOMPARE(QByteArray::fromStdString(idempo::csvField(text.toStdString())), field);
    }

    void unprintableIsTheKeyRule()
    {
        for (const char32_t c : {U'\0', U'\x1f', U'\x7f', U'\x85', U'\x200e', U'\x202e', U'\x2066',
                                 U'\x2028', U'\xfeff', U'\xe0001', U'\xd800'})
            QVERIFY2(isUnprintable(c), qPrintable(QString::number(c, 16)));
        for (const char32_t c :
             {U' ', U'a', U'~', U'\xe9', U'\x2026', U'\x2713', U'\x1f642', U'\x43a'})
            QVERIFY2(!isUnprintable(c), qPrintable(QString::number(c, 16)));
    }
};

QTEST_GUILESS_MAIN(TestTextEscape)
#include "tst_textescape.moc"
