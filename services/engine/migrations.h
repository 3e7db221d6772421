// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <vector>

#include <QString>
#include <QStringList>

namespace idempo {

/// One versioned schema step, read from the resource `:/sql/<dialect>/NNNN_name.sql`.
struct Migration
{
    int version = 0;
    QString name;
    QStringList statements; ///< split at lines ending in ';'
};

/// The migrations of a dialect ("sqlite" or "postgresql"), oldest first. `root` is the resource
/// folder that holds one folder per dialect (tests read released migrations from another).
std::vector<Migration> migrations(const QString &dialect,
                                  const QString &root = QStringLiteral(":/sql/"));

/// The schema version this build writes for `dialect`: the newest migration's.
int latestSchemaVersion(const QString &dialect);

/// The re-creatable part of a schema: every file under `:/sql/<dialect>/functions/`, one
/// function (with its triggers and grants) each, in path order. Applied whole after the
/// migrations; `sha256` names the set (paths and texts), so a ledger knows whether it runs it.
struct SchemaFunctions
{
    QStringList files; ///< paths under functions/, e.g. "operations/claim.sql"
    std::string script;
    std::string sha256;
    /// Every signature the files define, as their grant_execute calls name it
    /// ("idempo.claim(text,...)"): each file states who may call each function it defines.
    QStringList signatures;
};

SchemaFunctions schemaFunctions(const QString &dialect);

} // namespace idempo
