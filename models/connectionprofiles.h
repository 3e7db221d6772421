// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QList>
#include <QString>

namespace idempo {

/// Named ledger addresses kept in QSettings, by the fields libpq's parse does not mark secret
/// (services/conninfo.h): never a password, which libpq reads from ~/.pgpass, PGPASSFILE or a
/// service file. An address libpq cannot parse is not kept; one written with a secret by an
/// earlier version is rewritten without it when read.
class ConnectionProfiles final
{
public:
    struct Profile
    {
        QString name;
        QString url;
    };

    /// The saved profiles; the embedded ledger is always there, first.
    static QList<Profile> load();
    static void save(const QList<Profile> &profiles);
    /// The address opened last, or the embedded ledger on first start.
    static QString lastUrl();
    static void setLastUrl(const QString &url);
    /// `url` as it may be stored: its non-secret fields, or empty when libpq cannot parse it.
    static QString storable(const QString &url);
    /// `url` as it may be shown: its non-secret fields, or its scheme and
    /// "(unparsable connection string)".
    static QString shown(const QString &url);
    /// Why `url` may not be entered (it carries a password), or empty when it may.
    static QString refusal(const QString &url);
};

} // namespace idempo
