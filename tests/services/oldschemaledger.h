// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include <QSqlQuery>
#include <QString>

#include "pgconnection.h"

namespace idempo::test {

/// Brings an empty SQLite database (through `q`) to schema `lastVersion`, as the build of that
/// version left it: its migrations in order, each recorded in schema_migrations. Returns the
/// statement that failed with its error, empty when every one ran.
QString migrateSqliteTo(QSqlQuery &q, int lastVersion);

/// A new, empty PostgreSQL database `name` beside the test cluster's (IDEMPO_TEST_POSTGRES_URL),
/// dropped first if it exists; its URL.
std::string freshPostgresDatabase(const std::string &name);

/// `url` with `user` as its login (a password comes from the password file, as libpq finds it).
std::string urlAs(const std::string &url, const std::string &user);

/// Brings the empty database of `c` to schema `lastVersion` as the released build of that version
/// left it (at most 26: tests/services/released/), in one transaction.
void migratePostgresTo(PgConnection &c, int lastVersion);

} // namespace idempo::test
