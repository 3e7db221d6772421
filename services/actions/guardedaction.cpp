// SPDX-License-Identifier: Apache-2.0
#include "guardedaction.h"

#include "canonicaljson.h"

namespace idempo {
namespace {

const char *groupsFor(Capability capability)
{
    switch (capability) {
    case Capability::Approve:
        return "idempo_approver or idempo_admin";
    case Capability::Reconcile:
        return "idempo_operator or idempo_admin";
    case Capability::Replay:
    case Capability::ResumeRuns:
        return "idempo_operator or idempo_admin";
    case Capability::ChangeSettings:
        return "idempo_admin";
    }
    return "idempo_admin";
}

const char *verbFor(Capability capability)
{
    switch (capability) {
    case Capability::Approve:
        return "approve or reject operations";
    case Capability::Reconcile:
        return "reconcile operations";
    case Capability::Replay:
        return "replay dead letters";
    case Capability::ResumeRuns:
        return "resume runs or change their budgets";
    case Capability::ChangeSettings:
        return "change guard settings";
    }
    return "do this";
}

} // namespace

bool roleMay(const std::string &role, Capability capability)
{
    if (role == "owner" || role == "admin")
        return true;
    switch (capability) {
    case Capability::Approve:
        return role == "approver";
    case Capability::Reconcile:
    case Capability::Replay:
    case Capability::ResumeRuns:
        return role == "operator";
    case Capability::ChangeSettings:
        return false;
    }
    return false;
}

std::string roleRefusal(const std::string &role, Capability capability)
{
    return "role '" + role + "' may not " + verbFor(capability) + ": that needs " +
           groupsFor(capability);
}

std::string canonicalText(const nlohmann::json &value)
{
    return canonicalJson(value);
}

} // namespace idempo
