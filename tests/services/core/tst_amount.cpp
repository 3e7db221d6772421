// SPDX-License-Identifier: Apache-2.0
#include <QTest>

#include "amount.h"
#include "error.h"

using namespace idempo;

class TestAmount final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void parsesInMinorUnits_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qlonglong>("minor");
        QTest::addColumn<QString>("currency");
        QTest::addColumn<QString>("formatted");
        QTest::newRow("cents") << QStringLiteral("1250.00 EUR") << qlonglong(125000)
                               << QStringLiteral("EUR") << QStringLiteral("1,250.00 EUR");
        QTest::newRow("whole") << QStringLiteral("1250 EUR") << qlonglong(125000)
                               << QStringLiteral("EUR") << QStringLiteral("1,250.00 EUR");
        QTest::newRow("one digit") << QStringLiteral("0.5 USD") << qlonglong(50)
                                   << QStringLiteral("USD") << QStringLiteral("0.50 USD");
        QTest::newRow("yen") << QStringLiteral("1500000 JPY") << qlonglong(1500000)
                             << QStringLiteral("JPY") << QStringLiteral("1,500,000 JPY");
        QTest::newRow("dinar") << QStringLiteral("12.345 KWD") << qlonglong(12345)
                               << QStringLiteral("KWD") << QStringLiteral("12.345 KWD");
        QTest::newRow("zero") << QStringLiteral("0 GBP") << qlonglong(0) << QStringLiteral("GBP")
                              << QStringLiteral("0.00 GBP");
        QTest::newRow("largest") << QStringLiteral("999999999999999.99 EUR")
                                 << qlonglong(99999999999999999) << QStringLiteral("EUR")
                                 << QStringLiteral("999,999,999,999,999.99 EUR");
    }

    void parsesInMinorUnits()
    {
        QFETCH(QString, text);
        QFETCH(qlonglong, minor);
        QFETCH(QString, currency);
        QFETCH(QString, formatted);
        const Amount a = parseAmount(text.toStdString());
        QCOMPARE(a.minorUnits, minor);
        QCOMPARE(QString::fromStdString(a.currency), currency);
        QCOMPARE(QString::fromStdString(formatAmount(a)), formatted);
        QCOMPARE(parseAmount(amountText(a)), a);
    }

    void refusesWhatIsNotAnAmount_data()
    {
        QTest::addColumn<QString>("text");
        for (const char *bad : {"",
                                "EUR",
                                "1250",
                                "1250.00",
                                "1,250.00 EUR",
                                "-5 EUR",
                                "+5 EUR",
                                "1e3 EUR",
                                "1.234 EUR",
                                "1. EUR",
                                ".5 EUR",
                                "12.5 JPY",
                                "1.2345 KWD",
                                "5 eur",
                                "5 EURO",
                                "5  EUR",
                                "5 EUR ",
                                "1000000000000000 EUR",
                                "99999999999999999999 EUR",
                                "0x10 EUR"})
            QTest::newRow(bad) << QString::fromUtf8(bad);
    }

    void refusesWhatIsNotAnAmount()
    {
        QFETCH(QString, text);
        try {
            parseAmount(text.toStdString());
            QFAIL("accepted");
        } catch (const Error &e) {
            QCOMPARE(e.code(), ErrorCode::InvalidArgument);
        }
    }
};

QTEST_GUILESS_MAIN(TestAmount)
#include "tst_amount.moc"
