// SPDX-License-Identifier: Apache-2.0
#include "migrations.h"

#include <algorithm>

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QRegularExpression>

namespace idempo {

std::vector<Migration> migrations(const QString &dialect, const QString &root)
{
    const QDir dir(root + dialect);
    std::vector<Migration> result;
    for (const QString &file : dir.entryList({QStringLiteral("*.sql")}, QDir::Files, QDir::Name)) {
        QFile f(dir.filePath(file));
        if (!f.open(QIODevice::ReadOnly))
            continue;
        Migration m;
        m.version = file.section(QLatin1Char('_'), 0, 0).toInt();
        m.name = file.section(QLatin1Char('.'), 0, 0);
        QString statement;
        for (const QString &line : QString::fromUtf8(f.readAll()).split(QLatin1Char('\n'))) {
            if (line.trimmed().startsWith(QLatin1String("--")))
                continue;
            statement += line + QLatin1Char('\n');
            if (line.trimmed().endsWith(QLatin1Char(';'))) {
                m.statements << statement.trimmed();
                statement.clear();
            }
        }
        if (!statement.trimmed().isEmpty())
            m.statements << statement.trimmed();
        result.push_back(std::move(m));
    }
    std::sort(result.begin(), result.end(),
              [](const Migration &a, const Migration &b) { return a.version < b.version; });
    return result;
}

int latestSchemaVersion(const QString &dialect)
{
    const auto all = migrations(dialect);
    return all.empty() ? 0 : all.back().version;
}

SchemaFunctions schemaFunctions(const QString &dialect)
{
    const QString root = QStringLiteral(":/sql/") + dialect + QStringLiteral("/functions/");
    SchemaFunctions result;
    QDirIterator it(root, {QStringLiteral("*.sql")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext())
        result.files << it.next().mid(root.size());
    result.files.sort();
    QCryptographicHash hash(QCryptographicHash::Sha256);
    for (const QString &file : result.files) {
        QFile f(root + file);
        if (!f.open(QIODevice::ReadOnly))
            continue;
        const QByteArray text = f.readAll();
        hash.addData(QByteArray(file.toUtf8() + '\0' + text + '\0'));
        result.script += text.toStdString() + '\n';
    }
    result.sha256 = hash.result().toHex().toStdString();
    static const QRegularExpression granted(QStringLiteral(R"(grant_execute\('([^']+)')"));
    for (const QRegularExpressionMatch &m :
         granted.globalMatch(QString::fromStdString(result.script)))
        result.signatures << m.captured(1);
    return result;
}

} // namespace idempo
