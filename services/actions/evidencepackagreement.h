// SPDX-License-Identifier: Apache-2.0
// EvidencePack::verify()'s last step: the pack's parts the chain does not hash, held against the
// operation's audit records, which it does.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ledgerstore.h"

namespace idempo::packrows {

/// Whether the pack's unhashed parts agree with its hashed audit records `mine` (in seq order):
/// the operation's state and version with the newest record's after-state, and every decision
/// the history or the approvals show with an audit record. Empty when they do; else what
/// disagrees. Throws std::runtime_error for a part without the members it must have.
std::string agreementProblem(const nlohmann::json &pack, const std::vector<AuditRecord> &mine);

} // namespace idempo::packrows
