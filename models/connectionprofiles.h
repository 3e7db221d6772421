// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <QList>
#include <QString>

namespace idempo {

/// Named ledger addresses kept in QSettings. Never passwords: a URI's password and any
/// `password=` keyword are refused, since libpq reads them from ~/.pgpass or PGPASSFILE.
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
    /// Why `url` may not be saved (it carries a password), or empty when it may.
    static QString refusal(const QString &url);
};

} // namespace idempo
