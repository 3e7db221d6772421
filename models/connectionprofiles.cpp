// SPDX-License-Identifier: Apache-2.0
#include "connectionprofiles.h"

#include <QSettings>

#include "conninfo.h"
#include "ledgerfactory.h"

namespace idempo {

namespace {

QList<ConnectionProfiles::Profile> readProfiles(QSettings &settings)
{
    QList<ConnectionProfiles::Profile> profiles;
    const int n = settings.beginReadArray(QStringLiteral("profiles"));
    for (int i = 0; i < n; ++i) {
        settings.setArrayIndex(i);
        profiles.append({settings.value(QStringLiteral("name")).toString(),
                         settings.value(QStringLiteral("url")).toString()});
    }
    settings.endArray();
    return profiles;
}

} // namespace

QList<ConnectionProfiles::Profile> ConnectionProfiles::load()
{
    QList<Profile> profiles{{QStringLiteral("Embedded sandbox ledger"), defaultLedgerUrl()}};
    QSettings settings;
    const QList<Profile> stored = readProfiles(settings);
    bool scrubbed = false;
    for (const Profile &p : stored) {
        const QString url = storable(p.url);
        scrubbed = scrubbed || url != p.url;
        if (!url.isEmpty() && url != defaultLedgerUrl())
            profiles.append({p.name, url});
    }
    if (scrubbed)
        save(profiles);
    return profiles;
}

void ConnectionProfiles::save(const QList<Profile> &profiles)
{
    QSettings settings;
    settings.remove(QStringLiteral("profiles"));
    settings.beginWriteArray(QStringLiteral("profiles"));
    int i = 0;
    for (const Profile &p : profiles) {
        const QString url = storable(p.url);
        if (url.isEmpty() || url == defaultLedgerUrl())
            continue;
        settings.setArrayIndex(i++);
        settings.setValue(QStringLiteral("name"), p.name);
        settings.setValue(QStringLiteral("url"), url);
    }
    settings.endArray();
}

QString ConnectionProfiles::lastUrl()
{
    QSettings settings;
    const QString stored = settings.value(QStringLiteral("lastLedger")).toString();
    const QString url = storable(stored);
    if (url != stored)
        settings.setValue(QStringLiteral("lastLedger"), url);
    return url.isEmpty() ? defaultLedgerUrl() : url;
}

void ConnectionProfiles::setLastUrl(const QString &url)
{
    const QString kept = storable(url);
    if (!kept.isEmpty())
        QSettings().setValue(QStringLiteral("lastLedger"), kept);
}

QString ConnectionProfiles::storable(const QString &url)
{
    const std::optional<ConninfoParts> parts = parseConninfo(url.toStdString());
    return parts && !url.isEmpty() ? QString::fromStdString(parts->nonSecret) : QString();
}

QString ConnectionProfiles::shown(const QString &url)
{
    return QString::fromStdString(redactConninfo(url.toStdString()));
}

QString ConnectionProfiles::refusal(const QString &url)
{
    const std::optional<ConninfoParts> parts = parseConninfo(url.toStdString());
    if (!parts || parts->secretFields.empty())
        return QString();
    QStringList fields;
    for (const std::string &f : parts->secretFields)
        fields << QString::fromStdString(f);
    return QStringLiteral("The address holds a secret (%1); keep it in ~/.pgpass, PGPASSFILE or a "
                          "service file "
                          "instead: nothing secret is stored here.")
        .arg(fields.join(QStringLiteral(", ")));
}

} // namespace idempo
