// SPDX-License-Identifier: Apache-2.0
#include "overviewsnapshot.h"

#include <algorithm>
#include <map>

#include "money.h"
#include "operationquery.h"

namespace idempo {

namespace {

/// Bounds per state, so the Overview stays cheap on a ledger with millions of records.
constexpr int SampleLimit = 5000;
constexpr int SuppressionScanLimit = 50'000;

} // namespace

OverviewSnapshot OverviewSnapshot::read(LedgerStore &store, MessageQueue *queues,
                                        std::int64_t suppressionCursor)
{
    OverviewSnapshot s;
    s.figures = LedgerFigures::read(store, {});
    s.nowMs = s.figures.metrics.nowMs;

    RunFilter halted;
    halted.state = RunState::Halted;
    halted.limit = HaltedLimit + 1;
    s.haltedRuns = store.listRuns(halted);
    if (s.haltedRuns.size() > static_cast<std::size_t>(HaltedLimit))
        s.haltedRuns.pop_back();
    std::stable_sort(s.haltedRuns.begin(), s.haltedRuns.end(),
                     [](const RunRecord &a, const RunRecord &b) {
                         return a.haltedAtMs.value_or(0) > b.haltedAtMs.value_or(0);
                     });

    OperationQuery waiting;
    waiting.states = {OperationState::ConfirmationRequired, OperationState::AwaitingApproval,
                      OperationState::UnknownOutcome};
    waiting.order = ListOrder::ValueDescending;
    for (Operation &op : waiting.page(store, KeysetPosition::start(), ValuableLimit)) {
        op.value = operationValue(op); // declared, else what its payload says (money.h)
        if (op.value)
            s.valuableWaiting.push_back(std::move(op));
    }
    s.referenceRates = store.guardSetting(ReferenceRatesSetting);

    std::map<ErrorClass, std::int64_t> failures;
    const std::int64_t windowStart = s.nowMs - std::int64_t{Minutes} * 60'000;
    for (OperationState state :
         {OperationState::FailedRetryable, OperationState::FailedTerminal,
          OperationState::UnknownOutcome, OperationState::ConfirmationRequired}) {
        ListFilter f;
        f.state = state;
        f.limit = SampleLimit;
        for (const Operation &op : store.list(f)) {
            if (op.errorClass)
                ++failures[*op.errorClass];
            if (op.attempt > 0 && op.errorClass && op.updatedAtMs >= windowStart) {
                const auto minute =
                    static_cast<std::size_t>((op.updatedAtMs - windowStart) / 60'000);
                ++s.retriesPerMinute[std::min<std::size_t>(minute, Minutes - 1)];
            }
        }
    }
    s.failuresByClass.assign(failures.begin(), failures.end());

    // Ids grow with creation, so each state's first record is its oldest.
    for (OperationState state :
         {OperationState::Received, OperationState::AwaitingApproval, OperationState::Dispatching,
          OperationState::FailedRetryable, OperationState::UnknownOutcome,
          OperationState::ConfirmationRequired}) {
        ListFilter f;
        f.state = state;
        f.limit = 1;
        const std::vector<Operation> oldest = store.list(f);
        if (!oldest.empty()) {
            const std::int64_t age = s.nowMs - oldest.front().createdAtMs;
            s.backlogAgeMs = std::max(s.backlogAgeMs.value_or(0), age);
        }
    }

    s.suppressionCursor = suppressionCursor;
    while (static_cast<int>(s.newSuppressionsAtMs.size()) < SuppressionScanLimit) {
        const std::vector<Suppression> batch = store.suppressions({}, s.suppressionCursor, 5000);
        for (const Suppression &sup : batch)
            s.newSuppressionsAtMs.push_back(sup.atMs);
        if (!batch.empty())
            s.suppressionCursor = batch.back().id;
        if (batch.size() < 5000)
            break;
    }

    if (queues) {
        s.hasQueues = true;
        for (const QueueInfo &q : queues->listQueues())
            if (!q.maxReads)
                s.dlqDepth += queues->metrics(q.name).length;
    }
    return s;
}

} // namespace idempo
