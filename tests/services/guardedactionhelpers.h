// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "actionrecords.h"
#include "ledgercontracthelpers.h"
#include "ledgerfixture.h"

namespace idempo::test {

/// The operator the guarded-action suites act as.
inline const ActorIdentity kOliver{"oliver", "operator"};

/// A refund claim by `owner` on `key` in kNs.
ClaimInput refundClaim(const std::string &key, const std::string &owner = "worker-a",
                       const std::string &payload = R"({"amount":1250.00,"currency":"EUR"})");

/// An operation in confirmation_required (one attempt, failed transiently).
Operation needingConfirmation(LedgerFixture &f, const std::string &key,
                              const std::string &owner = "worker-a");

} // namespace idempo::test
