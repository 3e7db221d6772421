// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "actionoutcome.h"
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
    /// Stores the setting with its audit record. Throws Error(Refused) for what validate() finds.
    SettingOutcome execute();

private:
    LedgerStore &m_store;
    ActorIdentity m_actor;
    std::string m_name;
    std::string m_value;
    std::string m_reason;
};

} // namespace idempo
