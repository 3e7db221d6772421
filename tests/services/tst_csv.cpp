// SPDX-License-Identifier: Apache-2.0
// The one CSV field writer of the CLI's and the console's exports (RFC 4180).
#include "csv.h"

#include <QtTest>

using namespace idempo;

class TestCsv final : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void quotesWhatWouldBreakARecord_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("field");
        QTest::newRow("plain") << QStringLiteral("approve") << QStringLiteral("approve");
        QTest::newRow("empty") << QString() << QString();
        QTest::newRow("comma") << QStringLiteral("a,b") << QStringLiteral("\"a,b\"");
        QTest::newRow("quote") << QStringLiteral("say \"no\"")
                               << QStringLiteral("\"say \"\"no\"\"\"");
        QTest::newRow("line feed") << QStringLiteral("one\ntwo") << QStringLiteral("\"one\ntwo\"");
        QTest::newRow("carriage return")
            << QStringLiteral("one\rtwo") << QStringLiteral("\"one\rtwo\"");
        QTest::newRow("crlf") << QStringLiteral("one\r\ntwo") << QStringLiteral("\"one\r\ntwo\"");
        QTest::newRow("non-ascii")
            << QStringLiteral("Überweisung €") << QStringLiteral("Überweisung €");
        QTest::newRow("spaces kept") << QStringLiteral(" padded ") << QStringLiteral(" padded ");
    }

    void quotesWhatWouldBreakARecord()
    {
        QFETCH(QString, text);
        QFETCH(QString, field);
        QCOMPARE(csvField(text), field);
        QCOMPARE(QString::fromStdString(csvField(text.toStdString())), field);
    }
};

QTEST_GUILESS_MAIN(TestCsv)
#include "tst_csv.moc"
