// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "operation.h"

namespace idempo {

/// ISO 8601 UTC with milliseconds ("2026-11-29T12:00:00.000Z"), or null.
nlohmann::json timestampJson(std::optional<std::int64_t> ms);

/// An operation record as the CLI and the guarded actions show it (snake_case fields of
/// design.md; JSON-valued fields embedded as JSON, absent ones null).
nlohmann::json operationJson(const Operation &op);

nlohmann::json eventJson(const OperationEvent &event);

/// The CLI's claim answer: outcome, key, namespace, state, fencing_token, attempt,
/// lease_expires_at, retry_at (retry_later), result and error (replayed), operation.
nlohmann::json claimJson(const ClaimResult &result);

/// A budget_exhausted answer's figures: budget, used, limit, requested, detail (and currency
/// for spend, whose figures are minor units).
nlohmann::json exhaustionJson(const BudgetExhaustion &e);

/// A run record: state, budgets (null = no limit) and what is used, halt reason. Spend figures
/// are amounts as text ("100.00 EUR"); no progress in seconds.
nlohmann::json runJson(const RunRecord &run);

} // namespace idempo
