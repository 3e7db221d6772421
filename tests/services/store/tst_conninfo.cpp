// SPDX-License-Identifier: Apache-2.0
// The non-secret form of a ledger address, from libpq's own parse: every spelling of a password
// (URI user info, query parameters in any case and percent-encoding, keywords, sslpassword)
// is gone, what libpq cannot parse shows only its scheme, and what remains is a connection
// string libpq reads as the original without its secrets.
#include <map>
#include <memory>

#include <libpq-fe.h>

#include <QTest>

#include "conninfo.h"
#include "error.h"
#include "ledgerfactory.h"
#include "pgconnection.h"

using namespace idempo;

namespace {

using Fields = std::map<std::string, std::string>;

/// The fields libpq's parse sets, secret ones left out; nullopt when it cannot parse.
std::optional<Fields> nonSecretFields(const std::string &conninfo)
{
    char *error = nullptr;
    const std::unique_ptr<PQconninfoOption, void (*)(PQconninfoOption *)> options(
        PQconninfoParse(conninfo.c_str(), &error), PQconninfoFree);
    PQfreemem(error);
    if (!options)
        return std::nullopt;
    Fields fields;
    for (const PQconninfoOption *o = options.get(); o->keyword; ++o)
        if (o->val && !QByteArray(o->dispchar).contains('*'))
            fields[o->keyword] = o->val;
    return fields;
}

Error errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e;
    }
    return Error(ErrorCode::Internal, "no error thrown");
}

} // namespace

class ConninfoTest final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void redacts_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<QString>("shown");
        QTest::addColumn<QStringList>("secretFields"); ///< empty with "parsed" false: unparsable
        QTest::addColumn<bool>("parsed");
        QTest::addColumn<bool>(
            "sameFields"); ///< libpq reads the shown form with the original's fields
        const QString unparsable = QStringLiteral("postgresql:… (unparsable connection string)");
        const QStringList password{QStringLiteral("password")};
        const auto row = [](const char *name, const char *address, const char *shown,
                            QStringList secrets, bool parsed = true, bool sameFields = true) {
            QTest::newRow(name) << QString::fromUtf8(address) << QString::fromUtf8(shown) << secrets
                                << parsed << sameFields;
        };
        row("uri user info", "postgresql://app:s3cret@db.internal:5433/ledger",
            "postgresql://app@db.internal:5433/ledger", password);
        row("uri short scheme", "postgres://app:s3cret@db/ledger", "postgres://app@db/ledger",
            password);
        row("uri query", "postgres://db/ledger?password=s3cret&sslmode=require",
            "postgres://db/ledger?sslmode=require", password);
        row("uri query percent-encoded name", "postgresql:///ledger?pass%77ord=s3cret",
            "postgresql:///ledger", password);
        row("uri query encoded first letter",
            "postgresql://db/ledger?%70assword=s3cret&application_name=ops",
            "postgresql://db/ledger?application_name=ops", password);
        row("uri query upper case", "postgresql://app@db/ledger?PASSWORD=s3cret",
            qPrintable(unparsable), {}, false);
        row("uri query mixed case", "postgresql://db/ledger?Password=s3cret",
            qPrintable(unparsable), {}, false);
        row("uri query without value", "postgresql://app@db/ledger?password",
            qPrintable(unparsable), {}, false);
        row("scheme with one slash", "postgresql:/app:s3cret@db/ledger", qPrintable(unparsable), {},
            false);
        row("scheme in upper case", "POSTGRESQL://app:s3cret@db/ledger",
            "postgresql://app@db/ledger", password);
        row("scheme in mixed case", "PostgreS://app:s3cret@db/ledger?sslmode=require",
            "postgres://app@db/ledger?sslmode=require", password);
        row("uri sslpassword",
            "postgresql://app:s3cret@db/ledger?sslpassword=s3cret&sslmode=verify-full",
            "postgresql://app@db/ledger?sslmode=verify-full",
            {QStringLiteral("password"), QStringLiteral("sslpassword")});
        row("uri encoded password", "postgresql://app:s3%40cret@db/ledger",
            "postgresql://app@db/ledger", password);
        row("uri hosts, ports, ipv6, encoded parts",
            "postgresql://app:s3cret@[::1]:5433,db2:5434/led%20ger?application_name=ops%20desk",
            "postgresql://app@[::1]:5433,db2:5434/led%20ger?application_name=ops%20desk", password);
        row("uri ipv6 zone", "postgresql://[fe80::1%25eth0]/ledger",
            "postgresql://[fe80::1%25eth0]/ledger", {});
        row("uri socket directory", "postgresql://%2Fvar%2Frun%2Fpostgresql/ledger",
            "postgresql://%2Fvar%2Frun%2Fpostgresql/ledger", {});
        row("uri port for one of two hosts", "postgresql://a,b:5433/ledger",
            "postgresql://a,b:5433/ledger", {});
        row("uri host in the query", "postgresql://app:s3cret@?host=db&port=5433",
            "postgresql://app@db:5433", password);
        row("uri empty host in the query", "postgresql://db/ledger?host=&port=5433",
            "postgresql:///ledger?host=&port=5433", {});
        row("uri unterminated ipv6", "postgresql://app:s3cret@[::1/ledger", qPrintable(unparsable),
            {}, false);
        row("keywords", "host=db dbname=ledger password='s3 cret' user=app",
            "user=app dbname=ledger host=db", password);
        row("keywords sslpassword", "host=db password=s3cret sslpassword=s3cret", "host=db",
            {QStringLiteral("password"), QStringLiteral("sslpassword")});
        row("keywords empty password", "host=db password=", "host=db", password);
        row("keywords quoted values", "host=db application_name='ops desk' options='-c x=\\'y\\''",
            "host=db options='-c x=\\'y\\'' application_name='ops desk'", {});
        row("keyword in upper case", "host=db PASSWORD=s3cret", "(unparsable connection string)",
            {}, false);
        row("keyword unterminated quote", "host=db password='s3cret",
            "(unparsable connection string)", {}, false);
        row("service", "service=prod", "service=prod", {});
        row("service with password", "service=prod password=s3cret", "service=prod", password);
        // libpq takes it as a plain name (only the outermost dbname expands), shown redacted.
        row("database name holding a uri", "dbname='postgresql://app:s3cret@db/ledger'",
            "dbname=postgresql://app@db/ledger", {}, true, false);
        row("unknown scheme", "mysql://app:s3cret@db/ledger",
            "mysql:… (unparsable connection string)", {}, false);
        row("bare text", "s3cret", "(unparsable connection string)", {}, false);
        row("embedded ledger", "sqlite:/var/lib/idempo/ledger.db?synchronous=normal",
            "sqlite:/var/lib/idempo/ledger.db?synchronous=normal", {});
    }

    void redacts()
    {
        QFETCH(QString, address);
        QFETCH(QString, shown);
        QFETCH(QStringList, secretFields);
        QFETCH(bool, parsed);
        QFETCH(bool, sameFields);
        QCOMPARE(QString::fromStdString(redactConninfo(address.toStdString())), shown);
        QVERIFY2(!shown.contains(QLatin1String("s3")), qPrintable(shown));
        const std::optional<ConninfoParts> parts = parseConninfo(address.toStdString());
        QCOMPARE(parts.has_value(), parsed);
        if (!parts)
            return;
        QCOMPARE(QString::fromStdString(parts->nonSecret), shown);
        QStringList secrets;
        for (const std::string &f : parts->secretFields)
            secrets << QString::fromStdString(f);
        QCOMPARE(secrets, secretFields);
        if (address.startsWith(QLatin1String("sqlite:")))
            return;
        // libpq reads the shown form as the original without its secrets; it has none left.
        const std::optional<Fields> original =
            nonSecretFields(libpqConninfo(address.toStdString()));
        const std::optional<Fields> reread = nonSecretFields(parts->nonSecret);
        QVERIFY(original && reread);
        QCOMPARE(*reread == *original, sameFields);
        QVERIFY(parseConninfo(parts->nonSecret)->secretFields.empty());
        QCOMPARE(parseConninfo(parts->nonSecret)->nonSecret, parts->nonSecret);
    }

    void postgresAddresses()
    {
        QVERIFY(isPostgresAddress("postgresql://db/ledger"));
        QVERIFY(isPostgresAddress("POSTGRES://db/ledger"));
        QVERIFY(isPostgresAddress("service=prod"));
        QVERIFY(!isPostgresAddress("sqlite:/tmp/ledger.db?synchronous=normal"));
        QVERIFY(!isPostgresAddress("postgresql:/db/ledger"));
        QCOMPARE(libpqConninfo("PostgreSQL://Db/Ledger"), std::string("postgresql://Db/Ledger"));
        QCOMPARE(libpqConninfo("host=DB"), std::string("host=DB"));
    }

    /// What the engine says about an address names it without its password, whether libpq
    /// cannot parse it, the factory does not know its scheme, or the server is not there.
    void errorsNameTheLedgerWithoutItsPassword_data()
    {
        QTest::addColumn<QString>("address");
        QTest::addColumn<int>("code");
        const int invalid = static_cast<int>(ErrorCode::InvalidArgument);
        const int unavailable = static_cast<int>(ErrorCode::LedgerUnavailable);
        QTest::newRow("query upper case")
            << QStringLiteral("postgresql://app@127.0.0.1:1/db?PASSWORD=s3cret") << invalid;
        QTest::newRow("one slash")
            << QStringLiteral("postgresql:/app:s3cret@127.0.0.1:1/db") << invalid;
        QTest::newRow("one slash with query")
            << QStringLiteral("postgresql:/app:s3cret@127.0.0.1:1/db?sslmode=disable") << invalid;
        QTest::newRow("unterminated ipv6")
            << QStringLiteral("postgresql://app:s3cret@[::1/db") << invalid;
        QTest::newRow("keyword unterminated quote")
            << QStringLiteral("host=127.0.0.1 password='s3cret") << invalid;
        QTest::newRow("unknown keyword")
            << QStringLiteral("hots=127.0.0.1 password=s3cret") << invalid;
        QTest::newRow("unknown scheme")
            << QStringLiteral("mysql://app:s3cret@127.0.0.1/db") << invalid;
        QTest::newRow("refused, user info")
            << QStringLiteral("postgresql://app:s3cret@127.0.0.1:1/db?connect_timeout=2")
            << unavailable;
        QTest::newRow("refused, upper-case scheme")
            << QStringLiteral("POSTGRESQL://app:s3cret@127.0.0.1:1/db?connect_timeout=2")
            << unavailable;
        QTest::newRow("refused, encoded keyword")
            << QStringLiteral("postgresql://app@127.0.0.1:1/db?pass%77ord=s3cret&connect_timeout=2")
            << unavailable;
        QTest::newRow("refused, keywords")
            << QStringLiteral("host=127.0.0.1 port=1 password=s3cret connect_timeout=2")
            << unavailable;
    }

    void errorsNameTheLedgerWithoutItsPassword()
    {
        QFETCH(QString, address);
        QFETCH(int, code);
        const Error e = errorOf([&] { openLedger(address); });
        QCOMPARE(static_cast<int>(e.code()), code);
        const std::string message = e.what();
        QVERIFY2(message.find("s3cret") == std::string::npos, message.c_str());
        QVERIFY2(message.find(redactConninfo(address.toStdString())) != std::string::npos,
                 message.c_str());
    }
};

QTEST_GUILESS_MAIN(ConninfoTest)
#include "tst_conninfo.moc"
