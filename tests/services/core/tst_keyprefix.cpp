// SPDX-License-Identifier: Apache-2.0
#include <QTest>

#include "keyprefix.h"

using namespace idempo;

class KeyPrefixTest final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void upperBound_data()
    {
        QTest::addColumn<QByteArray>("prefix");
        QTest::addColumn<bool>("bounded");
        QTest::addColumn<QByteArray>("upper");
        QTest::newRow("empty") << QByteArray() << false << QByteArray();
        QTest::newRow("ascii") << QByteArray("run-42:") << true << QByteArray("run-42;");
        QTest::newRow("ascii tilde") << QByteArray("a~") << true << QByteArray("a\x7f");
        QTest::newRow("two-byte") << QByteArray("lauf-\xc3\xbc") << true
                                  << QByteArray("lauf-\xc3\xbd");
        // U+00BF + 1 = U+00C0: the byte successor C2 C0 would not be UTF-8.
        QTest::newRow("two-byte carry") << QByteArray("\xc2\xbf") << true << QByteArray("\xc3\x80");
        QTest::newRow("three-byte")
            << QByteArray("\xe6\xad\xa5") << true << QByteArray("\xe6\xad\xa6");
        QTest::newRow("before surrogates")
            << QByteArray("k\xed\x9f\xbf") << true << QByteArray("k\xee\x80\x80");
        QTest::newRow("four-byte")
            << QByteArray("\xf0\x9f\x98\x80") << true << QByteArray("\xf0\x9f\x98\x81");
        QTest::newRow("last code point")
            << QByteArray("a\xf4\x8f\xbf\xbf") << true << QByteArray("b");
        QTest::newRow("only last code point")
            << QByteArray("\xf4\x8f\xbf\xbf") << false << QByteArray();
        QTest::newRow("trailing 0xFF") << QByteArray("ab\xff\xff") << true << QByteArray("ac");
        QTest::newRow("only 0xFF") << QByteArray("\xff\xff") << false << QByteArray();
        QTest::newRow("invalid byte carry") << QByteArray("a\x80") << true << QByteArray("a\x81");
    }

    void upperBound()
    {
        QFETCH(QByteArray, prefix);
        QFETCH(bool, bounded);
        QFETCH(QByteArray, upper);
        const std::optional<std::string> bound = keyPrefixUpperBound(prefix.toStdString());
        QCOMPARE(bound.has_value(), bounded);
        if (bounded)
            QCOMPARE(QByteArray::fromStdString(*bound), upper);
    }

    /// Every continuation of the prefix sorts inside [prefix, bound) in byte order; the
    /// nearest strings outside do not.
    void boundEnclosesContinuations()
    {
        const std::string prefix = "run-7:\xc3\xbc";
        const std::string bound = *keyPrefixUpperBound(prefix);
        for (const std::string tail : {"", "a", "\x7e", "\xf4\x8f\xbf\xbf", "\xc3\xbf\xc3\xbf"}) {
            const std::string key = prefix + tail;
            QVERIFY(key >= prefix);
            QVERIFY2(key < bound, key.c_str());
        }
        QVERIFY(std::string("run-7:\xc3\xbd") >= bound);
        QVERIFY(std::string("run-7:\xc3\xbb\xf4\x8f\xbf\xbf") < prefix);
    }
};

QTEST_GUILESS_MAIN(KeyPrefixTest)
#include "tst_keyprefix.moc"
