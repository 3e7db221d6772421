// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>

#include <QString>

#include "clock.h"
#include "ledgerstore.h"
#include "messagequeue.h"

namespace idempo {

/// The ledger used when neither --ledger nor IDEMPO_LEDGER names one:
/// "sqlite:<user data dir>/ledger.db" (e.g. ~/.local/share/idempo/ledger.db).
QString defaultLedgerUrl();

/// Whether opening an embedded ledger may create its file.
enum class OpenMode
{
    OpenExisting,    ///< a missing file is Error(LedgerUnavailable): a typo must not start a fresh
                     ///< ledger
    CreateIfMissing, ///< `idempo init` and the embedded default
    ReadOnly,        ///< commands that only read: like OpenExisting, and opening writes nothing
};

/// Opens the ledger a URL names:
/// - `sqlite:PATH`: the embedded ledger; migrated if needed, created only with
///   OpenMode::CreateIfMissing; the only option, `?synchronous=normal`, trades power-loss
///   durability for speed (`full` is the default). Times come from `clock`. With
///   OpenMode::ReadOnly the file is opened as it is (SqliteLedgerStore::Options::readOnly): it
///   and its folder need not be writable, and a schema other than this build's is
///   Error(SchemaMismatch) instead of a migration.
/// - `postgresql://…` or `postgres://…` (libpq URI, the scheme in any case), or a libpq
///   keyword string such as `service=NAME` or `host=… dbname=…`: the shared ledger. Connects
///   (connect_timeout 5 s unless given) but does not migrate: `idempo init`
///   (LedgerStore::migrate) does, and until then ledger calls throw Error(SchemaMismatch).
///   Passwords only through .pgpass, PGPASSFILE or a service file. Times come from the
///   server's clock; `clock` is not used. Opening writes nothing, so OpenMode::ReadOnly
///   changes nothing here.
/// Messages name the ledger as redactConninfo() shows it, never with a password. Throws
/// Error(InvalidArgument) for an unknown scheme or option or an address libpq cannot parse,
/// Error(LedgerUnavailable) when the ledger cannot be opened or reached, Error(SchemaMismatch)
/// for a newer schema.
std::shared_ptr<LedgerStore> openLedger(const QString &url,
                                        std::shared_ptr<const Clock> clock = nullptr,
                                        OpenMode mode = OpenMode::OpenExisting);

/// Opens the message queues of the ledger a URL names (see openLedger): on `sqlite:PATH` they
/// live in the ledger file, on PostgreSQL in pgmq's tables beside the ledger's
/// (postgresmessagequeue.h). Throws like openLedger().
std::shared_ptr<MessageQueue> openQueue(const QString &url,
                                        std::shared_ptr<const Clock> clock = nullptr,
                                        OpenMode mode = OpenMode::OpenExisting);

} // namespace idempo
