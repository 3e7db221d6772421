// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include "operation.h"
#include "pgconnection.h"

namespace idempo {

// Rows of the shared ledger's tables as the PostgreSQL store reads them (postgresledgerstore.cpp,
// postgresledgeractions.cpp).

/// The columns of an operation in readOperation() order: those of idempo.operation_answer
/// (0007_ledger_functions.sql), which every function that answers an operation returns.
inline constexpr const char *kOperationColumns =
    "id, namespace, operation_key, run_id, step_id, target, tool_kind, state, payload, "
    "payload_fingerprint, fingerprint_fields, attempt, max_attempts, lease_owner, "
    "lease_expires_at_ms, fencing_token, next_attempt_at_ms, error_class, error_detail, result, "
    "receipt, created_at_ms, updated_at_ms, retention_expires_at_ms, operation_version, "
    "schema_version, value_minor, value_currency";
inline constexpr int kOperationColumnCount = 28;

/// The operation in columns column0 … column0 + 27 of `row`.
Operation readOperation(const PgResult &r, int row, int column0);

/// The history of (ns, key) on `c`, oldest first.
std::vector<OperationEvent> readHistory(PgConnection &c, const std::string &ns,
                                        const std::string &key);

} // namespace idempo
