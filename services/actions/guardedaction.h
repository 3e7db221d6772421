// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actionrecords.h"

namespace idempo {

/// What a guarded action will do, for a confirmation dialog or `--dry-run`.
struct ActionPreview
{
    /// The consequence in one sentence, e.g. "Approve refund of 1,250.00 EUR to account DE44…";
    /// a dialog puts it on the OK button.
    std::string sentence;
    /// The structured preview: the operation, the evidence, what changes (shape per action).
    nlohmann::json details;
};

/// A person's change to what automation did (design.md "Guarded actions"): the one code path
/// of the console's dialogs and the CLI. Use: validate() → describe() (show it, default Cancel)
/// → execute(), which runs in one transaction with its audit record, or not at all. Each command
/// has its own execute(), returning its typed outcome (actionoutcome.h: toJson() for scripts,
/// text() for people); it throws Error(Refused) when a rule says no, Error(IllegalTransition |
/// StaleLease) when the operation moved, and the store's errors, and writes nothing then.
/// execute() checks everything again under the ledger's locks, so a stale dialog cannot apply
/// a decision the ledger no longer allows.
class GuardedAction
{
public:
    virtual ~GuardedAction() = default;

    /// Reads what the action needs and checks it; returns what is wrong, one sentence each
    /// (empty = may execute). Throws Error(LedgerUnavailable | Internal) on storage failure.
    virtual std::vector<std::string> validate() = 0;

    /// The consequence, after validate(). Throws Error(NotFound) when there is nothing to act on.
    virtual ActionPreview describe() = 0;
};

/// What a role may do (the roles of 0005_guarded_actions.sql; "owner" may do everything).
enum class Capability
{
    Approve,
    Reconcile,
    Replay,
    ResumeRuns, ///< resume a halted run, change a run's budgets
    ChangeSettings
};

/// True when an actor with `role` may use `capability`.
bool roleMay(const std::string &role, Capability capability);

/// Why `role` may not use `capability`, naming the groups that may; for disabled buttons too.
std::string roleRefusal(const std::string &role, Capability capability);

/// The canonical JSON text of `value` (RFC 8785).
std::string canonicalText(const nlohmann::json &value);

} // namespace idempo
