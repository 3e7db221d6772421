// SPDX-License-Identifier: Apache-2.0
// Stored text whose writer the embedded ledger cannot vary: the audit log's `who` is the
// PostgreSQL role, and a role name may hold any character. One whose name carries an ANSI
// sequence and a bidi override is shown escaped by `audit list`, `history` and the CSV export,
// and exactly in JSON. Runs under tests/pg/with-postgres.sh.
#include <QFile>
#include <QJsonArray>
#include <QUrl>
#include <QtTest>

#include "clirunner.h"
#include "pgconnection.h"

namespace {

QString S(const char *utf8)
{
    return QString::fromUtf8(utf8);
}

QString adminUrl()
{
    return qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
}

/// ESC [ 3 1 m, then U+202E RIGHT-TO-LEFT OVERRIDE.
const char kRole[] = "ops\x1b[31m\xe2\x80\xae"
                     "evil";

} // namespace

class TestCliTextPostgresql final : public QObject
{
    Q_OBJECT

private:
    CliRunner m_admin;
    CliRunner m_approver;

private Q_SLOTS:
    void initTestCase()
    {
        if (adminUrl().isEmpty())
            QSKIP("IDEMPO_TEST_POSTGRES_URL is not set; run under tests/pg/with-postgres.sh");
        m_admin.useLedger(adminUrl());
        QCOMPARE(m_admin.run({S("init")}).exitCode, 0); // creates the idempo_* group roles
        idempo::PgConnection(adminUrl().toStdString())
            .execScript("create the approver",
                        std::string("DROP ROLE IF EXISTS \"") + kRole + "\"; CREATE ROLE \"" +
                            kRole + "\" LOGIN PASSWORD 'approver-secret' IN ROLE idempo_approver;");
        // Its password through libpq's own means: a password file (mode 0600, or libpq ignores it).
        QFile passwords(m_approver.filePath(S("pgpass")));
        QVERIFY(passwords.open(QIODevice::WriteOnly));
        passwords.write(QByteArray("*:*:*:") + kRole + ":approver-secret\n");
        passwords.close();
        QVERIFY(passwords.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        m_approver.setEnv(S("PGPASSFILE"), passwords.fileName());
        QUrl url(adminUrl());
        url.setUserName(S(kRole));
        m_approver.useLedger(url.toString(QUrl::FullyEncoded));
    }

    void roleNameIsShownEscaped()
    {
        const QString key = S("run-1:refund");
        QCOMPARE(m_admin
                     .run({S("claim"), key, S("--payload"), S("{}"), S("--max-attempts"), S("1"),
                           S("--owner"), S("worker-1")})
                     .exitCode,
                 0);
        QCOMPARE(m_admin.run({S("fail"), key, S("--token"), S("1"), S("--class"), S("transient")})
                     .exitCode,
                 0);
        const CliRun reject = m_approver.run({S("reject"), key, S("--reason"), S("duplicate")});
        QVERIFY2(reject.exitCode == 0, reject.err.constData());

        const QByteArray shown = R"(ops\x1b[31m\u202eevil)";
        for (const QStringList &args :
             {QStringList{S("audit"), S("list")}, QStringList{S("history"), key},
              QStringList{S("audit"), S("export"), S("--format"), S("csv")}}) {
            const CliRun r = m_admin.run(args);
            QCOMPARE(r.exitCode, 0);
            QVERIFY2(!r.out.contains('\x1b') && !r.out.contains("\xe2\x80\xae"), r.out.constData());
            QVERIFY2(r.out.contains(shown), r.out.constData());
        }
        const CliRun json = m_admin.run({S("--json"), S("audit"), S("list")});
        QVERIFY2(!json.out.contains('\x1b') && !json.out.contains("\xe2\x80\xae"),
                 json.out.constData());
        const QJsonObject record = json.json.value(S("records")).toArray().last().toObject();
        QCOMPARE(record.value(S("who")).toString(), S(kRole));
        QCOMPARE(m_admin.run({S("audit"), S("verify")}).exitCode, 0);
    }
};

QTEST_GUILESS_MAIN(TestCliTextPostgresql)
#include "tst_cli_text_postgresql.moc"
