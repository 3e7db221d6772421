// SPDX-License-Identifier: Apache-2.0
#include "ledgercontracthelpers.h"

#include <stdexcept>

namespace idempo::test {

ClaimInput claimInput(const std::string &key, const std::string &payload, ToolKind kind)
{
    ClaimInput in;
    in.ns = kNs;
    in.key = key;
    in.payloadJson = payload;
    in.kind = kind;
    in.owner = "worker-a";
    return in;
}

Operation reach(LedgerFixture &f, const std::string &key, OperationState state)
{
    ClaimInput in = claimInput(key);
    Engine &e = f.engine();
    auto claimed = [&] {
        const ClaimResult r = e.claim(in);
        if (r.outcome != ClaimOutcome::Claimed)
            throw std::runtime_error("setup claim not claimed");
        return r.operation;
    };
    switch (state) {
    case OperationState::AwaitingApproval:
        in.requiresApproval = true;
        return e.claim(in).operation;
    case OperationState::Received: {
        in.requiresApproval = true;
        const Operation op = e.claim(in).operation;
        return f.store().transition({.ns = kNs,
                                     .key = key,
                                     .from = OperationState::AwaitingApproval,
                                     .fencingToken = op.fencingToken,
                                     .to = OperationState::Received,
                                     .actor = "approver"});
    }
    case OperationState::Dispatching:
        return claimed();
    case OperationState::Succeeded:
        return e.complete(kNs, key, claimed().fencingToken, R"({"ok":true})", "");
    case OperationState::FailedRetryable:
        return e.fail(kNs, key, claimed().fencingToken, ErrorClass::Transient, "503");
    case OperationState::UnknownOutcome:
        return e.fail(kNs, key, claimed().fencingToken, ErrorClass::UnknownOutcome, "timeout");
    case OperationState::ConfirmationRequired:
        in.maxAttempts = 1;
        return e.fail(kNs, key, claimed().fencingToken, ErrorClass::Transient, "503");
    case OperationState::FailedTerminal:
        return e.fail(kNs, key, claimed().fencingToken, ErrorClass::Validation, "bad account");
    }
    return {};
}

} // namespace idempo::test
