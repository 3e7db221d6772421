// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "actionoutcome.h"
#include "error.h"
#include "guardedaction.h"
#include "ledgerstore.h"

namespace idempo {

/// Changes a guard setting stored in the ledger, so every console and CLI on it applies the
/// same rule: FourEyesSetting (approvecommand.h), a decimal amount in major units, or "" to
/// turn four-eyes off; the default budgets of new runs (runbudget.h, "" for no limit). Admins and
/// the owner only; audited like every guarded action.
class GuardSettingCommand final : public GuardedAction
{
public:
    GuardSettingCommand(LedgerStore &store, ActorIdentity actor, std::string name,
                        std::string value, std::string reason);

    std::vector<std::string> validate() override;
    ActionPreview describe() override;
    /// Stores the setting with its audit record. Throws what validate() finds first: Refused
    /// for the role and the reason, InvalidArgument for the name and the value (as
    /// idempo.set_guard_setting does).
    SettingOutcome execute();

private:
    struct Problem
    {
        ErrorCode code;
        std::string message;
    };
    std::vector<Problem> problems() const;

    LedgerStore &m_store;
    ActorIdentity m_actor;
    std::string m_name;
    std::string m_value;
    std::string m_reason;
};

} // namespace idempo
