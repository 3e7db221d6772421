// SPDX-License-Identifier: Apache-2.0
#include "auditchange.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "textescape.h"

namespace idempo {

namespace {

constexpr std::string_view SettingPrefix = "setting:";

/// A setting snapshot is a JSON string, or null when the setting was unset.
std::string settingValue(const std::string &snapshot)
{
    const auto j = nlohmann::json::parse(snapshot, nullptr, false);
    if (j.is_string() && !j.get<std::string>().empty())
        return escapedText(j.get<std::string>());
    if (j.is_discarded() && !snapshot.empty())
        return escapedText(snapshot);
    return "(none)";
}

std::optional<std::string> stateOf(const std::string &snapshot)
{
    const auto j = nlohmann::json::parse(snapshot, nullptr, false);
    if (j.is_object() && j.contains("state") && j["state"].is_string())
        return escapedText(j["state"].get<std::string>());
    return std::nullopt;
}

} // namespace

std::string auditChangeText(const AuditEntry &entry)
{
    if (entry.action == "setting" && entry.target.starts_with(SettingPrefix))
        return escapedText(entry.target.substr(SettingPrefix.size())) + ": " +
               settingValue(entry.beforeState) + " → " + settingValue(entry.afterState);
    const std::optional<std::string> before = stateOf(entry.beforeState);
    const std::optional<std::string> after = stateOf(entry.afterState);
    if (!before && !after)
        return {};
    return before.value_or("·") + " → " + after.value_or("·");
}

} // namespace idempo
