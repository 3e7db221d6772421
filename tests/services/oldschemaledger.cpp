// SPDX-License-Identifier: Apache-2.0
#include "oldschemaledger.h"

#include <QSqlError>
#include <QUrl>

#include "migrations.h"

namespace idempo::test {

QString migrateSqliteTo(QSqlQuery &q, int lastVersion)
{
    // QString, not auto: a QStringBuilder would outlive the error text it points into.
    const auto failed = [&q](const QString &statement) -> QString {
        return statement + QStringLiteral(": ") + q.lastError().text();
    };
    const QString table = QStringLiteral(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "applied_at_ms INTEGER NOT NULL)");
    if (!q.exec(table))
        return failed(table);
    for (const Migration &m : migrations(QStringLiteral("sqlite"))) {
        if (m.version > lastVersion)
            break;
        for (const QString &statement : m.statements)
            if (!q.exec(statement))
                return failed(statement);
        const QString record = QStringLiteral("INSERT INTO schema_migrations VALUES (%1, '%2', 0)")
                                   .arg(m.version)
                                   .arg(m.name);
        if (!q.exec(record))
            return failed(record);
    }
    return {};
}

std::string freshPostgresDatabase(const std::string &name)
{
    const QString admin = qEnvironmentVariable("IDEMPO_TEST_POSTGRES_URL");
    PgConnection c(admin.toStdString());
    c.execScript("drop database", "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
    c.execScript("create database", "CREATE DATABASE " + name);
    QUrl url(admin);
    url.setPath(QStringLiteral("/") + QString::fromStdString(name));
    return url.toString().toStdString();
}

std::string urlAs(const std::string &url, const std::string &user)
{
    QUrl parsed(QString::fromStdString(url));
    parsed.setUserName(QString::fromStdString(user));
    return parsed.toString().toStdString();
}

void migratePostgresTo(PgConnection &c, int lastVersion)
{
    PgTransaction tx(c);
    c.exec("create schema_migrations",
           "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT "
           "NULL, applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
    for (const Migration &m :
         migrations(QStringLiteral("postgresql"), QStringLiteral(":/released/"))) {
        if (m.version > lastVersion)
            break;
        c.execScript("migrate", m.statements.join(QLatin1Char('\n')).toStdString());
        // The early migrations keep the table in public; a later one moves it into idempo.
        const std::string table =
            c.exec("where", "SELECT coalesce(to_regclass('idempo.schema_migrations'), "
                            "to_regclass('schema_migrations'))::text")
                .text(0, 0);
        c.exec("record migration",
               "INSERT INTO " + table + " (version, name) VALUES ($1::integer, $2)",
               PgParams().integer(m.version).text(m.name.toStdString()));
    }
    tx.commit();
}

} // namespace idempo::test
