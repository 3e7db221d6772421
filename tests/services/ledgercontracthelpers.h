// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "errorof.h"
#include "ledgerfixture.h"

namespace idempo::test {

/// The namespace the ledger suites' operations live in.
inline const std::string kNs = "default";

/// A claim by worker-a on `key` in kNs.
ClaimInput claimInput(const std::string &key, const std::string &payload = R"({"amount":100})",
                      ToolKind kind = ToolKind::ProtectedWrite);

/// Drives a fresh operation into `state` through the engine's public API; returns its record.
Operation reach(LedgerFixture &f, const std::string &key, OperationState state);

} // namespace idempo::test
