// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <stdexcept>
#include <string>

namespace idempo {

/// Why the engine refused a request. The string form (errorCodeName) is the stable
/// `error` field of the CLI's JSON output.
enum class ErrorCode
{
    InvalidKey,      ///< operation key or namespace breaks the key rules
    InvalidJson,     ///< payload/result/receipt is not acceptable JSON (RFC 8259 + RFC 8785 limits)
    PayloadTooLarge, ///< payload exceeds the configured byte limit
    InvalidArgument, ///< any other bad argument (unknown kind, negative lease, …)
    NotFound,        ///< no operation under that key in that namespace
    StaleLease,      ///< the fencing token is not the current one, or the lease is gone
    IllegalTransition, ///< the transition table forbids the requested state change
    LedgerUnavailable, ///< the ledger cannot be opened, reached or written (lost connection, full
                       ///< disk, read-only)
    LedgerBusy,        ///< the ledger is there but could not take the request now (locked, busy,
                       ///< serialization); try again
    SchemaMismatch,    ///< the ledger's schema is newer than this build, or missing
    Refused, ///< a guarded action's rule said no (role, four-eyes, reason, reused approval id)
    ProjectionMismatch, ///< a claim names another fingerprint projection than the operation's
                        ///< record
    InProgress,         ///< another holder is doing this work now (an open DLQ replay of the
                        ///< same dead letters): nothing was written; do not execute now
    Internal,           ///< a storage failure that is none of the above
};

/// The stable snake_case name of a code, e.g. "stale_lease".
const char *errorCodeName(ErrorCode code);

/// True for the codes that waiting may cure (LedgerUnavailable, LedgerBusy): what a long-running
/// worker reconnects through instead of ending.
bool isLedgerOutage(ErrorCode code);

/// A refused request. Nothing was written when this is thrown.
class Error final : public std::runtime_error
{
public:
    Error(ErrorCode code, const std::string &message) : std::runtime_error(message), m_code(code) {}
    ErrorCode code() const { return m_code; }

private:
    ErrorCode m_code;
};

} // namespace idempo
