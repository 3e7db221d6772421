// SPDX-License-Identifier: Apache-2.0
// PostgresLedgerStore's schema: the version a ledger holds, and `idempo init`, which applies the
// numbered migrations and then creates the functions from their files
// (resources/sql/postgresql/README.md).
#include "error.h"
#include "migrations.h"
#include "postgresledgerstore.h"

namespace idempo {
namespace {

Error newerSchema(const std::string &ledger, int version, int latest)
{
    return Error(ErrorCode::SchemaMismatch,
                 "ledger " + ledger + " has schema version " + std::to_string(version) +
                     ", newer than this build's " + std::to_string(latest) + "; upgrade idempo");
}

/// The table that records migrations: idempo.schema_migrations since version 6, before that
/// schema_migrations on the search path; empty when there is none (an uninitialised ledger).
std::string migrationsTable(PgConnection &c)
{
    const PgResult r =
        c.exec("read schema version", "SELECT coalesce(to_regclass('idempo.schema_migrations'), "
                                      "to_regclass('schema_migrations'))::text");
    return r.isNull(0, 0) ? std::string() : r.text(0, 0);
}

/// 0 when the ledger has no schema_migrations table.
int readSchemaVersion(PgConnection &c)
{
    const std::string table = migrationsTable(c);
    if (table.empty())
        return 0;
    // `table` is the catalog's own quoted name of the table, not input.
    return static_cast<int>(
        c.exec("read schema version", "SELECT coalesce(max(version), 0) FROM " + table)
            .integer(0, 0));
}

/// The SHA-256 of what the function files made: every function of schema idempo with its
/// grants, and every trigger that calls one.
constexpr const char *kFunctionsDigestSql = R"SQL(
SELECT encode(sha256(convert_to(coalesce(string_agg(d.def, E'\n' ORDER BY d.def), ''), 'UTF8')), 'hex')
FROM (SELECT pg_catalog.pg_get_functiondef(p.oid) || ' ' || coalesce(p.proacl::text, '') AS def
      FROM pg_catalog.pg_proc AS p WHERE p.pronamespace = 'idempo'::regnamespace
      UNION ALL
      SELECT pg_catalog.pg_get_triggerdef(t.oid)
      FROM pg_catalog.pg_trigger AS t JOIN pg_catalog.pg_proc AS p ON p.oid = t.tgfoid
      WHERE p.pronamespace = 'idempo'::regnamespace AND NOT t.tgisinternal) AS d
)SQL";

/// The functions of schema idempo that none of the signatures $1 (one a line) names.
constexpr const char *kStrayFunctionsSql = R"SQL(
SELECT p.oid::regprocedure::text FROM pg_catalog.pg_proc AS p
WHERE p.pronamespace = 'idempo'::regnamespace
  AND p.oid NOT IN (SELECT pg_catalog.to_regprocedure(s) FROM unnest(string_to_array($1, E'\n')) AS s
                    WHERE pg_catalog.to_regprocedure(s) IS NOT NULL)
)SQL";

std::string functionsDigest(PgConnection &c)
{
    return c.exec("digest functions", kFunctionsDigestSql).text(0, 0);
}

} // namespace

int PostgresLedgerStore::schemaVersion()
{
    return readSchemaVersion(connection());
}

void PostgresLedgerStore::requireSchema()
{
    if (m_schemaReady.load())
        return;
    const int version = schemaVersion();
    if (version == 0) {
        throw Error(ErrorCode::SchemaMismatch,
                    "ledger " + describe() +
                        " has no idempo schema; run `idempo init` to create it");
    }
    if (version > m_latestSchema)
        throw newerSchema(describe(), version, m_latestSchema);
    if (version < m_latestSchema) {
        throw Error(ErrorCode::SchemaMismatch,
                    "ledger " + describe() + " has schema version " + std::to_string(version) +
                        ", older than this build's " + std::to_string(m_latestSchema) +
                        "; run `idempo init` to upgrade it");
    }
    m_schemaReady = true;
}

void PostgresLedgerStore::migrate()
{
    PgConnection &c = connection();
    PgTransaction tx(c);
    // Concurrent `idempo init`s take turns; the key is arbitrary but fixed ("idempo" in ASCII).
    c.exec("lock migrations", "SELECT pg_advisory_xact_lock(115858279346287)");
    const int current = readSchemaVersion(c);
    if (current > m_latestSchema)
        throw newerSchema(describe(), current, m_latestSchema);
    if (current == 0) {
        c.exec("create schema_migrations",
               "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name "
               "text NOT NULL, "
               "applied_at timestamptz NOT NULL DEFAULT clock_timestamp())");
    }
    for (const Migration &m : migrations(QStringLiteral("postgresql"))) {
        if (m.version <= current)
            continue;
        // One script, not statement by statement: DO blocks span lines that end in ';'.
        c.execScript("migrate", m.statements.join(QLatin1Char('\n')).toStdString());
        // Version 6 moves the table into schema idempo: record where it is now.
        c.exec("record migration",
               "INSERT INTO " + migrationsTable(c) + " (version, name) VALUES ($1::integer, $2)",
               PgParams().integer(m.version).text(m.name.toStdString()));
    }
    applyFunctions(c, current < m_latestSchema);
    tx.commit();
    m_schemaReady = true;
}

void PostgresLedgerStore::applyFunctions(PgConnection &c, bool versionMoved)
{
    const SchemaFunctions functions = schemaFunctions(QStringLiteral("postgresql"));
    const PgResult applied =
        c.exec("read functions",
               "SELECT sha256, catalog_sha256 FROM idempo.schema_functions WHERE singleton");
    if (!versionMoved && applied.rows() == 1 && applied.text(0, 0) == functions.sha256 &&
        applied.text(0, 1) == functionsDigest(c))
        return;
    // A function of schema idempo that no file defines (a hand-made overload makes calls
    // ambiguous) goes; one that something else depends on stops init with PostgreSQL's reason.
    const PgResult stray =
        c.exec("find stray functions", kStrayFunctionsSql,
               PgParams().text(functions.signatures.join(QLatin1Char('\n')).toStdString()));
    for (int row = 0; row < stray.rows(); ++row)
        c.execScript("drop a stray function", "DROP FUNCTION " + stray.text(row, 0));
    // The files are in path order, not call order: bodies are checked when called, as pg_dump's
    // restores do, and every table and type they name exists by now.
    c.exec("functions", "SET LOCAL check_function_bodies = off");
    c.execScript("create functions", functions.script);
    c.exec(
        "record functions",
        "INSERT INTO idempo.schema_functions (sha256, catalog_sha256, files) "
        "VALUES ($1, $2, $3::integer) ON CONFLICT (singleton) DO UPDATE SET sha256 = "
        "excluded.sha256, catalog_sha256 = excluded.catalog_sha256, files = excluded.files, "
        "applied_at = clock_timestamp()",
        PgParams().text(functions.sha256).text(functionsDigest(c)).integer(functions.files.size()));
}

} // namespace idempo
