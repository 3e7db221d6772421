// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL schema has one home per rule: the numbered migrations change tables and data,
// each function lives in functions/<room>/<name>.sql, and `idempo init` creates them after the
// migrations. A ledger made by init and one upgraded from each released schema end identical,
// object for object (sql/catalog.sql). Runs under tests/pg/with-postgres.sh.
#include <QFile>
#include <QRegularExpression>
#include <QtTest>

#include "migrations.h"
#include "oldschemaledger.h"
#include "pgconnection.h"
#include "postgresledgerstore.h"

using namespace idempo;

namespace {

constexpr int kLastReleased = 26;

std::string adminUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL").toStdString();
}

QStringList catalogOf(const std::string &url)
{
    QFile query(QStringLiteral(":/sql/catalog.sql"));
    if (!query.open(QIODevice::ReadOnly))
        return {QStringLiteral("catalog.sql missing from the test's resources")};
    PgConnection c(url);
    const PgResult rows = c.exec("catalog", query.readAll().toStdString());
    QStringList result;
    for (int row = 0; row < rows.rows(); ++row)
        result << QString::fromStdString(rows.text(row, 0) + " " + rows.text(row, 1) + "\n" +
                                         rows.text(row, 2));
    return result;
}

/// The first object where two catalogs differ, empty when they are equal.
QString firstDifference(const QStringList &expected, const QStringList &actual)
{
    for (qsizetype i = 0; i < std::max(expected.size(), actual.size()); ++i) {
        const QString want = i < expected.size() ? expected.at(i) : QStringLiteral("(nothing)");
        const QString got = i < actual.size() ? actual.at(i) : QStringLiteral("(nothing)");
        if (want != got)
            return QStringLiteral("object %1:\n--- made by init:\n%2\n--- upgraded:\n%3")
                .arg(i)
                .arg(want.left(600), got.left(600));
    }
    return {};
}

QString resourceText(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

} // namespace

class TestPostgresSchemaHome final : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        if (adminUrl().empty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        m_freshUrl = test::freshPostgresDatabase("idempo_schema_fresh");
        PostgresLedgerStore(m_freshUrl).migrate();
        m_fresh = catalogOf(m_freshUrl);
        QVERIFY(m_fresh.size() > 300);
    }

    void upgradeFromEveryReleaseMatchesInit_data()
    {
        QTest::addColumn<int>("released");
        for (int version = 1; version <= kLastReleased; ++version)
            QTest::addRow("schema %d", version) << version;
    }

    void upgradeFromEveryReleaseMatchesInit()
    {
        QFETCH(int, released);
        const std::string url =
            test::freshPostgresDatabase("idempo_schema_from_" + std::to_string(released));
        {
            PgConnection c(url);
            test::migratePostgresTo(c, released);
        }
        PostgresLedgerStore store(url);
        store.migrate();
        QCOMPARE(store.schemaVersion(), latestSchemaVersion(QStringLiteral("postgresql")));
        const QString difference = firstDifference(m_fresh, catalogOf(url));
        QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }

    void migrationsCreateNoFunctions()
    {
        // The numbered migrations change tables and data; a function, trigger or grant of one
        // there would be a second home (a migration's own pg_temp helper is its own).
        const QRegularExpression defines(
            QStringLiteral(
                R"((CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE|TRIGGER)\s+(?!pg_temp\.))"
                R"(|(GRANT|REVOKE)\b[^;]*\bFUNCTION))"),
            QRegularExpression::CaseInsensitiveOption);
        for (const Migration &m : migrations(QStringLiteral("postgresql"))) {
            const QString text = m.statements.join(QLatin1Char('\n'));
            const QRegularExpressionMatch found = defines.match(text);
            QVERIFY2(!found.hasMatch(), qPrintable(m.name + QStringLiteral(": ") +
                                                   text.mid(found.capturedStart(), 80)));
        }
    }

    void everyFunctionHasItsFile()
    {
        // Each function of the ledger is defined in the file named after it, which states who
        // may call it, and nowhere else.
        const SchemaFunctions functions = schemaFunctions(QStringLiteral("postgresql"));
        PgConnection c(m_freshUrl);
        const PgResult live =
            c.exec("functions", "SELECT p.proname, p.oid::regprocedure::text FROM pg_proc AS p "
                                "WHERE p.pronamespace = 'idempo'::regnamespace ORDER BY 1, 2");
        QVERIFY(live.rows() > 80);
        const QString root = QStringLiteral(":/sql/postgresql/functions/");
        for (int row = 0; row < live.rows(); ++row) {
            const QString name = QString::fromStdString(live.text(row, 0));
            const QString signature = QString::fromStdString(live.text(row, 1));
            QStringList homes;
            for (const QString &file : functions.files) {
                const QString text = resourceText(root + file);
                if (text.contains(QStringLiteral("FUNCTION idempo.") + name + QLatin1Char('(')))
                    homes << file;
            }
            QVERIFY2(homes.size() == 1 &&
                         homes.first().endsWith(QLatin1Char('/') + name + QStringLiteral(".sql")),
                     qPrintable(signature + QStringLiteral(" defined in: ") +
                                homes.join(QStringLiteral(", "))));
            const QString qualified = signature.startsWith(QStringLiteral("idempo."))
                                          ? signature
                                          : QStringLiteral("idempo.") + signature;
            QVERIFY2(
                resourceText(root + homes.first())
                    .contains(QStringLiteral("grant_execute('") + qualified + QLatin1Char('\'')),
                qPrintable(homes.first() + QStringLiteral(" does not state who may call ") +
                           qualified));
        }
    }

    void initAgainRestoresAChangedFunction()
    {
        // The files are the rule: `idempo init` undoes what was changed by hand (a body, a
        // grant, an overload no file defines) and leaves a ledger that runs them alone.
        const std::string url = test::freshPostgresDatabase("idempo_schema_changed");
        PostgresLedgerStore store(url);
        store.migrate();
        PgConnection c(url);
        const auto appliedAt = [&c] {
            return c.exec("applied", "SELECT applied_at::text FROM idempo.schema_functions")
                .text(0, 0);
        };
        const std::string first = appliedAt();
        store.migrate();
        QCOMPARE(appliedAt(), first);
        c.execScript("edit", "CREATE OR REPLACE FUNCTION idempo.is_state(p_state text) RETURNS "
                             "boolean LANGUAGE sql IMMUTABLE RETURN true;"
                             "GRANT EXECUTE ON FUNCTION idempo.set_guard_setting(text, text, "
                             "text, text, text, bigint, bigint) TO PUBLIC;"
                             "CREATE FUNCTION idempo.is_state(p_state text, p_strict integer) "
                             "RETURNS boolean LANGUAGE sql RETURN false;");
        QCOMPARE(c.exec("edited", "SELECT idempo.is_state('nonsense')::text").text(0, 0), "true");
        store.migrate();
        QCOMPARE(c.exec("restored", "SELECT idempo.is_state('nonsense')::text").text(0, 0),
                 "false");
        QCOMPARE(c.exec("sha", "SELECT sha256 FROM idempo.schema_functions").text(0, 0),
                 schemaFunctions(QStringLiteral("postgresql")).sha256);
        QVERIFY(appliedAt() != first);
        const QString difference = firstDifference(m_fresh, catalogOf(url));
        QVERIFY2(difference.isEmpty(), qPrintable(difference));
    }

private:
    std::string m_freshUrl;
    QStringList m_fresh;
};

QTEST_GUILESS_MAIN(TestPostgresSchemaHome)
#include "tst_postgresschemahome.moc"
