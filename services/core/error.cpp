// SPDX-License-Identifier: Apache-2.0
#include "error.h"

namespace idempo {

const char *errorCodeName(ErrorCode code)
{
    switch (code) {
    case ErrorCode::InvalidKey:
        return "invalid_key";
    case ErrorCode::InvalidJson:
        return "invalid_json";
    case ErrorCode::PayloadTooLarge:
        return "payload_too_large";
    case ErrorCode::InvalidArgument:
        return "invalid_argument";
    case ErrorCode::NotFound:
        return "not_found";
    case ErrorCode::StaleLease:
        return "stale_lease";
    case ErrorCode::IllegalTransition:
        return "illegal_transition";
    case ErrorCode::LedgerUnavailable:
        return "ledger_unavailable";
    case ErrorCode::LedgerBusy:
        return "ledger_busy";
    case ErrorCode::SchemaMismatch:
        return "schema_mismatch";
    case ErrorCode::Refused:
        return "refused";
    case ErrorCode::ProjectionMismatch:
        return "projection_mismatch";
    case ErrorCode::InProgress:
        return "in_progress";
    case ErrorCode::Internal:
        return "internal";
    }
    return "internal";
}

bool isLedgerOutage(ErrorCode code)
{
    return code == ErrorCode::LedgerUnavailable || code == ErrorCode::LedgerBusy;
}

} // namespace idempo
