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

/// The migrations of a dialect ("sqlite" or "postgresql"), oldest first.
std::vector<Migration> migrations(const QString &dialect);

/// The schema version this build writes for `dialect`: the newest migration's.
int latestSchemaVersion(const QString &dialect);

} // namespace idempo
