// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "actionrecords.h"

namespace idempo {

/// What an audit record changed, in one line for people: "awaiting_approval → succeeded" for an
/// operation (the "state" of its before / after snapshots), "four_eyes_above: 1000.00 → 5000.00"
/// for a guard setting ("(none)" for an unset or emptied one); empty when the record holds
/// neither. Stored text in it is escaped (textescape.h). The console's Audit view and
/// `idempo audit list` both show this.
std::string auditChangeText(const AuditEntry &entry);

} // namespace idempo
