// SPDX-License-Identifier: Apache-2.0
#include "connectionprofiles.h"

#include "ledgerfactory.h"

#include <QRegularExpression>
#include <QSettings>
#include <QUrl>

namespace idempo {

QList<ConnectionProfiles::Profile> ConnectionProfiles::load()
{
    QList<Profile> profiles{{QStringLiteral("Embedded sandbox ledger"), defaultLedgerUrl()}};
    QSettings settings;
    const int n = settings.beginReadArray(QStringLiteral("profiles"));
    for (int i = 0; i < n; ++i) {
        settings.setArrayIndex(i);
        Profile p{settings.value(QStringLiteral("name")).toString(), settings.value(QStringLiteral("url")).toString()};
        if (!p.url.isEmpty() && p.url != defaultLedgerUrl() && refusal(p.url).isEmpty())
            profiles.append(p);
    }
    settings.endArray();
    return profiles;
}

void ConnectionProfiles::save(const QList<Profile> &profiles)
{
    QSettings settings;
    settings.beginWriteArray(QStringLiteral("profiles"));
    int i = 0;
    for (const Profile &p : profiles) {
        if (p.url == defaultLedgerUrl() || !refusal(p.url).isEmpty())
            continue;
        settings.setArrayIndex(i++);
        settings.setValue(QStringLiteral("name"), p.name);
        settings.setValue(QStringLiteral("url"), p.url);
    }
    settings.endArray();
}

QString ConnectionProfiles::lastUrl()
{
    const QString url = QSettings().value(QStringLiteral("lastLedger")).toString();
    return url.isEmpty() || !refusal(url).isEmpty() ? defaultLedgerUrl() : url;
}

void ConnectionProfiles::setLastUrl(const QString &url)
{
    if (refusal(url).isEmpty())
        QSettings().setValue(QStringLiteral("lastLedger"), url);
}

QString ConnectionProfiles::refusal(const QString &url)
{
    static const QRegularExpression keyword(QStringLiteral("(^|\\s|[?&])password\\s*="),
                                            QRegularExpression::CaseInsensitiveOption);
    if (keyword.match(url).hasMatch())
        return QStringLiteral("The address holds a password; keep it in ~/.pgpass or PGPASSFILE instead.");
    if (url.startsWith(QLatin1String("postgres")) && !QUrl(url).password().isEmpty())
        return QStringLiteral("The URI holds a password; keep it in ~/.pgpass or PGPASSFILE instead.");
    return QString();
}

} // namespace idempo
