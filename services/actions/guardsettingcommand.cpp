// SPDX-License-Identifier: Apache-2.0
#include "guardsettingcommand.h"

#include "approvecommand.h"
#include "error.h"
#include "money.h"
#include "runbudget.h"

namespace idempo {

GuardSettingCommand::GuardSettingCommand(LedgerStore &store, ActorIdentity actor, std::string name,
                                         std::string value, std::string reason)
    : m_store(store), m_actor(std::move(actor)), m_name(std::move(name)), m_value(std::move(value)),
      m_reason(std::move(reason))
{
}

std::vector<GuardSettingCommand::Problem> GuardSettingCommand::problems() const
{
    std::vector<Problem> found;
    if (!roleMay(m_actor.role, Capability::ChangeSettings))
        found.push_back(
            {ErrorCode::Refused, roleRefusal(m_actor.role, Capability::ChangeSettings)});
    std::string value;
    if (isRunBudgetSetting(m_name))
        value = runBudgetSettingProblem(m_name, m_value);
    else if (m_name == ReferenceRatesSetting) {
        if (!m_value.empty())
            ReferenceRates::parse(m_value, &value);
    } else if (m_name != FourEyesSetting)
        value = "unknown guard setting '" + m_name + "'";
    else if (!m_value.empty())
        value = thresholdProblem(m_value);
    if (!value.empty())
        found.push_back({ErrorCode::InvalidArgument, std::move(value)});
    if (m_reason.empty())
        found.push_back({ErrorCode::Refused, "a reason is required"});
    return found;
}

std::vector<std::string> GuardSettingCommand::validate()
{
    std::vector<std::string> messages;
    for (Problem &p : problems())
        messages.push_back(std::move(p.message));
    return messages;
}

ActionPreview GuardSettingCommand::describe()
{
    const auto previous = m_store.guardSetting(m_name);
    std::string sentence;
    if (isRunBudgetSetting(m_name))
        sentence = m_value.empty() ? "Give new runs no " + m_name + " limit"
                                   : "Give new runs " + m_name + " = " + m_value;
    else if (m_name == ReferenceRatesSetting)
        sentence = m_value.empty() ? "Drop the reference rates: the four-eyes threshold applies "
                                     "as written in every currency"
                                   : "State every amount in " + m_value.substr(0, 3) +
                                         " at the rates " + m_value;
    else
        sentence = m_value.empty() ? "Turn four-eyes approval off"
                                   : "Require two approvers above " + m_value;
    return {sentence,
            {{"name", m_name},
             {"value", m_value},
             {"previous", previous ? nlohmann::json(*previous) : nlohmann::json()}}};
}

SettingOutcome GuardSettingCommand::execute()
{
    if (const std::vector<Problem> found = problems(); !found.empty())
        throw Error(found.front().code, found.front().message);
    const std::optional<std::string> previous = m_store.guardSetting(m_name);
    const ActionResult result = m_store.applyAction({}, [&](const ActionState &) {
        ActionPlan plan;
        plan.setting = std::make_pair(m_name, m_value);
        AuditEntry audit;
        audit.who = m_actor.name;
        audit.role = m_actor.role;
        audit.action = "setting";
        audit.target = "setting:" + m_name;
        audit.reason = m_reason;
        audit.beforeState = canonicalText(previous ? nlohmann::json(*previous) : nlohmann::json());
        audit.afterState = canonicalText(m_value);
        plan.audit = audit;
        return plan;
    });
    return {m_name, m_value, previous, result.audit->seq};
}

} // namespace idempo
