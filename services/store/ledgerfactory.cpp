// SPDX-License-Identifier: Apache-2.0
#include "ledgerfactory.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QUrlQuery>

#include "conninfo.h"
#include "error.h"
#include "postgresledgerstore.h"
#include "postgresmessagequeue.h"
#include "sqliteledgerstore.h"
#include "sqlitemessagequeue.h"

namespace idempo {

QString defaultLedgerUrl()
{
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
                        QStringLiteral("/idempo");
    return QStringLiteral("sqlite:") + dir + QStringLiteral("/ledger.db");
}

std::shared_ptr<LedgerStore> openLedger(const QString &url, std::shared_ptr<const Clock> clock,
                                        OpenMode mode)
{
    if (!clock)
        clock = std::make_shared<SystemClock>();
    if (url.startsWith(QLatin1String("sqlite:"))) {
        QString path = url.mid(7);
        SqliteLedgerStore::Options options;
        const qsizetype query = path.indexOf(QLatin1Char('?'));
        if (query >= 0) {
            const QUrlQuery params(path.mid(query + 1));
            path.truncate(query);
            for (const auto &[name, value] : params.queryItems()) {
                const bool known =
                    name == QLatin1String("synchronous") &&
                    (value.compare(QLatin1String("full"), Qt::CaseInsensitive) == 0 ||
                     value.compare(QLatin1String("normal"), Qt::CaseInsensitive) == 0);
                if (!known) {
                    throw Error(ErrorCode::InvalidArgument,
                                "unknown ledger option '" + name.toStdString() + "=" +
                                    value.toStdString() +
                                    "': the only one is synchronous=full|normal");
                }
                options.synchronous = value;
            }
        }
        if (path.isEmpty() || path.startsWith(QLatin1Char(':')))
            throw Error(ErrorCode::InvalidArgument,
                        "ledger URL '" + url.toStdString() + "' names no file");
        const QFileInfo info(path);
        if (mode != OpenMode::CreateIfMissing && !info.exists()) {
            // A mistyped path must not become a fresh, empty ledger on which everything runs again.
            throw Error(ErrorCode::LedgerUnavailable,
                        "ledger " + url.toStdString() +
                            " does not exist; create it with 'idempo init'");
        }
        options.readOnly = mode == OpenMode::ReadOnly;
        if (!options.readOnly && !QDir().mkpath(info.absolutePath())) {
            throw Error(ErrorCode::LedgerUnavailable,
                        "cannot create the ledger's folder " + info.absolutePath().toStdString());
        }
        return std::make_shared<SqliteLedgerStore>(info.absoluteFilePath(), std::move(clock),
                                                   options);
    }
    // libpq parses the rest: URIs, and keyword strings such as "service=NAME" or "host=… dbname=…".
    const std::string address = url.toStdString();
    if (isPostgresAddress(address))
        return std::make_shared<PostgresLedgerStore>(address);
    throw Error(ErrorCode::InvalidArgument, "unknown ledger URL " + redactConninfo(address) +
                                                ": expected sqlite:PATH, postgresql://… or a libpq "
                                                "keyword string such as service=NAME");
}

std::shared_ptr<MessageQueue> openQueue(const QString &url, std::shared_ptr<const Clock> clock,
                                        OpenMode mode)
{
    std::shared_ptr<LedgerStore> ledger = openLedger(url, std::move(clock), mode);
    if (auto sqlite = std::dynamic_pointer_cast<SqliteLedgerStore>(ledger))
        return std::make_shared<SqliteMessageQueue>(std::move(sqlite));
    return std::make_shared<PostgresMessageQueue>(
        std::dynamic_pointer_cast<PostgresLedgerStore>(std::move(ledger)));
}

} // namespace idempo
