// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "guardedaction.h"

namespace idempo {

// What each guarded action's describe() shows, as a value: read() takes the ActionPreview the
// command answered (its details in the shape its describe() documents), so that a confirmation
// dialog reads fields, never the preview's JSON keys. A field the details lack keeps its default.

/// ApproveCommand::describe().
struct ApprovalPreview
{
    /// One event of the operation's history.
    struct Event
    {
        std::string at;   ///< ISO 8601 UTC
        std::string from; ///< empty for the event that recorded the operation
        std::string to;
        int attempt = 0;
        std::string actor;
        std::string errorClass; ///< empty when the event recorded none
        std::string detail;
    };

    std::string sentence;
    std::string from; ///< the operation's state
    std::string to;   ///< the state the decision moves it to
    /// A second approver must confirm (the operation's value is above the four-eyes threshold).
    bool fourEyes = false;
    /// The ledger's reference_rates setting (money.h), when one is set.
    std::optional<std::string> referenceRates;
    /// What proves the effect so far: the receipt, else the error detail, as recorded (JSON text
    /// or words; empty when there is neither).
    std::string evidence;
    /// The operation's payload (null when it has none); unset when the preview names no operation.
    std::optional<nlohmann::json> payload;
    std::vector<Event> history;

    static ApprovalPreview read(const ActionPreview &preview);
};

/// ReconcileCommand::describe().
struct ReconcilePreview
{
    /// One operation of the set.
    struct Item
    {
        std::string key;
        std::string state;
        /// What the provider answered (a single reconcile only; null otherwise).
        nlohmann::json evidence;
        /// The state it moves to (a single reconcile only; unset when it stays).
        std::optional<std::string> to;
    };

    std::string sentence;
    std::int64_t count = 0;
    std::vector<Item> operations;

    static ReconcilePreview read(const ActionPreview &preview);
};

/// DlqReplayCommand::describe(): the dry run.
struct ReplayPreview
{
    /// One message of the frozen set, classified (ReplayItem).
    struct Item
    {
        std::int64_t msgId = 0;
        std::string ns;
        std::string key;
        std::string replayClass; ///< replayClassName()
        std::string detail;
        int generation = 0;
    };

    std::string sentence;
    std::string replayId;
    std::string queue;
    std::int64_t set = 0;   ///< ids in the frozen set
    std::int64_t count = 0; ///< messages the replay requeues: the count to type
    std::vector<std::int64_t> unknownIds;
    std::vector<std::int64_t> replayedBefore;
    /// Messages per class, every class named, in the order of their names.
    std::map<std::string, std::int64_t> byClass;
    std::vector<Item> items;

    static ReplayPreview read(const ActionPreview &preview);
};

/// RunActionCommand::describe().
struct RunActionPreview
{
    std::string sentence;
    nlohmann::json run; ///< the run record (runJson())
    std::string action; ///< RunActionCommand::kindName()
    bool fourEyes = false;
    std::string requestId;
    nlohmann::json after; ///< the run once the request applies (null when it would not)

    static RunActionPreview read(const ActionPreview &preview);
};

/// BulkCommand::describe().
struct BulkPreview
{
    /// One operation of the frozen set, as the run will find it.
    struct Target
    {
        std::string ns;
        std::string key;
        std::int64_t version = 0; ///< the version the run stands on
        std::string state;        ///< its state now ("missing" when it is gone)
        bool changed = false;     ///< moved since the set was frozen: skipped
        bool taken = true;        ///< false: in a state the action does not take (refused)
        bool alreadyDone = false; ///< this operator's earlier act answers it
    };

    std::string sentence;
    std::string action; ///< bulkActionName()
    std::int64_t count = 0;
    std::int64_t changed = 0;
    std::int64_t notTaken = 0;
    std::int64_t alreadyDone = 0;
    std::vector<Target> targets;

    static BulkPreview read(const ActionPreview &preview);
};

} // namespace idempo
